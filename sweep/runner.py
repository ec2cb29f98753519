"""`sweep run`: plan -> skip what is stored -> start engines on Ray -> run episodes -> Parquet -> MLflow."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
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

from actors.base import Backend
from debate.episode import Agent
from debate.prompts import REPLY_SCHEMA
from sweep.cache import CachedBackend, CallCache
from sweep.config import ModelSpec, SweepConfig, model_identity
from sweep.plan import Plan, build_plan
from sweep.results import BufferedWriter, ResultStore
from sweep.scheduler import RunStats, run_tasks
from sweep.tracking import Tracker, default_tracking_uri, flatten_params


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
) -> SweepOutcome:
    """Run every episode of the sweep that is not stored yet, then log the sweep to MLflow."""
    console = console or Console(stderr=True)
    plan = plan or build_plan(cfg)
    out = Path(cfg.output_dir).resolve()
    write_resolved_config(cfg, out)
    store = ResultStore(out)
    done = store.done_ids()
    todo = [t for t in plan.tasks if t.episode_id not in done]
    outcome = SweepOutcome(out, len(plan.tasks), len(plan.tasks) - len(todo), None, None, None)
    if not todo:
        console.print(f"[green]all {len(plan.tasks)} episodes are already done[/]: no model call made")
    else:
        outcome.stats = _run_on_ray(cfg, todo, store, address, console)

    if cfg.tracking.enabled:
        outcome.tracking_uri = tracking_uri or cfg.tracking.uri or default_tracking_uri(out)
        outcome.parent_run_id = _track(cfg, plan, store, outcome.tracking_uri, outcome.stats)
    outcome.summary = summarize(plan, store)
    return outcome


def build_agents(
    models: Mapping[str, ModelSpec], backends: Mapping[str, Backend], cache: CallCache | None
) -> dict[str, Agent]:
    """One `Agent` per pool model: its engine (behind the call cache when there is one), its
    sampling, its reply schema and its prices. `sweep run` and `sweep study` both build them here."""
    agents = {}
    for m, spec in models.items():
        backend: Backend = backends[m]
        if cache is not None:
            backend = CachedBackend(backend, cache, model_identity(m, spec))
        schema = dict(REPLY_SCHEMA) if spec.structured_output else None
        s = spec.sampling
        agents[m] = Agent(
            m, backend, s.max_tokens, s.temperature, s.top_p, schema, spec.price_in, spec.price_out
        )
    return agents


def _run_on_ray(
    cfg: SweepConfig, todo: list[Any], store: ResultStore, address: str | None, console: Console
) -> RunStats:
    from sweep.engines import start_engines, stop_engines
    from sweep.ray_runtime import init_ray

    used = sorted({m for t in todo for m in t.group.seats})
    t0 = time.perf_counter()
    if any(t.sample.kind == "math" for t in todo):
        from data.mathcheck import checker

        checker().start()  # its worker takes seconds to start: not inside the first episode's vote
    info = init_ray(address or cfg.ray.address, cfg.ray.num_cpus)
    backends = start_engines({m: cfg.models[m] for m in used})
    console.print(
        f"ray: {info['mode']}; engines ready for {', '.join(used)} in {time.perf_counter() - t0:.1f} s"
    )
    cache = CallCache(store.out_dir / "llm_cache.sqlite") if cfg.cache else None
    agents = build_agents({m: cfg.models[m] for m in used}, backends, cache)
    simulated = {m for m in used if cfg.models[m].engine == "simulated"}
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("acc {task.fields[acc]:.3f}  tokens {task.fields[tokens]:,}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    try:
        with Progress(*columns, console=console, transient=False) as bar, BufferedWriter(store) as writer:
            task_id = bar.add_task("episodes", total=len(todo), acc=0.0, tokens=0)

            def show(s: RunStats) -> None:
                bar.update(task_id, completed=s.done, acc=s.accuracy, tokens=s.tokens)

            stats = asyncio.run(
                run_tasks(todo, agents, writer, cfg.identity(), simulated, cfg.concurrency, on_progress=show)
            )
    finally:
        stop_engines(backends)
        if cache is not None:
            cache.close()
    if cache is not None:
        stats.cache_hits = cache.hits
        console.print(f"llm-call cache: {cache.hits} hits, {cache.misses} engine calls ({cache.path.name})")
    return stats


def _track(cfg: SweepConfig, plan: Plan, store: ResultStore, uri: str, stats: RunStats | None) -> str:
    tracker = Tracker(uri, cfg.tracking.experiment, Path(cfg.output_dir).resolve())
    params = flatten_params(cfg.model_dump(mode="json", exclude={"tracking"}))
    parent = tracker.start_sweep(cfg.identity(), cfg.name, params)
    episodes, turns = store.episodes(), store.turns()
    for g in plan.groups:
        ids = [t.episode_id for t in plan.tasks if t.group is g]
        ep = episodes.filter(pl.col("episode_id").is_in(ids))
        if ep.height == 0:
            continue
        tu = turns.filter(pl.col("episode_id").is_in(ids))
        gparams = flatten_params({"method": g.method_spec, "dataset": g.dataset.model_dump(), "seed": g.seed})
        tracker.log_group(g.key, g.run_name, gparams, ep, tu)
    done = episodes.filter(pl.col("sweep_id") == cfg.identity()) if episodes.height else episodes
    metrics = {
        "episodes_done": float(done.height),
        "cache_hits_this_run": float(stats.cache_hits if stats else 0),
    }
    if done.height:
        metrics["accuracy"] = float(done["correct"].mean())  # type: ignore[arg-type]
    failed = bool(stats and stats.failures)
    tracker.finish_sweep("FAILED" if failed else "FINISHED", metrics)
    return parent


def summarize(plan: Plan, store: ResultStore) -> list[dict[str, Any]]:
    """Per (method spec, dataset): episodes, accuracy (mean over seeds' episodes), tokens and calls per task."""
    episodes = store.episodes()
    rows = []
    seen: dict[tuple[str, str], list[str]] = {}
    for t in plan.tasks:
        seen.setdefault(
            (t.group.method.spec.label(), f"{t.group.dataset.name}/{t.group.dataset.split}"), []
        ).append(t.episode_id)
    for (method, dataset), ids in seen.items():
        ep = episodes.filter(pl.col("episode_id").is_in(ids))
        if ep.height == 0:
            continue
        rows.append(
            {
                "method": method,
                "dataset": dataset,
                "episodes": ep.height,
                "accuracy": float(ep["correct"].mean()),  # type: ignore[arg-type]
                "tokens/task": float((ep["prompt_tokens"] + ep["completion_tokens"]).mean()),  # type: ignore[arg-type]
                "calls/task": float(ep["calls"].mean()),  # type: ignore[arg-type]
                "cost/task": float(ep["cost"].mean()),  # type: ignore[arg-type]
                "parse_fail": int(ep["parse_failures"].sum()),
                "cache_hits": int(ep["cache_hits"].sum()),
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
