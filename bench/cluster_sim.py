"""Can one driver keep a GPU cluster busy? A throughput model: the real `sweep run` path (scheduler,
episode loop, Parquet rows) drives N simulated GPUs whose step times follow a batch curve
(`actors.batch_curve`: continuous batching as vLLM does it), on a real sweep plan.

Time is virtual where nothing runs: the event loop jumps over waits (every engine step is a wait), and
advances with the driver's own CPU time while it computes — so the driver's cost is part of the model
(as on a core of its own: other load on this machine does not count), and an hour of cluster time
takes minutes. Utilisation is the cluster's output tokens/s over a
measured window divided by N times one GPU's saturated rate (the same engine fed an endless backlog of
this plan's requests). For each N the episodes in flight are raised until utilisation reaches 0.95 — and, where
one driver's core is saturated, the drivers sharing the plan (an owner and `sweep run --join` workers
on one output dir, each on a core of its own).

    .venv/bin/python bench/cluster_sim.py                       # 8, 16, 32, 64 GPUs, examples/pear_simulated.yaml
    .venv/bin/python bench/cluster_sim.py --gpus 64 --window 60 --curve my_measured_curve.yaml
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import selectors
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actors.base import ChatRequest, Completion, Message  # noqa: E402
from actors.batch_curve import BatchCurve, BatchingEngine, Cluster  # noqa: E402
from actors.registry import build_backend  # noqa: E402
from sweep.config.sweep import SweepConfig, load_config  # noqa: E402
from sweep.engines.pool import build_agents  # noqa: E402
from sweep.run.plan import build_plan  # noqa: E402
from sweep.run.runner import SpaceGate  # noqa: E402
from sweep.run.scheduler import run_tasks  # noqa: E402
from sweep.store.ownership import Claims  # noqa: E402
from sweep.store.records import Recorder  # noqa: E402
from sweep.store.results import BufferedWriter, ResultStore  # noqa: E402


class WarpSelector(selectors.DefaultSelector):
    """A selector that, instead of sleeping until the next timer, moves the loop's clock there."""

    offset = 0.0
    drivers = 1  # driver processes modelled: the loop's CPU time counts 1/drivers

    def select(self, timeout: float | None = None) -> list[Any]:
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:  # no timer at all: only another thread can wake the loop
            return super().select(None)
        WarpSelector.offset += timeout
        return []


class WarpLoop(asyncio.SelectorEventLoop):
    """Its clock is the CPU time of the thread running it plus the waits skipped: the driver's own
    work costs what it costs on a core of its own, whatever else the machine is doing. With N
    drivers (an owner and N-1 `sweep run --join` workers, each on its own core) the work is shared:
    it counts 1/N."""

    def __init__(self) -> None:
        super().__init__(WarpSelector())

    def time(self) -> float:
        return time.thread_time() / WarpSelector.drivers + WarpSelector.offset


