"""Per-round curves: the accuracy of the vote after each round (from the episode rows) and the mean of
every per-round diagnostic of the `rounds/` table, per (team, dataset, split, method, round). Columns
that later parts add (`active`, `cost`, `edge_weight`, `max_tokens`) are averaged when present."""

from __future__ import annotations

import polars as pl

from sweep.report.load import Results
from sweep.report.summary import GROUP

KEYS = [*GROUP, "method_key", "round"]
# rounds/ columns averaged as they are (nulls skipped, NaN treated as null)
SCALARS = (
    "changed",
    "w2r",
    "r2w",
    "net",
    "edges",
    "cross_edges",
    "cross_ans",
    "src_conf",
    "critiques",
    "verdicts",
    "accepted",
    "acceptance",
    "influence_entropy",
    "answer_entropy",
    "agreement",
    "calls",
    "tokens",
    "cost",
)
ROUND_SERIES = ("vote_accuracy", "agent_accuracy", *SCALARS, "active_agents", "mean_edge_weight")


def _vote_accuracy(ep: pl.DataFrame) -> pl.DataFrame:
    long = (
        ep.select(*GROUP, "method_key", "round_correct")
        .with_columns(round=pl.int_ranges(pl.col("round_correct").list.len()))
        .explode("round_correct", "round")
    )
    return long.group_by(KEYS).agg(
        vote_accuracy=pl.col("round_correct").cast(pl.Float64).mean(), episodes=pl.len()
    )


def _diagnostics(ep: pl.DataFrame, rounds: pl.DataFrame) -> pl.DataFrame | None:
    if rounds.height == 0:
        return None
    frame = rounds.join(ep.select("episode_id", *GROUP, "method_key"), on="episode_id")
    aggs = [pl.col(c).cast(pl.Float64).fill_nan(None).mean().alias(c) for c in SCALARS if c in frame.columns]
    if {"correct", "agents"} <= set(frame.columns):
        aggs.append((pl.col("correct") / pl.col("agents")).mean().alias("agent_accuracy"))
    if "active" in frame.columns:
        aggs.append(pl.col("active").list.len().cast(pl.Float64).mean().alias("active_agents"))
    if "edge_weight" in frame.columns:
        aggs.append(pl.col("edge_weight").list.mean().mean().alias("mean_edge_weight"))
    return frame.with_columns(pl.col("round").cast(pl.Int64)).group_by(KEYS).agg(aggs)


def per_round_table(results: Results) -> pl.DataFrame:
    """One row per (team, dataset, split, method, round), in config order of methods."""
    ep = results.episodes
    table = _vote_accuracy(ep)
    diag = _diagnostics(ep, results.rounds)
    if diag is not None:
        table = table.join(diag, on=KEYS, how="left")
    rank = {k: i for i, k in enumerate(results.order)}
    labels = dict(ep.select("method_key", "method_label").unique("method_key").iter_rows())
    table = table.with_columns(
        method_label=pl.col("method_key").replace_strict(labels),
        _rank=pl.col("method_key").replace_strict(rank, return_dtype=pl.Int64),
    )
    table = table.sort(*GROUP, "_rank", "round").drop("_rank")
    front = [*GROUP, "method_label", "round", "episodes"]
    present = [c for c in ROUND_SERIES if c in table.columns]
    return table.select(*front, *present, "method_key")
