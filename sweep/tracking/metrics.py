"""Metrics of a group of episode rows: the scalars MLflow and studies log, accuracy after each round,
and the debate diagnostics averaged over episodes and per round."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

import polars as pl


def group_metrics(episodes: pl.DataFrame) -> tuple[dict[str, float], list[float]]:
    """Scalar metrics of a group's episode rows, and the accuracy after each round (index = round)."""
    n = episodes.height
    calls = int(episodes["calls"].sum())
    prompt = int(episodes["prompt_tokens"].sum())
    completion = int(episodes["completion_tokens"].sum())
    failures = int(episodes["parse_failures"].sum())
    cached = int(episodes["cached_tokens"].sum())
    scalars = {
        "accuracy": int(episodes["correct"].sum()) / n,
        "n_episodes": float(n),
        "calls_per_task": calls / n,
        "prompt_tokens_per_task": prompt / n,
        "completion_tokens_per_task": completion / n,
        "tokens_per_task": (prompt + completion) / n,
        "cached_tokens_per_task": cached / n,
        # the engine's prefix-cache hits over every prompt token (what bench/prefix_reuse.py prints)
        "prefix_cached_share": cached / prompt if prompt else 0.0,
        "cost_per_task": float(episodes["cost"].sum()) / n,
        "latency_s_per_task": float(episodes["latency_s"].sum()) / n,
        "parse_failures_per_task": failures / n,
        "parse_failure_rate": failures / calls if calls else 0.0,
        "cache_hits": float(episodes["cache_hits"].sum()),
        "cache_hit_rate": float(episodes["cache_hits"].sum()) / calls if calls else 0.0,
    }
    if "ambiguous" in episodes.columns and episodes["ambiguous"].null_count() < n:
        # hedged answers, a part of the parse failures; over the episodes that count them (newer parts)
        counted = episodes["ambiguous"].drop_nulls()
        scalars["ambiguous_per_task"] = int(counted.sum()) / counted.len()
    # Episodes may stop after different numbers of rounds: each round's accuracy is over the
    # episodes that reached it.
    hits: list[int] = []
    seen: list[int] = []
    for flags in episodes["round_correct"].to_list():
        for r, ok in enumerate(flags or []):
            if r == len(hits):
                hits.append(0)
                seen.append(0)
            hits[r] += bool(ok)
            seen[r] += 1
    return scalars, [h / s for h, s in zip(hits, seen, strict=True)]


# Diagnostics logged per group (means over episodes, nulls skipped) and per round (as steps).
DIAGNOSTIC_SCALARS = (
    "w2r",
    "r2w",
    "net",
    "cross_ans",
    "src_conf",
    "acceptance",
    "influence_entropy",
    "answer_entropy",
    "agreement",
)
DIAGNOSTIC_COUNTS = ("w2r_count", "r2w_count", "changed", "critiques", "verdicts", "accepted")
ROUND_SERIES = (*DIAGNOSTIC_SCALARS, "correct", "changed", "calls", "tokens")


def _mean(frame: pl.DataFrame, col: str) -> float | None:
    if col not in frame.columns or frame[col].null_count() == frame.height:
        return None
    value = frame[col].drop_nans().mean() if frame[col].dtype.is_float() else frame[col].mean()
    return None if value is None else float(value)  # type: ignore[arg-type]


def diagnostic_metrics(episodes: pl.DataFrame, rounds: pl.DataFrame | None) -> list[tuple[str, float, int]]:
    """(name, value, step) of a group's diagnostics: the episodes' summary columns averaged over
    episodes (`<count>_per_task` for counts), and each round's mean as `<name>_round` at step = round.
    A quantity no episode defines is not logged."""
    out = [(c, v, 0) for c in DIAGNOSTIC_SCALARS if (v := _mean(episodes, c)) is not None]
    out += [(f"{c}_per_task", v, 0) for c in DIAGNOSTIC_COUNTS if (v := _mean(episodes, c)) is not None]
    if rounds is None or rounds.height == 0:
        return out
    for r, frame in sorted(rounds.partition_by("round", as_dict=True).items()):
        step = int(r[0])
        out += [(f"{c}_round", v, step) for c in ROUND_SERIES if (v := _mean(frame, c)) is not None]
    return out


TABLE_COLUMNS = [
    "method_label",
    "method",
    "dataset",
    "split",
    "seed",
    "correct",
    "prompt_tokens",
    "completion_tokens",
    "cost",
]


