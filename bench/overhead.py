"""The driver's cost per LLM call, layer by layer, in one run: the same simulated episodes (latency 0)
through ever more of `sweep run`, each layer on a fresh output dir.

    bare backend   the simulated engine alone, fed the very batches the episodes send
    episode loop   + prompts, parsing, state, vote, diagnostics (episodes one after another)
    scheduler      + 64 episodes in flight on one event loop
    parquet        + rows built and written to the results store
    cache          + the LLM-call cache (fresh: round 0 shared by the methods is its only hits)
    ray            + the engines in Ray actors instead of in-process (a local Ray, started untimed)
    sweep run      `run_sweep` as the CLI calls it (in-process, cache on, tracking off), whole call
    N drivers      the same with `--drivers N` (this process and N-1 local `--join` workers; default:
                   one per core): calls/s of the whole sweep, CPU of every driver

Prints calls, wall and CPU seconds, calls/s and ms per call, and what each layer adds; the machine's
load average before and after (other work on the machine shows up in every figure).

    .venv/bin/python bench/overhead.py                       # examples/simulated.yaml, 1000 items
    .venv/bin/python bench/overhead.py --items 200 --no-ray
    .venv/bin/python bench/overhead.py --items 400 --no-ray --drivers 2
    .venv/bin/python bench/overhead.py --items 400 --whole-only --repeat 5   # one vs N drivers, interleaved
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actors.base import ChatRequest, Completion  # noqa: E402
from actors.registry import build_backend  # noqa: E402
from sweep.config.sweep import SweepConfig, load_config  # noqa: E402
from sweep.engines.pool import build_agents  # noqa: E402
from sweep.run.plan import build_plan  # noqa: E402
from sweep.run.scheduler import fewer_collections, run_one, run_tasks  # noqa: E402


class Taped:
    """A backend that records the batches it is sent (for the bare-backend layer)."""

    def __init__(self, inner: Any, tape: list[tuple[str, list[ChatRequest]]], model: str) -> None:
        self.inner, self.tape, self.model = inner, tape, model

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.tape.append((self.model, list(requests)))
        return list(await self.inner.generate(requests))


def timed(fn: Callable[[], int]) -> tuple[int, float, float]:
    """(calls, wall s, CPU s of this process, its threads and the child processes it waited for
    included)."""

    def cpu() -> float:
        t = os.times()
        return time.process_time() + t.children_user + t.children_system

    w, c = time.perf_counter(), cpu()
    calls = fn()
    return calls, time.perf_counter() - w, cpu() - c


def engines(cfg: SweepConfig, tape: list[tuple[str, list[ChatRequest]]] | None = None) -> dict[str, Any]:
    used = sorted({m for g in build_plan(cfg).groups for m in g.seats})
    built = {m: build_backend(cfg.models[m].engine, m, dict(cfg.models[m].args)) for m in used}
    return {m: Taped(b, tape, m) for m, b in built.items()} if tape is not None else built


def layers(
    cfg: SweepConfig, out: Path, ray: bool, drivers: int
) -> list[tuple[str, tuple[int, float, float]]]:
    import pyarrow as pa

    from sweep.run.runner import PART_EPISODES, PART_TURNS
    from sweep.store.cache import CallCache
    from sweep.store.records import Recorder
    from sweep.store.results import BufferedWriter, ResultStore

    pa.array(
        [0]
    )  # pyarrow imports pandas on its first array (~2 s here): a start-up cost, not a per-call one
    plan = build_plan(cfg)
    specs = {m: cfg.models[m] for m in sorted({m for g in plan.groups for m in g.seats})}
    tape: list[tuple[str, list[ChatRequest]]] = []
    taped = build_agents(specs, engines(cfg, tape), None)
    asyncio.run(run_tasks(plan.tasks, taped, lambda *a: None, cfg.concurrency))  # records the batches
    bare = engines(cfg)

    async def backend_only() -> int:
        for model, batch in tape:
            await bare[model].generate(batch)
        return sum(len(b) for _, b in tape)

    async def sequential() -> int:
        agents, calls = build_agents(specs, engines(cfg), None), 0
        with fewer_collections():  # the scheduler's GC settings, so the two layers differ only in scheduling
            for t in plan.tasks:
                result, _ = await run_one(t, agents)
                calls += result.calls
        return calls

    def scheduled(record: Any, agents: Any) -> int:
        return asyncio.run(run_tasks(plan.tasks, agents, record, cfg.concurrency)).calls

    def with_parquet(cache: bool, backends: Any) -> int:
        d = out / f"layer-{time.monotonic_ns()}"
        store = ResultStore(d)
        calls_cache = CallCache(d / "llm_cache.sqlite") if cache else None
        try:
            with BufferedWriter(
                store, PART_EPISODES, background=True, max_turns=PART_TURNS
            ) as writer:  # as `sweep run` writes
                return scheduled(
                    Recorder(writer, "bench", set(specs)), build_agents(specs, backends, calls_cache)
                )
        finally:
            if calls_cache is not None:
                calls_cache.close()

    rows = [
        ("bare backend", timed(lambda: asyncio.run(backend_only()))),
        ("episode loop", timed(lambda: asyncio.run(sequential()))),
        ("scheduler", timed(lambda: scheduled(lambda *a: None, build_agents(specs, engines(cfg), None)))),
        ("parquet", timed(lambda: with_parquet(False, engines(cfg)))),
        ("cache", timed(lambda: with_parquet(True, engines(cfg)))),
    ]
    if ray:
        rows.append(("ray", ray_layer(cfg, specs, with_parquet)))
    rows.append(("sweep run", sweep_run(cfg, out)))
    if drivers > 1:
        rows.append((f"{drivers} drivers", sweep_run(cfg, out, drivers)))
    return rows


def ray_layer(
    cfg: SweepConfig, specs: dict[str, Any], with_parquet: Callable[[bool, Any], int]
) -> tuple[int, float, float]:
    from sweep.engines.actors import start_engines, stop_engines
    from sweep.engines.ray_runtime import init_ray

    init_ray(None, cfg.ray.num_cpus)
    remote = start_engines(dict(specs))
    try:
        with_parquet(True, remote)  # warm: the actors' first calls import and compile
        return timed(lambda: with_parquet(True, remote))
    finally:
        stop_engines(remote)


def sweep_run(cfg: SweepConfig, out: Path, drivers: int = 1, run: int = 0) -> tuple[int, float, float]:
    from rich.console import Console

    from sweep.run.runner import run_sweep

    run_cfg = cfg.model_copy(update={"output_dir": str(out / f"sweep-run-{drivers}-{run}")})
    plan = build_plan(run_cfg)
    quiet = Console(file=open(os.devnull, "w"), stderr=False)  # noqa: SIM115 - closed at exit

    def go() -> int:
        outcome = run_sweep(run_cfg, plan, console=quiet, drivers=drivers)
        assert outcome.stats is not None and not outcome.stats.failures
        return outcome.stats.calls

    return timed(go)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="examples/simulated.yaml")
    p.add_argument(
        "--items", type=int, default=1000, help="items per dataset (episodes = methods x seeds x items)"
    )
    p.add_argument("--no-ray", action="store_true", help="skip the Ray layer (it starts a local Ray)")
    p.add_argument(
        "--drivers", type=int, default=os.cpu_count() or 1, help="drivers of the last row (1: no such row)"
    )
    p.add_argument("--whole-only", action="store_true", help="only the two whole-`sweep run` rows")
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs of the whole-`sweep run` rows, interleaved (one, N, one, N...)",
    )
    a = p.parse_args(argv)
    overrides = [f"datasets.0.limit={a.items}", "tracking.enabled=false"]
    cfg = load_config(a.config, overrides)
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores")
    out = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    try:
        rows = [] if a.whole_only else layers(cfg, out, not a.no_ray, a.drivers)
        if a.whole_only:
            sweep_run(cfg, out, 1, -1)  # untimed: first-use imports (pyarrow, polars), as `layers` has them
        for k in range(0 if a.whole_only else 1, a.repeat):  # `layers` made run 0 of each
            rows.append(("sweep run", sweep_run(cfg, out, 1, k)))
            if a.drivers > 1:
                rows.append((f"{a.drivers} drivers", sweep_run(cfg, out, a.drivers, k)))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print(
        f"{'layer':14s} {'calls':>8s} {'wall s':>8s} {'cpu s':>7s} {'calls/s':>9s} {'ms/call':>8s} "
        f"{'+ms/call':>9s} {'cpu ms/call':>12s} {'+cpu':>7s}"
    )
    previous, previous_cpu = 0.0, 0.0
    for name, (calls, wall, cpu) in rows:
        ms, cpu_ms = 1000 * wall / calls, 1000 * cpu / calls
        whole = name == "sweep run" or name.endswith("drivers")
        added = "" if whole else f"{ms - previous:+9.3f}"
        added_cpu = "" if whole else f"{cpu_ms - previous_cpu:+7.3f}"
        print(
            f"{name:14s} {calls:8d} {wall:8.2f} {cpu:7.2f} {calls / wall:9.0f} {ms:8.3f} {added:>9s} "
            f"{cpu_ms:12.3f} {added_cpu:>7s}"
        )
        if not whole:
            previous, previous_cpu = ms, cpu_ms
    for name in dict.fromkeys(n for n, _ in rows if n == "sweep run" or n.endswith("drivers")):
        rates = [calls / wall for n, (calls, wall, _) in rows if n == name]
        if len(rates) > 1:
            print(
                f"{name}: calls/s over {len(rates)} runs: median {statistics.median(rates):,.0f}, best {max(rates):,.0f}"
            )
    print(f"load average after: {os.getloadavg()[0]:.2f} (1 min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
