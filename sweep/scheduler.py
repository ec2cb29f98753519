"""Runs many episodes at once as asyncio tasks on the driver, each awaiting the shared engine actors,
and hands every finished episode to the results writer straight away."""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from data.graders import grader_for
from data.types import Grader, Sample
from debate.diagnostics import Diagnostics, diagnose, influence_rule
from debate.episode import Agent, EpisodeResult, run_episode
from sweep.plan import EpisodeTask, method_spec_json
from sweep.results import BufferedWriter, round_rows, turn_rows


@dataclass
class RunStats:
    """Running totals, shown by the progress bar and the summary."""

    total: int
    done: int = 0
    correct: int = 0
    tokens: int = 0
    calls: int = 0
    cache_hits: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        return self.correct / self.done if self.done else 0.0


def episode_diagnostics(
    task: EpisodeTask, result: EpisodeResult, grader: Grader | None = None
) -> Diagnostics:
    """The debate diagnostics of a finished episode (debate.diagnostics), graded against its gold."""
    sample: Sample = task.sample
    grade = grader or grader_for(sample)
    rule = influence_rule(task.group.method.router)
    return diagnose(result.state, lambda a: grade.grade(a, sample.gold) == "correct", rule)


def episode_row(
    task: EpisodeTask,
    result: EpisodeResult,
    sweep_id: str,
    simulated: bool,
    diagnostics: Diagnostics | None = None,
) -> dict[str, Any]:
    """One row of the `episodes/` table (the README's results contract), with the diagnostics summary."""
    g = task.group
    diagnostics = diagnostics or episode_diagnostics(task, result)
    return {
        "episode_id": task.episode_id,
        "sweep_id": sweep_id,
        "method": g.method.spec.name,
        "method_spec": method_spec_json(g),
        "dataset": g.dataset.name,
        "split": g.dataset.split,
        "item_id": task.sample.id,
        "seed": g.seed,
        "n_agents": len(g.seats),
        "rounds": g.rounds,
        "models": list(g.seats),
        "final_answer": result.final_answer,
        "gold": task.sample.gold,
        "correct": result.correct,
        "round_correct": result.round_correct,
        "round_answers": result.round_answers,
        "calls": result.calls,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "cached_tokens": result.cached_tokens,
        "cache_hits": result.cache_hits,
        "cost": result.cost,
        "parse_failures": result.parse_failures,
        "simulated": simulated,
        "latency_s": result.latency_s,
        "finished_at": datetime.now(UTC),
        **diagnostics.summary,
    }


async def run_tasks(
    tasks: Sequence[EpisodeTask],
    agents: Mapping[str, Agent],
    writer: BufferedWriter,
    sweep_id: str,
    simulated_models: set[str],
    concurrency: int,
    on_progress: Callable[[RunStats], None] = lambda s: None,
) -> RunStats:
    """Run `tasks` with at most `concurrency` episodes in flight. A failing episode is recorded and
    skipped (its row is not written, so a rerun retries it); the others go on."""
    stats = RunStats(total=len(tasks))
    sem = asyncio.Semaphore(concurrency)

    async def one(task: EpisodeTask) -> None:
        g = task.group
        team = [agents[m] for m in g.seats]
        async with sem:
            try:
                grader = grader_for(task.sample)
                result = await run_episode(
                    g.method, team, task.sample, grader, g.seed, g.rounds, g.dataset.name
                )
                diagnostics = episode_diagnostics(task, result, grader)
            except Exception as e:  # an engine error must not take the other episodes down
                stats.failures.append(f"{task.episode_id}: {type(e).__name__}: {e}")
                if len(stats.failures) == 1:
                    traceback.print_exc()
                return
        simulated = all(m in simulated_models for m in g.seats)
        writer.add(
            episode_row(task, result, sweep_id, simulated, diagnostics),
            turn_rows(task.episode_id, result.turns),
            round_rows(task.episode_id, diagnostics),
        )
        stats.done += 1
        stats.correct += int(result.correct)
        stats.tokens += result.prompt_tokens + result.completion_tokens
        stats.calls += result.calls
        on_progress(stats)

    await asyncio.gather(*(one(t) for t in tasks))
    writer.flush()
    return stats
