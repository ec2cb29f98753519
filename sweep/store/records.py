"""Finished episodes as rows of the results contract (`sweep.store.schema`), and the recorder that the
scheduler hands each finished episode to: it builds the rows and buffers them for Parquet."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

from data.grading.graders import AnyGrader, grader_for
from data.grading.outcome import AMBIGUOUS
from data.types import Sample
from debate.diagnostics import Diagnostics
from debate.parsing import parse_reply
from debate.state import Turn
from debate.trajectory import EpisodeResult
from sweep.run.plan import EpisodeTask, method_spec_json
from sweep.store.results import BufferedWriter
from sweep.store.schema import TURN_SCHEMA


def episode_row(
    task: EpisodeTask, result: EpisodeResult, sweep_id: str, simulated: bool, diagnostics: Diagnostics
) -> dict[str, Any]:
    """One row of the `episodes/` table (the README's results contract), with the diagnostics summary."""
    g = task.group
    return {
        "episode_id": task.episode_id,
        "sweep_id": sweep_id,
        "method": g.method.spec.name,
        "method_spec": method_spec_json(g),
        "method_label": g.method.label,
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
        "ambiguous": ambiguous_replies(task.sample, result.turns),
        "simulated": simulated,
        "latency_s": result.latency_s,
        "finished_at": datetime.now(UTC),
        **diagnostics.summary,
    }


def ambiguous_replies(sample: Sample, turns: Iterable[Turn]) -> int:
    """How many of the episode's unparsed replies hedged between answers ('B or C', two 'Answer:' lines
    that disagree): the JSON answer field, or else the whole reply, read again by the item's grader — only
    for the few turns that failed to parse."""
    grader: AnyGrader | None = None
    count = 0
    for t in turns:
        if t.parsed or t.phase == "critique":
            continue
        reply = parse_reply(t.text)
        said = reply.answer if reply.source == "json" else t.text
        if said is None:
            continue
        grader = grader or grader_for(sample)
        count += grader.read(said)[1] == AMBIGUOUS
    return count


def _verdicts(turn: Turn) -> list[str | None]:
    if turn.phase != "revise":
        return []
    given = turn.extra.get("verdicts", {})
    return [given.get(s) for s in turn.sources]


# Every other TURN_SCHEMA column is a Turn field of the same name, and every Turn field but `extra` is
# a column: a row starts as a copy of the Turn's fields (one C-level copy, not a getattr per column).
_TURN_FIELDS = [n for n in TURN_SCHEMA.names if n not in ("episode_id", "sources", "verdicts")]
if {f.name for f in fields(Turn)} != {*_TURN_FIELDS, "sources", "extra"}:
    raise ImportError(
        "sweep.store.records: Turn's fields and TURN_SCHEMA's columns no longer match; update both"
    )


def turn_rows(episode_id: str, turns: Iterable[Turn]) -> list[dict[str, Any]]:
    """`Turn`s as rows of TURN_SCHEMA (of `extra`, only the verdicts are stored)."""
    rows = []
    for t in turns:
        row = {"episode_id": episode_id, **vars(t), "sources": list(t.sources), "verdicts": _verdicts(t)}
        del row["extra"]
        rows.append(row)
    return rows


_NO_DECISION = {"edge_src": None, "edge_tgt": None, "edge_weight": None, "max_tokens": None, "decision": None}


def round_rows(
    episode_id: str, diagnostics: Diagnostics, result: EpisodeResult | None = None
) -> list[dict[str, Any]]:
    """The per-round diagnostics as rows of ROUND_SCHEMA, with each round's decision and cost when
    the episode's trajectory is given."""
    rows = [{"episode_id": episode_id, **row} for row in diagnostics.round_rows()]
    if result is None:
        return rows
    for row, rec in zip(rows, result.trajectory, strict=True):
        decided = _NO_DECISION if rec.decision is None else rec.decision.row()
        row.update(decided, active=list(rec.active), cost=rec.cost)
    return rows


class Recorder:
    """The scheduler's episode callback: rows of each finished episode into `writer`; `on_row` sees
    each stored episode row too (a study keeps them to score its trials). Episodes whose rows cannot
    be stored end up in `writer.failed`."""

    def __init__(
        self,
        writer: BufferedWriter,
        sweep_id: str,
        simulated_models: set[str],
        on_row: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.writer, self.sweep_id, self.simulated, self.on_row = writer, sweep_id, simulated_models, on_row

    def __call__(self, task: EpisodeTask, result: EpisodeResult, diagnostics: Diagnostics) -> None:
        simulated = all(m in self.simulated for m in task.group.seats)
        row = episode_row(task, result, self.sweep_id, simulated, diagnostics)
        stored = self.writer.add(
            row, turn_rows(task.episode_id, result.turns), round_rows(task.episode_id, diagnostics, result)
        )
        if stored and self.on_row is not None:  # an episode that cannot be stored is a failed one
            self.on_row(row)