def run_warped(coro: Any) -> Any:
    loop = WarpLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def saturated_tokens_per_s(curve: BatchCurve, prompts: Sequence[int]) -> float:
    """One GPU's output tokens/s with a backlog that never empties (requests of these prompt sizes,
    replies of the curve's length spread): measured after the first waves, until the backlog ends."""

    async def go() -> float:
        engine = BatchingEngine(curve)
        requests = [ChatRequest((Message("user", "x" * int(p / curve.tokens_per_char)),)) for p in prompts]
        replies = [Completion(f"reply {i}", 0, 0) for i in range(len(requests))]
        task = asyncio.ensure_future(engine.serve(requests, replies))
        loop = asyncio.get_running_loop()
        while engine.step < 4 * curve.completion_tokens:  # the first waves, admitted together, pass
            await asyncio.sleep(0.05)
        t0, s0 = loop.time(), sum(engine.meter.tokens.values())
        while len(engine.waiting) > curve.max_num_seqs:
            await asyncio.sleep(0.05)
        rate = (sum(engine.meter.tokens.values()) - s0) / (loop.time() - t0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        engine.close()
        return rate

    return float(run_warped(go()))


def simulate(
    cfg: SweepConfig,
    curve: BatchCurve,
    gpus: int,
    in_flight: int,
    warmup: float,
    window: float,
    drivers: int = 1,
) -> dict[str, float]:
    """Run the plan's episodes on `gpus` simulated GPUs with `in_flight` episodes at once until the
    window has passed: the cluster's output tokens/s and calls/s in the window, wall and CPU seconds."""
    plan = build_plan(cfg)
    specs = {m: cfg.models[m] for m in sorted({m for g in plan.groups for m in g.seats})}

    async def go() -> dict[str, float]:
        loop = asyncio.get_running_loop()
        cluster = Cluster(curve, gpus)
        inner = {m: build_backend(s.engine, m, dict(s.args)) for m, s in specs.items()}
        agents = build_agents(specs, {m: cluster.backend(b) for m, b in inner.items()}, None)
        start = loop.time()
        with (
            tempfile.TemporaryDirectory(prefix="cluster-sim-") as tmp,
            BufferedWriter(ResultStore(Path(tmp))) as w,
        ):
            gate = SpaceGate(Path(tmp), Claims(Path(tmp)))  # each episode claimed, as by `sweep run`
            record = Recorder(w, "sim", set(specs))
            run = asyncio.ensure_future(run_tasks(plan.tasks, agents, record, in_flight, claim=gate))
            await asyncio.sleep(warmup + window)  # then stop: the window is all that is measured
            run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run
        cluster.close()
        lo, hi = int(start + warmup), int(start + warmup + window)
        tokens = sum(n for e in cluster.engines for s, n in e.meter.tokens.items() if lo <= s < hi)
        calls = sum(n for e in cluster.engines for s, n in e.meter.finished.items() if lo <= s < hi)
        return {"tokens_per_s": tokens / (hi - lo), "calls_per_s": calls / (hi - lo)}

    t0, c0, b0 = time.perf_counter(), time.process_time(), time.thread_time()
    WarpSelector.drivers = drivers
    try:
        out = run_warped(go())
    finally:
        WarpSelector.drivers = 1
    out["wall_s"], out["cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
    out["busy"] = (time.thread_time() - b0) / drivers / (warmup + window)  # each driver's share of its core
    return out


def prompt_sizes(cfg: SweepConfig, curve: BatchCurve, n: int) -> list[int]:
    """Prompt tokens of this plan's first calls (round 0 and later rounds), to size the backlog."""
    plan = build_plan(cfg)
    sizes: list[int] = []

    class Tap:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
            sizes.extend(
                int(sum(len(m.content) for m in r.messages) * curve.tokens_per_char) for r in requests
            )
            return list(await self.inner.generate(requests))

    specs = {m: cfg.models[m] for m in sorted({m for g in plan.groups for m in g.seats})}
    agents = build_agents(
        specs, {m: Tap(build_backend(s.engine, m, dict(s.args))) for m, s in specs.items()}, None
    )
    tasks = [plan.tasks[i] for i in range(0, len(plan.tasks), max(1, len(plan.tasks) // 200))]
    asyncio.run(run_tasks(tasks, agents, lambda *a: None, 64))
    return (sizes * (n // max(1, len(sizes)) + 1))[:n]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="examples/pear_simulated.yaml")
    p.add_argument(
        "--curve", help="a YAML mapping of `actors.batch_curve.BatchCurve` fields (default: its defaults)"
    )
    p.add_argument("--gpus", type=int, nargs="+", default=[8, 16, 32, 64])
    p.add_argument("--warmup", type=float, default=60.0, help="virtual seconds before the window")
    p.add_argument("--window", type=float, default=120.0, help="virtual seconds measured")
    p.add_argument("--target", type=float, default=0.95)
    p.add_argument("--drivers", type=int, default=1, help="drivers to start the search from")
    p.add_argument("--in-flight", type=int, help="episodes in flight to start the search from")
    a = p.parse_args(argv)
    curve = BatchCurve.from_mapping(yaml.safe_load(Path(a.curve).read_text()) if a.curve else {})
    seeds = "[" + ",".join(str(s) for s in range(100)) + "]"  # more episodes than any window needs
    cfg = load_config(a.config, [f"seeds={seeds}", "tracking.enabled=false", "cache=false"])
    sizes = prompt_sizes(cfg, curve, 40 * curve.max_num_seqs)
    sat = saturated_tokens_per_s(curve, sizes)
    print(
        f"curve {curve.name}: one GPU saturated = {sat:,.0f} output tokens/s on this plan's prompts "
        f"(mean {sum(sizes) / len(sizes):.0f} prompt tokens, {curve.completion_tokens} completion tokens)"
    )
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(
        f"{'GPUs':>5} {'drivers':>7} {'in flight':>9} {'util':>6} {'tokens/s':>10} {'calls/s':>8} {'busy':>5} {'wall s':>7}"
    )
    for gpus in a.gpus:
        # Start near what fills every slot: max_num_seqs per GPU, a few calls in flight per episode.
        in_flight, drivers = a.in_flight or max(8, gpus * curve.max_num_seqs // 5), a.drivers
        for _ in range(8):
            r = simulate(cfg, curve, gpus, in_flight, a.warmup, a.window, drivers)
            util = r["tokens_per_s"] / (gpus * sat)
            print(
                f"{gpus:5d} {drivers:7d} {in_flight:9d} {util:6.3f} {r['tokens_per_s']:10,.0f} "
                f"{r['calls_per_s']:8,.0f} {r['busy']:5.2f} {r['wall_s']:7.1f}",
                flush=True,
            )
            if util >= a.target:
                break
            if r["busy"] > 0.9:  # the driver is the bottleneck: share the plan with another one
                drivers += 1
            else:
                in_flight = int(in_flight * 1.5)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
