"""Paired comparisons: the exact McNemar test between every two methods of a (team, dataset, split)
on the (item, seed) pairs both ran — Holm-corrected within that family — with the Wilson interval of
the discordant win rate; and Spearman's correlation of the method rankings between any two
(team, dataset, split) columns. Pairs without overlap are listed as such, never averaged."""

from __future__ import annotations

import itertools
from typing import Any

import polars as pl

from sweep.report.load import Results
from sweep.report.stats import holm, mcnemar_exact, spearman, wilson
from sweep.report.summary import GROUP, PAIR


def _outcomes(ep: pl.DataFrame, key: str) -> pl.DataFrame:
    """(item, seed) -> correct for one method; a repeated pair (two sweeps of one team) keeps its first."""
    return ep.filter(pl.col("method_key") == key).select(*PAIR, "correct").unique(PAIR, keep="first")


def compare_pair(ep: pl.DataFrame, a: str, b: str) -> dict[str, Any]:
    """McNemar of method `a` against `b` on their shared (item, seed) pairs: b = a right & b wrong."""
    xa, xb = _outcomes(ep, a), _outcomes(ep, b)
    both = xa.join(xb, on=PAIR, suffix="_b")
    wins = int((both["correct"] & ~both["correct_b"]).sum())
    losses = int((~both["correct"] & both["correct_b"]).sum())
    n = both.height
    row: dict[str, Any] = {
        "a": a,
        "b": b,
        "paired": n,
        "only_a": xa.height - n,
        "only_b": xb.height - n,
        "a_accuracy": float(both["correct"].mean()) if n else None,  # type: ignore[arg-type]
        "b_accuracy": float(both["correct_b"].mean()) if n else None,  # type: ignore[arg-type]
        "b_count": wins,
        "c_count": losses,
        "p": None,
        "win_rate": None,
        "win_lo": None,
        "win_hi": None,
        "note": "no overlap" if n == 0 else "",
    }
    if n:
        row["p"] = mcnemar_exact(wins, losses).p
        ci = wilson(wins, wins + losses)
        if ci is not None:
            row["win_rate"], (row["win_lo"], row["win_hi"]) = wins / (wins + losses), ci
    return row


def mcnemar_table(results: Results) -> pl.DataFrame:
    """Every unordered pair of methods within each (team, dataset, split), in config order, with the
    Holm-adjusted p-value over that group's comparisons (`p_holm`)."""
    rows: list[dict[str, Any]] = []
    ep = results.episodes
    for values, frame in sorted(ep.group_by(GROUP), key=lambda g: tuple(map(str, g[0]))):
        present = set(frame["method_key"].unique().to_list())
        keys = [k for k in results.order if k in present]
        group = dict(zip(GROUP, values, strict=True))
        pairs = [{**group, **compare_pair(frame, a, b)} for a, b in itertools.combinations(keys, 2)]
        for row, adjusted in zip(pairs, holm([r["p"] for r in pairs]), strict=True):
            row["p_holm"] = adjusted
            row["a_label"], row["b_label"] = results.label(row["a"]), results.label(row["b"])
        rows += pairs
    columns = [
        *GROUP,
        "a_label",
        "b_label",
        "paired",
        "only_a",
        "only_b",
        "a_accuracy",
        "b_accuracy",
        "b_count",
        "c_count",
        "p",
        "p_holm",
        "win_rate",
        "win_lo",
        "win_hi",
        "note",
        "a",
        "b",
    ]
    if not rows:
        return pl.DataFrame(schema={c: pl.String for c in columns})
    return pl.DataFrame(rows, infer_schema_length=None).select(columns)


def spearman_table(summary: pl.DataFrame) -> pl.DataFrame:
    """Spearman's rho between the method rankings (by mean accuracy) of every two columns (team,
    dataset, split) over the methods both have."""
    columns: dict[tuple[str, ...], dict[str, float]] = {}
    for row in summary.iter_rows(named=True):
        col = tuple(str(row[g]) for g in GROUP)
        columns.setdefault(col, {})[row["method_key"]] = row["accuracy_mean"]
    rows = []
    for (ca, xa), (cb, xb) in itertools.combinations(sorted(columns.items()), 2):
        common = [k for k in xa if k in xb]
        rho = spearman([xa[k] for k in common], [xb[k] for k in common])
        rows.append(
            {
                "a": "/".join(ca),
                "b": "/".join(cb),
                "methods": len(common),
                "rho": rho,
                "note": "" if rho is not None else "fewer than 2 shared methods or a constant ranking",
            }
        )
    schema = {"a": pl.String, "b": pl.String, "methods": pl.Int64, "rho": pl.Float64, "note": pl.String}
    return pl.DataFrame(rows, schema=schema)
