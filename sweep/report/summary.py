"""The summary table: per model team × dataset × split × method, accuracy (mean ± std over seeds and
a Wilson 95 % interval over all its episodes) over all items and over answered items, the unparsable
rate, tokens / calls / price-weighted cost per task — absolute and as % of Full-Debate (the fixed
clique) on the same (item, seed) pairs — the diagnostics' means, and the accuracy-cost Pareto front."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import polars as pl

from sweep.report.load import Results
from sweep.report.stats import mean_std, pareto_front, wilson

GROUP = ["team", "dataset", "split"]
PAIR = ["item_id", "seed"]  # within a group, two methods' episodes pair on these
DIAGNOSTICS = (
    "w2r",
    "r2w",
    "net",
    "acceptance",
    "cross_ans",
    "src_conf",
    "influence_entropy",
    "answer_entropy",
    "agreement",
)


def is_clique(key: str) -> bool:
    ident = json.loads(key)
    return ident.get("name") == "fixed" and (ident.get("args") or {}).get("topology") == "clique"


def reference_for(key: str, keys: list[str]) -> str | None:
    """The Full-Debate (clique) method a method's cost is compared with: the clique under the same
    protocol and rounds if the group has one, else the first clique of the group; None if none."""
    cliques = [k for k in keys if is_clique(k)]
    ident = json.loads(key)
    same = [
        k
        for k in cliques
        if json.loads(k).get("protocol") == ident.get("protocol")
        and json.loads(k).get("rounds") == ident.get("rounds")
    ]
    found = same or cliques
    return found[0] if found else None


def _per_seed(ep: pl.DataFrame) -> dict[str, tuple[list[Fraction], list[Fraction]]]:
    """method_key -> (accuracy per seed over all items, accuracy per seed over answered items), as
    exact fractions; a seed with no answered episode has no answered accuracy."""
    rows = (
        ep.group_by("method_key", "seed")
        .agg(
            n=pl.len(),
            correct=pl.col("correct").sum(),
            answered=pl.col("answered").sum(),
            correct_answered=pl.col("correct").filter(pl.col("answered")).sum(),
        )
        .sort("seed")
    )
    out: dict[str, tuple[list[Fraction], list[Fraction]]] = {}
    for key, _, n, k, answered, k_answered in rows.iter_rows():
        a, b = out.setdefault(key, ([], []))
        a.append(Fraction(k, n))
        if answered:
            b.append(Fraction(k_answered, answered))
    return out


def _totals(ep: pl.DataFrame) -> pl.DataFrame:
    diag = [
        pl.col(c).fill_nan(None).mean().alias(c) for c in DIAGNOSTICS if c in ep.columns
    ]  # NaN would poison a mean; null is skipped
    return ep.group_by("method_key").agg(
        pl.col("method_label").first(),
        *diag,
        episodes=pl.len(),
        items=pl.col("item_id").n_unique(),
        seeds=pl.col("seed").n_unique(),
        correct=pl.col("correct").sum(),
        answered=pl.col("answered").sum(),
        correct_answered=pl.col("correct").filter(pl.col("answered")).sum(),
        round0_accuracy=pl.col("round_correct").list.first().cast(pl.Float64).mean(),
        tokens_per_task=pl.col("tokens").mean(),
        calls_per_task=pl.col("calls").mean(),
        cost_per_task=pl.col("cost").mean(),
        parse_failures_per_task=pl.col("parse_failures").mean(),
    )


def _relative(ep: pl.DataFrame, key: str, ref: str | None) -> dict[str, Any]:
    """Tokens and cost as % of the reference on the (item, seed) pairs both have."""
    empty = {
        "reference": None,
        "paired_with_reference": 0,
        "tokens_pct_clique": None,
        "cost_pct_clique": None,
    }
    if ref is None:
        return empty
    mine = ep.filter(pl.col("method_key") == key).select(*PAIR, "tokens", "cost")
    theirs = ep.filter(pl.col("method_key") == ref).select(*PAIR, "tokens", "cost")
    both = mine.join(theirs, on=PAIR, suffix="_ref")
    row: dict[str, Any] = {**empty, "reference": ref, "paired_with_reference": both.height}
    for col in ("tokens", "cost"):
        denominator = float(both[f"{col}_ref"].sum()) if both.height else 0.0
        if denominator > 0:
            row[f"{col}_pct_clique"] = 100.0 * float(both[col].sum()) / denominator
    return row


def _group_rows(ep: pl.DataFrame, order: list[str], group: dict[str, Any]) -> list[dict[str, Any]]:
    seeds = _per_seed(ep)
    keys = [k for k in order if k in seeds]
    totals = {r["method_key"]: r for r in _totals(ep).iter_rows(named=True)}
    rows = []
    for key in keys:
        t = totals[key]
        acc_mean, acc_std = mean_std(seeds[key][0])
        ans_mean, ans_std = mean_std(seeds[key][1])
        ci, ci_ans = wilson(t["correct"], t["episodes"]), wilson(t["correct_answered"], t["answered"])
        rows.append(
            {
                **group,
                **t,
                "accuracy_mean": acc_mean,
                "accuracy_std": acc_std,
                "accuracy_lo": ci[0] if ci else None,
                "accuracy_hi": ci[1] if ci else None,
                "answered_accuracy_mean": ans_mean,
                "answered_accuracy_std": ans_std,
                "answered_accuracy_lo": ci_ans[0] if ci_ans else None,
                "answered_accuracy_hi": ci_ans[1] if ci_ans else None,
                "unparsable_rate": 1.0 - t["answered"] / t["episodes"],
                **_relative(ep, key, reference_for(key, keys)),
            }
        )
    _mark_pareto(rows)
    return rows


def _mark_pareto(rows: list[dict[str, Any]]) -> None:
    """The front on price-weighted cost when the group has prices, else on tokens per task."""
    priced = any((r["cost_per_task"] or 0) > 0 for r in rows)
    axis = "cost_per_task" if priced else "tokens_per_task"
    front = pareto_front([r[axis] for r in rows], [r["accuracy_mean"] for r in rows])
    for r, on in zip(rows, front, strict=True):
        r["pareto_axis"], r["pareto"] = axis, on


def summary_table(results: Results) -> pl.DataFrame:
    """One row per (team, dataset, split, method), groups sorted, methods in config order."""
    rows: list[dict[str, Any]] = []
    ep = results.episodes
    for group_values, frame in sorted(ep.group_by(GROUP), key=lambda g: tuple(map(str, g[0]))):
        group = dict(zip(GROUP, group_values, strict=True))
        rows += _group_rows(frame, results.order, group)
    return pl.DataFrame(rows, infer_schema_length=None)
