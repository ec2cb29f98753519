"""One episode as the viewer shows it: rounds × agents with every turn, the graph of each round (who
saw whom), the decisions of learned routers, the vote after each round against the gold, where each
agent's answer changed from the round before (`answer_changes`), tokens and cost. Reads only the
episode's own part files. Model text is hostile: every text field is cut to a bound here and rendered
as text (never as HTML) by the page."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

MAX_TEXT = 20_000  # characters of one turn's text or reasoning sent to the page
MAX_DECISION = 200_000  # characters of a router's decision record parsed as JSON
PHASE_ORDER = {"initial": 0, "critique": 1, "update": 2, "revise": 3}
SEEING_PHASES = ("update", "revise")  # sources of these turns are whom the agent saw
LIST_COLUMNS = ("active", "edge_src", "edge_tgt", "edge_weight", "max_tokens")
TURN_COLUMNS = ("episode_id", "round", "phase", "agent")  # those read without .get()


class PartError(ValueError):
    """A turns/rounds part file of an opened episode cannot be read (damaged, truncated, another
    schema); the message names the file, and the viewer answers it as an error, not a crash."""


def _rows(path: Path, episode_id: str, needs: tuple[str, ...]) -> list[dict[str, Any]]:
    """The rows of one episode in one part file (none if the part has no such file); PartError when
    the file cannot be read or lacks a column in `needs`."""
    where = f"{path.parent.name}/{path.name} in {path.parent.parent}"
    if not os.path.lexists(path):
        return []  # this part wrote no such rows
    if path.is_symlink() or not path.is_file():  # a dir or a link in its place: not ours to follow
        raise PartError(f"{where} is not a regular file; move it aside and rerun the sweep to rewrite it")
    try:
        scan = pl.scan_parquet(path)
        missing = [c for c in needs if c not in scan.collect_schema().names()]
        if not missing:
            return scan.filter(pl.col("episode_id") == episode_id).collect().to_dicts()
    # polars' Rust side panics on some malformed files (a BaseException), not only PolarsError.
    except (OSError, pl.exceptions.PolarsError, pl.exceptions.PanicException) as e:
        reason = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        raise PartError(f"{where} cannot be read ({reason}); restore the file from a copy") from None
    raise PartError(f"{where} lacks column(s) {', '.join(missing)}; it was not written by this sweep")


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _bounded(text: str | None) -> tuple[str | None, bool]:
    if text is None or len(text) <= MAX_TEXT:
        return text, False
    return text[:MAX_TEXT], True


class _Grades:
    """Correctness of an answer against the gold, by the benchmark's grader, asked once per answer."""

    def __init__(self, dataset: str, gold: str) -> None:
        self.dataset, self.gold = dataset, gold
        self._seen: dict[str, bool | None] = {}

    def __call__(self, answer: str | None) -> bool | None:
        if answer is None:
            return None
        if answer not in self._seen:
            from data import grade

            try:
                self._seen[answer] = grade(self.dataset, answer, self.gold) == "correct"
            except (KeyError, ValueError):  # a benchmark this checkout does not know
                self._seen[answer] = None
        return self._seen[answer]


def _turn(t: dict[str, Any], grades: _Grades) -> dict[str, Any]:
    text, cut_text = _bounded(t.get("text"))
    reasoning, cut_reasoning = _bounded(t.get("reasoning"))
    return {
        "phase": t["phase"],
        "agent": t["agent"],
        "model": t.get("model"),
        "answer": t.get("answer"),
        "correct": grades(t.get("answer")),
        "confidence": t.get("confidence"),
        "reasoning": reasoning,
        "text": text,
        "truncated": cut_text or cut_reasoning,
        "parsed": t.get("parsed"),
        "prompt_tokens": t.get("prompt_tokens"),
        "completion_tokens": t.get("completion_tokens"),
        "cache_hit": t.get("cache_hit"),
        "sources": t.get("sources") or [],
        "verdicts": t.get("verdicts") or [],
        "latency_s": t.get("latency_s"),
    }


def _decision(raw: Any) -> Any:
    if raw is None:
        return None
    text = str(raw)
    if len(text) > MAX_DECISION:
        return {"unreadable": f"decision record of {len(text)} characters, over the viewer's bound"}
    try:
        return json.loads(text)
    except ValueError:
        return {"unreadable": text[:2000]}


