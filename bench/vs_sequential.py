"""`sweep run` against the research repos' loop: per question, per round, per agent, one blocking
call — on the same engine, items and seeds. Prints both wall times, their ratio, and whether the two
produced the same answers.

    simulated   examples/simulated.yaml, every request taking `--latency` seconds (0.05: a hosted
                API's pace; a batch of concurrent requests takes it once, as a server's would)
    cpu         examples/cpu_gsm8k.yaml: SmolLM2-135M through llama.cpp on this machine's cores
                (two single-threaded instances: the loop keeps one busy, the sweep both)

The sweep runs as `sweep run` does (cache on, Parquet, tracking off), engines in-process; with
`--cache off` it pays every call like the loop does.

    .venv/bin/python bench/vs_sequential.py simulated --items 10
    .venv/bin/python bench/vs_sequential.py cpu --items 2
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actors.base import ChatRequest, Completion  # noqa: E402
from actors.registry import build_backend  # noqa: E402
from sweep.config.sweep import SweepConfig, load_config  # noqa: E402
from sweep.engines.pool import build_agents  # noqa: E402
from sweep.run.plan import build_plan  # noqa: E402
from sweep.run.scheduler import run_one  # noqa: E402

CONFIGS = {"simulated": "examples/simulated.yaml", "cpu": "examples/cpu_gsm8k.yaml"}


class OneAtATime:
    """What the reference loop does with a round: each agent's call sent alone, awaited, then the next."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        out = []
        for r in requests:
            out += await self.inner.generate([r])  # type: ignore[attr-defined]
        return out


def reference(cfg: SweepConfig) -> tuple[float, dict[str, str | None]]:
    """The loop: episodes one after another, every call blocking. Wall seconds and final answers."""
    t0 = time.perf_counter()
    plan = build_plan(cfg)
    models = sorted({m for g in plan.groups for m in g.seats})
    specs = {m: cfg.models[m] for m in models}
    engines = {m: OneAtATime(build_backend(s.engine, s.model or m, dict(s.args))) for m, s in specs.items()}
    agents = build_agents(specs, engines, None)

    async def loop() -> dict[str, str | None]:
        answers = {}
        for t in plan.tasks:
            result, _ = await run_one(t, agents)
            answers[t.episode_id] = result.final_answer
        return answers

    answers = asyncio.run(loop())
    return time.perf_counter() - t0, answers


def sweep(cfg: SweepConfig) -> tuple[float, dict[str, str | None], int]:
    """`run_sweep` as the CLI runs it. Wall seconds, final answers, cache hits."""
    from rich.console import Console

    from sweep.run.runner import run_sweep
    from sweep.store.results import ResultStore

    t0 = time.perf_counter()
    outcome = run_sweep(cfg, console=Console(file=open(os.devnull, "w")))  # noqa: SIM115
    wall = time.perf_counter() - t0
    assert outcome.stats is not None and not outcome.stats.failures, outcome.stats
    ep = ResultStore(outcome.out_dir).episodes(["final_answer"])
    return wall, dict(zip(ep["episode_id"], ep["final_answer"], strict=True)), outcome.stats.cache_hits


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("engine", choices=sorted(CONFIGS))
    p.add_argument("--items", type=int, default=10)
    p.add_argument("--latency", type=float, default=0.05, help="seconds per request (simulated)")
    p.add_argument("--cache", choices=["on", "off"], default="on")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="vs-seq-") as out:
        overrides = [f"datasets.0.limit={a.items}", "tracking.enabled=false", "ray.in_process=true"]
        overrides += [f"output_dir={out}", f"cache={'true' if a.cache == 'on' else 'false'}"]
        if a.engine == "simulated":
            cfg0 = load_config(CONFIGS[a.engine])
            overrides += [f"models.{m}.args.latency_s={a.latency}" for m in cfg0.models]
        cfg = load_config(CONFIGS[a.engine], overrides)
        print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
        loop_s, loop_answers = reference(cfg)
        print(f"reference loop: {len(loop_answers)} episodes in {loop_s:.1f} s", flush=True)
        sweep_s, sweep_answers, hits = sweep(cfg)
        print(f"sweep run ({cfg.concurrency} in flight, cache {a.cache}): {sweep_s:.1f} s, {hits} cache hits")
        same = sum(loop_answers[k] == sweep_answers.get(k) for k in loop_answers)
        print(f"speed-up: {loop_s / sweep_s:.1f}x; same final answer in {same}/{len(loop_answers)} episodes")
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
