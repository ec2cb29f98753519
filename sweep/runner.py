"""`sweep run`: plan -> skip what is stored -> start engines on Ray -> run episodes -> Parquet -> MLflow."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import yaml
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from sweep import receipt
from sweep.config import SweepConfig
from sweep.plan import EpisodeTask, Group, Plan, build_plan
from sweep.pool import EnginePool
from sweep.records import Recorder
from sweep.results import BufferedWriter, ResultStore
from sweep.scheduler import RunStats, run_tasks


@dataclass
class SweepOutcome:
    out_dir: Path
    planned: int
    skipped: int
    stats: RunStats | None
    tracking_uri: str | None
    parent_run_id: str | None
    summary: list[dict[str, Any]] = field(default_factory=list)


def write_resolved_config(cfg: SweepConfig, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)
    tmp = out / ".config.resolved.yaml.tmp"
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out / "config.resolved.yaml")


def run_sweep(
    cfg: SweepConfig,
    plan: Plan | None = None,
    tracking_uri: str | None = None,
    address: str | None = None,
    console: Console | None = None,
    shard: tuple[int, int] = (0, 1),
) -> SweepOutcome:
    """Run every episode of the sweep that is not stored yet, then log the sweep to MLflow.
    `shard=(k, n)`: only the episodes whose id falls in the k-th of n shards, so that n drivers
    (one per core or machine) share a sweep's output dir, each running its part."""
    console = console or Console(stderr=True)
    plan = plan or build_plan(cfg)
    out = Path(cfg.output_dir).resolve()
    write_resolved_config(cfg, out)
    store = ResultStore(out)
    done = store.done_ids()
    if shard != (0, 1):
        k, n = shard
        done |= {t.episode_id for t in plan.tasks if int(t.episode_id[:8], 16) % n != k}  # others' shards
    # Per group, how many of its episodes are still to run; the tasks themselves are made lazily.
    left = {g.key: sum(t.episode_id not in done for t in g.tasks()) for g in plan.groups}
    n_todo = sum(left.values())
    outcome = SweepOutcome(out, len(plan.tasks), len(plan.tasks) - n_todo, None, None, None)
    if not n_todo:
        console.print(f"[green]all {len(plan.tasks)} episodes are already done[/]: no model call made")
    else:
        groups = [g for g in plan.groups if left[g.key]]
        todo = (t for g in groups for t in g.tasks() if t.episode_id not in done)
        outcome.stats = _run_episodes(cfg, groups, todo, n_todo, store, address, console)

    _track(cfg, plan, store, outcome, tracking_uri, console)
    outcome.summary = summarize(plan, store)
    return outcome


def _track(
    cfg: SweepConfig, plan: Plan, store: ResultStore, outcome: SweepOutcome, uri: str | None, console: Console
) -> None:
    """Log the sweep to MLflow, unless nothing ran and the store's receipt says MLflow has it all
    already (`sweep.receipt`): then MLflow is not even imported."""
    if not cfg.tracking.enabled:
        return
    out = Path(cfg.output_dir).resolve()
    uri = uri or cfg.tracking.uri or receipt.default_tracking_uri(out)
    facts = (out, uri, cfg.tracking.experiment, cfg.identity())
    if outcome.stats is None and (parent := receipt.fresh(*facts, store.part_names())) is not None:
        console.print("mlflow: up to date (nothing new since it was logged)")
        outcome.tracking_uri, outcome.parent_run_id = uri, parent
        return
    from sweep.tracking import sweep_tracker

    tracker = sweep_tracker(cfg, uri)
    outcome.tracking_uri = tracker.uri
    outcome.parent_run_id = tracker.log_sweep(cfg, plan, store, outcome.stats)
    if outcome.parent_run_id is not None and not (outcome.stats and outcome.stats.failures):
        receipt.write(*facts, store.part_names(), outcome.parent_run_id)


def _run_episodes(
    cfg: SweepConfig,
    groups: list[Group],
    todo: Iterator[EpisodeTask],
    n_todo: int,
    store: ResultStore,
    address: str | None,
    console: Console,
) -> RunStats:
    used = sorted({m for g in groups for m in g.seats})
    math = any(s.kind == "math" for g in groups for s in g.samples)
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("acc {task.fields[acc]:.3f}  tokens {task.fields[tokens]:,}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with (
        EnginePool(cfg, used, address, console, warm_math=math) as pool,
        Progress(*columns, console=console, transient=False, refresh_per_second=4) as bar,
        BufferedWriter(store, background=True) as writer,
    ):
        task_id = bar.add_task("episodes", total=n_todo, acc=0.0, tokens=0)

        def show(s: RunStats) -> None:
            bar.update(task_id, completed=s.done, acc=s.accuracy, tokens=s.tokens)

        record = Recorder(writer, cfg.identity(), pool.simulated)
        started = seconds_since_start()
        if started is not None:
            console.print(f"first episodes start {started:.1f} s after the command started")
        stats = asyncio.run(run_tasks(todo, pool.agents, record, cfg.concurrency, show, n_todo))
    rate = f" ({stats.calls / stats.wall_s:,.0f} calls/s)" if stats.wall_s > 0 else ""
    console.print(f"{stats.done} episodes, {stats.calls:,} calls in {stats.wall_s:.1f} s{rate}")
    if pool.cache is not None:
        stats.cache_hits = pool.cache.hits
        console.print(pool.cache_line())
    return stats


_SUMMED = ("correct", "prompt_tokens", "completion_tokens", "calls", "cost", "parse_failures", "cache_hits")


def seconds_since_start() -> float | None:
    """Seconds since this process started (Linux /proc; None elsewhere)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return uptime - ticks / os.sysconf("SC_CLK_TCK")


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
