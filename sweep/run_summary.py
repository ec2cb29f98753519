"""The table `sweep run` ends with: per (method, dataset), the episodes stored, their accuracy, and
tokens, calls and cost per task."""

from __future__ import annotations

from typing import Any

import polars as pl
from rich.table import Table

from sweep.plan import Plan
from sweep.results import ResultStore

_SUMMED = ("correct", "prompt_tokens", "completion_tokens", "calls", "cost", "parse_failures", "cache_hits")


def summarize(plan: Plan, store: ResultStore) -> list[dict[str, Any]]:
    """Per (method spec, dataset): episodes, accuracy (mean over seeds' episodes), tokens and calls per task."""
    keys: dict[tuple[str, str], int] = {}  # in plan order
    ids: list[str] = []
    which: list[int] = []
    for g in plan.groups:
        k = keys.setdefault((g.method.label, f"{g.dataset.name}/{g.dataset.split}"), len(keys))
        for s in g.samples:
            ids.append(g.episode_id(s))
            which.append(k)
    planned = pl.DataFrame({"episode_id": ids, "_key": which}, schema={"episode_id": pl.String, "_key": pl.Int64})
    mine = planned.join(store.episodes(_SUMMED), on="episode_id")
    agg = mine.group_by("_key").agg(
        pl.len().alias("episodes"),
        pl.col("correct").mean().alias("accuracy"),
        (pl.col("prompt_tokens") + pl.col("completion_tokens")).mean().alias("tokens/task"),
        pl.col("calls").mean().alias("calls/task"),
        pl.col("cost").mean().alias("cost/task"),
        pl.col("parse_failures").sum().alias("parse_fail"),
        pl.col("cache_hits").sum().alias("cache_hits"),
    )
    by_key = {r["_key"]: r for r in agg.to_dicts()}
    rows = []
    for (method, dataset), k in keys.items():
        if k in by_key:
            r = by_key[k]
            rows.append(
                {
                    "method": method,
                    "dataset": dataset,
                    "episodes": int(r["episodes"]),
                    "accuracy": float(r["accuracy"]),
                    "tokens/task": float(r["tokens/task"]),
                    "calls/task": float(r["calls/task"]),
                    "cost/task": float(r["cost/task"]),
                    "parse_fail": int(r["parse_fail"]),
                    "cache_hits": int(r["cache_hits"]),
                }
            )
    return rows


def summary_table(rows: list[dict[str, Any]], simulated: bool) -> Table:
    title = "results (simulated agents)" if simulated else "results"
    table = Table(title=title)
    for col in (
        "method",
        "dataset",
        "episodes",
        "accuracy",
        "tokens/task",
        "calls/task",
        "cost/task",
        "parse_fail",
        "cache_hits",
    ):
        table.add_column(col, justify="left" if col in ("method", "dataset") else "right")
    for r in rows:
        table.add_row(
            r["method"],
            r["dataset"],
            str(r["episodes"]),
            f"{r['accuracy']:.3f}",
            f"{r['tokens/task']:.0f}",
            f"{r['calls/task']:.1f}",
            f"{r['cost/task']:.6f}",
            str(r["parse_fail"]),
            str(r["cache_hits"]),
        )
    return table