def method_table(episodes: pl.DataFrame) -> pl.DataFrame:
    """One row per method and dataset: accuracy as the mean ± sample std over seeds of each seed's
    accuracy (std null with one seed), tokens and price-weighted cost per task, episodes and seeds.
    The mean and std are `sweep report`'s (`mean_std`, exact over each seed's k/n), so a mean such
    as 0.7125 rounds to what the report prints (a float mean of 0.7 and 0.725 is 0.71249...)."""
    from sweep.report.stats import mean_std

    label = pl.coalesce(pl.col("method_label"), pl.col("method")).alias("method_label")
    per_seed = (
        episodes.with_columns(label)
        .group_by("method_label", "dataset", "split", "seed")
        .agg(
            pl.col("correct").sum().alias("right"),
            (pl.col("prompt_tokens") + pl.col("completion_tokens")).mean().alias("tokens_per_task"),
            pl.col("cost").mean().alias("cost_per_task"),
            pl.len().alias("episodes"),
        )
        .sort("seed")
    )
    rows = []
    for (method, dataset, split), seeds in per_seed.group_by("method_label", "dataset", "split"):
        mean, std = mean_std([Fraction(k, n) for k, n in seeds.select("right", "episodes").iter_rows()])
        rows.append(
            {
                "method_label": method,
                "dataset": dataset,
                "split": split,
                "accuracy_mean": mean,
                "accuracy_std": std,
                "tokens_per_task": seeds["tokens_per_task"].mean(),
                "cost_per_task": seeds["cost_per_task"].mean(),
                "episodes": int(seeds["episodes"].sum()),
                "seeds": seeds.height,
            }
        )
    schema: dict[str, type[pl.DataType]] = {
        "method_label": pl.String,
        "dataset": pl.String,
        "split": pl.String,
    }
    schema |= dict.fromkeys(("accuracy_mean", "accuracy_std", "tokens_per_task", "cost_per_task"), pl.Float64)
    schema |= dict.fromkeys(("episodes", "seeds"), pl.Int64)
    return pl.DataFrame(rows, schema=schema).sort("dataset", "split", "method_label")


def table_markdown(table: pl.DataFrame) -> str:
    """`method_table` as a markdown table (the parent run's description in MLflow), each number
    rounded as `sweep report` prints it (3 decimals for accuracy)."""
    lines = [
        "| method | dataset | accuracy (mean ± std over seeds) | tokens/task | cost/task | episodes | seeds |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in table.iter_rows(named=True):
        lines.append(
            f"| {r['method_label']} | {r['dataset']}/{r['split']} | "
            f"{mean_pm_std(r['accuracy_mean'], r['accuracy_std'])} | "
            f"{r['tokens_per_task']:.0f} | {r['cost_per_task']:.6f} | {r['episodes']} | {r['seeds']} |"
        )
    return "\n".join(lines)


def mean_pm_std(mean: float | None, std: float | None, digits: int = 3) -> str:
    """`0.713 ± 0.018` (`0.713` with one seed), as `sweep report`'s tables write it."""
    if mean is None:
        return "–"
    return f"{mean:.{digits}f}" if std is None else f"{mean:.{digits}f} ± {std:.{digits}f}"


def readable_tags(run_name: str, params: dict[str, str] | Mapping[str, str]) -> dict[str, str]:
    """Tags of a group's child run that read as the runs table's columns and group-by keys: the
    method's label (its run name's first part), the method, the dataset and the seed."""
    return {
        "method_label": run_name.split(" | ")[0],
        "method": params.get("method.name", ""),
        "dataset": f"{params.get('dataset.name', '')}/{params.get('dataset.split', '')}",
        "seed": params.get("seed", ""),
    }


# The decimals `sweep report` prints each of these metrics with: a child run logs them rounded the
# same way, since MLflow's UI shows Math.round(1000 v) / 1000, which turns 0.0625 into 0.063 where
# the report prints 0.062 (and 0.71249... into 0.712 where the exact mean 0.7125 prints 0.713).
REPORT_DIGITS = {
    "accuracy": 3,
    "accuracy_round": 3,
    "w2r": 3,
    "r2w": 3,
    "acceptance": 3,
    "src_conf": 3,
    "tokens_per_task": 0,
    "calls_per_task": 1,
    "cost_per_task": 6,
}


def as_reported(name: str, value: float) -> float:
    """`value` rounded as `sweep report` prints metric `name` (half to even on the float's exact
    value, as Python's format does), or as is for a metric the report does not print."""
    digits = REPORT_DIGITS.get(name)
    return value if digits is None else float(f"{value:.{digits}f}")


VIEW_METRICS = ("accuracy", "tokens_per_task", "cost_per_task", "parse_failure_rate", "w2r", "r2w")
VIEW_TAGS = ("method_label", "dataset", "seed")


def runs_view(parent_run_id: str) -> dict[str, object]:
    """The MLflow runs page for a sweep as a shared view state: its child runs listed flat (a search
    filter turns nesting off, so they do not sit collapsed under the parent), by run name, with the
    method, dataset, seed and the main metrics as columns."""
    return {
        "searchFilter": f"tags.`mlflow.parentRunId` = '{parent_run_id}'",
        "orderByKey": "tags.`mlflow.runName`",
        "orderByAsc": True,
        "selectedColumns": [f"tags.`{t}`" for t in VIEW_TAGS] + [f"metrics.`{m}`" for m in VIEW_METRICS],
    }