def _graph(rnd: dict[str, Any] | None, turns: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Edges s → t (t saw s) of a round: the stored graph where the rounds row has one, else the
    sources of the round's update/revise turns."""
    if rnd and rnd.get("edge_src") is not None and rnd.get("edge_tgt") is not None:
        weights = rnd.get("edge_weight") or [None] * len(rnd["edge_src"])
        stored = zip(rnd["edge_src"], rnd["edge_tgt"], weights, strict=False)
        return [{"source": s, "target": t, "weight": w} for s, t, w in stored], "rounds"
    seen = {(s, t["agent"]) for t in turns if t["phase"] in SEEING_PHASES for s in t["sources"]}
    return [{"source": s, "target": t, "weight": None} for s, t in sorted(seen)], "turns"


def _round(
    r: int, row: dict[str, Any], rnd: dict[str, Any] | None, turns: list[dict[str, Any]]
) -> dict[str, Any]:
    edges, graph_from = _graph(rnd, turns)
    active = rnd.get("active") if rnd else None
    agents = [[t for t in turns if t["agent"] == a] for a in range(row["n_agents"])]
    answers, correct = row.get("round_answers") or [], row.get("round_correct") or []
    return {
        "round": r,
        "vote": answers[r] if r < len(answers) else None,
        "vote_correct": correct[r] if r < len(correct) else None,
        "edges": edges,
        "graph_from": graph_from,
        "active": active if active is not None else sorted({t["agent"] for t in turns}),
        "max_tokens": rnd.get("max_tokens") if rnd else None,
        "decision": _decision(rnd.get("decision")) if rnd else None,
        "diagnostics": {
            k: v for k, v in (rnd or {}).items() if k not in (*LIST_COLUMNS, "decision", "episode_id")
        },
        "tokens": sum((t["prompt_tokens"] or 0) + (t["completion_tokens"] or 0) for t in turns),
        "calls": len(turns),
        "agents": agents,
    }


def _kind(before: bool | None, after: bool | None) -> str:
    if before is None or after is None:
        return "other"  # a benchmark this checkout cannot grade
    return {(False, True): "w2r", (True, False): "r2w", (True, True): "r2r"}.get((before, after), "w2w")


def answer_changes(rounds: list[dict[str, Any]]) -> list[list[dict[str, Any] | None]]:
    """Per round, per agent: where the agent's answer at the end of the round differs from its answer
    at the end of the round before, {from, to, from_correct, to_correct, kind} (kind w2r, r2w, w2w,
    r2r where two answers both grade right, or other); else None. An agent's answer is that of its
    last turn that stated one, critiques left out (a critique is about a peer's answer): an agent that
    made no call, or whose reply could not be read, keeps the answer it had."""
    held: dict[int, dict[str, Any]] = {}
    out = []
    for r in rounds:
        marks: list[dict[str, Any] | None] = []
        for a, turns in enumerate(r["agents"]):
            said = [t for t in turns if t["phase"] != "critique" and t["answer"] is not None]
            before, now = held.get(a), said[-1] if said else None
            change = None
            if before is not None and now is not None and now["answer"] != before["answer"]:
                change = {
                    "from": before["answer"],
                    "to": now["answer"],
                    "from_correct": before["correct"],
                    "to_correct": now["correct"],
                    "kind": _kind(before["correct"], now["correct"]),
                }
            marks.append(change)
            if now is not None:
                held[a] = now
        out.append(marks)
    return out


def episode_detail(row: dict[str, Any], out: Path) -> dict[str, Any]:
    """The page's data for the episode `row` (an index row of `ViewData`) stored under `out`."""
    eid, part = row["episode_id"], row["_part"]
    grades = _Grades(row["dataset"], row["gold"])
    raw = sorted(
        _rows(out / "turns" / part, eid, TURN_COLUMNS),
        key=lambda t: (t["round"], PHASE_ORDER.get(t["phase"], 9), t["agent"]),
    )
    by_round: dict[int, list[dict[str, Any]]] = {}
    for t in raw:
        by_round.setdefault(int(t["round"]), []).append(_turn(t, grades))
    rounds = {int(x["round"]): x for x in _rows(out / "rounds" / part, eid, ("episode_id", "round"))}
    n_rounds = max([len(row.get("round_correct") or []), *(r + 1 for r in by_round)], default=0)
    episode = {k: _plain(v) for k, v in row.items() if not k.startswith("_") and k != "method_key"}
    episode["method_spec"] = json.loads(row["method_spec"])
    shown = [_round(r, row, rounds.get(r), by_round.get(r, [])) for r in range(n_rounds)]
    for r, marks in zip(shown, answer_changes(shown), strict=True):
        r["changes"] = marks
    return {"episode": episode, "rounds": shown}
