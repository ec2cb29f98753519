"""Runs many episodes at once as asyncio tasks on the driver, each awaiting the shared engines, and
hands every finished episode to a callback straight away (`sweep.store.records.Recorder` writes it to
Parquet; a study also scores its trial with it; a trainer collects the trajectory).

A fixed pool of `concurrency` workers pulls episodes from the (lazy) task iterator: memory holds the
episodes in flight, never one coroutine per episode of the sweep."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from dataclasses import dataclass, field

from data.grading.graders import grader_for
from debate.diagnostics import Diagnostics, diagnose_episode
from debate.episode import Agent, EpisodeResult, run_episode
from sweep.run.plan import EpisodeTask

OnEpisode = Callable[[EpisodeTask, EpisodeResult, Diagnostics], None]

# The cyclic GC's thresholds while episodes run. At CPython's (700, 10, 10) a simulated sweep spent
# ~7 % of its time collecting (gc callbacks: 1.96 s of a 28 s, 400-item run; 0.45 s with these):
# every call allocates many short-lived containers, and a full collection walked every object the
# imports made. Few of the episode's objects form cycles, so collecting less often holds little more.
EPISODE_GC_THRESHOLD = (10_000, 10, 10)
_tuned = 0  # run_tasks calls in progress (a study may run several at once)
_untuned = gc.get_threshold()  # the thresholds to go back to: those before the first one came in


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """While inside: what exists now is frozen out of the GC's view (modules, plan, config: never
    garbage) and collections run at `EPISODE_GC_THRESHOLD`; both undone when the last one leaves."""
    global _tuned, _untuned
    if _tuned == 0:
        _untuned = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(*EPISODE_GC_THRESHOLD)
    _tuned += 1
    try:
        yield
    finally:
        _tuned -= 1
        if _tuned == 0:
            gc.set_threshold(*_untuned)
            gc.unfreeze()


@dataclass
class CallMeter:
    """Model calls as episodes issue them (counted by `sweep.engines.pool.MeteredBackend`): answered, in
    flight, and the tokens of those answered. Episodes' own totals (`RunStats`) move only when an
    episode ends, which on a slow engine is minutes after its first call."""

    done: int = 0
    in_flight: int = 0
    tokens: int = 0


class FatalError(RuntimeError):
    """An error that stops the whole run (an engine that cannot start), not just one episode."""


@dataclass
class RunStats:
    """Running totals, shown by the progress bar and the summary."""

    total: int
    done: int = 0
    correct: int = 0
    tokens: int = 0
    calls: int = 0
    cache_hits: int = 0
    skipped: int = 0  # claimed by another driver when their turn came
    failures: list[str] = field(default_factory=list)
    wall_s: float = 0.0  # from the first episode's start to the last one's end
    # An upper bound on the calls of the episodes not yet ended here (not finished, failed or claimed
    # by another driver), and the bound of those finished: `calls / finished_bound` is the share of
    # its bound a finished episode used, for the time left.
    calls_bound: int = 0
    finished_bound: int = 0

    @property
    def accuracy(self) -> float:
        return self.correct / self.done if self.done else 0.0


async def run_one(task: EpisodeTask, agents: Mapping[str, Agent]) -> tuple[EpisodeResult, Diagnostics]:
    """One episode of the plan on the given agents, and its debate diagnostics."""
    g = task.group
    team = g.team(agents)
    result = await run_episode(
        g.method, team, task.sample, grader_for(task.sample), g.seed, g.rounds, g.dataset.name
    )
    return result, diagnose_episode(result)


async def run_tasks(
    tasks: Iterable[EpisodeTask],
    agents: Mapping[str, Agent],
    on_episode: OnEpisode,
    concurrency: int,
    on_progress: Callable[[RunStats], None] = lambda s: None,
    total: int | None = None,
    claim: Callable[[EpisodeTask], bool] | None = None,
    calls_bound: int = 0,
) -> RunStats:
    """Run `tasks` with at most `concurrency` episodes in flight, calling `on_episode` for each one
    that finishes. A failing episode is recorded and skipped (nothing is handed on, so a rerun
    retries it); the others go on. `claim`, asked as an episode is about to start, may say another
    driver has it: the episode is then skipped (counted in `skipped`). `on_progress` gets the live
    totals at the start and as each episode finishes. `total` (for the progress bar) defaults to
    `len(tasks)`; `calls_bound`, the tasks' bound on calls (`Group.calls`), goes down
    by an episode's bound as it ends."""
    if total is None:
        total = len(tasks) if isinstance(tasks, Sized) else 0
    stats = RunStats(total=total, calls_bound=calls_bound)

    def bound(task: EpisodeTask) -> int:
        return task.group.calls() if calls_bound else 0

    pending = iter(tasks)

    def record(task: EpisodeTask, result: EpisodeResult, diagnostics: Diagnostics) -> None:
        on_episode(task, result, diagnostics)
        stats.done += 1
        stats.correct += int(result.correct)
        stats.tokens += result.prompt_tokens + result.completion_tokens
        stats.calls += result.calls
        stats.finished_bound += bound(task)
        on_progress(stats)

    async def worker() -> None:
        # Workers share one iterator; `next` never awaits, so no two workers take the same task.
        for task in pending:
            if claim is not None and not claim(task):
                stats.skipped += 1
                stats.calls_bound -= bound(task)
                continue
            try:
                result, diagnostics = await run_one(task, agents)
            except FatalError:
                raise
            except Exception as e:  # an engine error must not take the other episodes down
                stats.failures.append(f"{task.episode_id}: {type(e).__name__}: {e}")
                stats.calls_bound -= bound(task)
                if len(stats.failures) == 1:
                    traceback.print_exc()
                continue
            stats.calls_bound -= bound(task)
            record(task, result, diagnostics)

    started = time.perf_counter()
    on_progress(stats)  # the live totals, before any episode ends
    with fewer_collections():
        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    stats.wall_s = time.perf_counter() - started
    return stats
