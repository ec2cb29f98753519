"""Is the framework keeping the engine busy? The same first-round prompts are sent twice:

1. raw: one batch straight into the engine, in this process (the engine's own best case);
2. framework: as many concurrent `cot_sc` episodes (m seats = the first round of an m-agent debate)
   through the scheduler, the cache-less driver and the engine's Ray actor.

Prints completion tokens per second of each and their ratio (framework / raw; 1.0 = no overhead).

    .venv/bin/python bench/engine_saturation.py --config examples/quickstart.yaml --items 8
    .venv-vllm/bin/python bench/engine_saturation.py --config examples/vllm_cpu.yaml --items 8
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actors.base import ChatRequest, Completion  # noqa: E402
from actors.registry import build_backend  # noqa: E402
from data.grading.graders import grader_for  # noqa: E402
from debate.episode import Agent, run_episode  # noqa: E402
from debate.prompts import REPLY_SCHEMA  # noqa: E402
from sweep.config.sweep import SweepConfig, load_config  # noqa: E402
from sweep.run.plan import EpisodeTask, build_plan  # noqa: E402


class Recorder:
    """Captures the requests an episode would send, answering nothing useful."""

    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.requests += requests
        return [Completion("{}", 0, 0) for _ in requests]


def bench_config(path: str, items: int, m: int) -> SweepConfig:
    overrides = [f"datasets.0.limit={items}", "seeds=[0]", "tracking.enabled=false", "cache=false"]
    overrides.append(f"methods=[{{name: cot_sc, args: {{m: {m}}}}}]")
    return load_config(path, overrides)


def agent_for(cfg: SweepConfig, model: str, backend: object) -> Agent:
    spec = cfg.models[model]
    s = spec.sampling
    schema = dict(REPLY_SCHEMA) if spec.structured_output else None
    return Agent(model, backend, s.max_tokens, s.temperature, s.top_p, schema)  # type: ignore[arg-type]


def first_round_requests(cfg: SweepConfig, tasks: list[EpisodeTask]) -> list[ChatRequest]:
    recorder = Recorder()
    for t in tasks:
        team = [agent_for(cfg, m, recorder) for m in t.group.seats]
        g = t.group
        asyncio.run(run_episode(g.method, team, t.sample, grader_for(t.sample), g.seed, 0, g.dataset.name))
    return recorder.requests


def raw(cfg: SweepConfig, model: str, requests: list[ChatRequest]) -> tuple[int, float]:
    spec = cfg.models[model]
    engine = build_backend(spec.engine, spec.model or model, dict(spec.args))
    t0 = time.perf_counter()
    out = asyncio.run(engine.generate(requests))
    wall = time.perf_counter() - t0
    close = getattr(engine, "close", None)
    if close is not None:
        close()
    return sum(c.completion_tokens for c in out), wall


def framework(cfg: SweepConfig, model: str, tasks: list[EpisodeTask]) -> tuple[int, float]:
    from sweep.engines.actors import start_engines, stop_engines
    from sweep.engines.ray_runtime import init_ray
    from sweep.run.scheduler import run_tasks
    from sweep.store.records import Recorder
    from sweep.store.results import BufferedWriter, ResultStore

    init_ray(cfg.ray.address, cfg.ray.num_cpus)
    backends = start_engines({model: cfg.models[model]})
    try:
        store = ResultStore(Path(tempfile.mkdtemp(prefix="saturation-")))
        with BufferedWriter(store) as writer:
            t0 = time.perf_counter()
            agents = {model: agent_for(cfg, model, backends[model])}
            asyncio.run(run_tasks(tasks, agents, Recorder(writer, "bench", set()), cfg.concurrency))
            wall = time.perf_counter() - t0
    finally:
        stop_engines(backends)
    return int(store.turns()["completion_tokens"].sum()), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="examples/quickstart.yaml")
    ap.add_argument("--items", type=int, default=8)
    ap.add_argument("--m", type=int, default=3, help="seats per episode (first-round calls per item)")
    args = ap.parse_args()
    cfg = bench_config(args.config, args.items, args.m)
    tasks = build_plan(cfg).tasks
    models = {m for t in tasks for m in t.group.seats}
    if len(models) != 1:
        sys.exit("engine_saturation: give a config whose team uses one model")
    model = models.pop()
    requests = first_round_requests(cfg, tasks)
    raw_tokens, raw_wall = raw(cfg, model, requests)
    fw_tokens, fw_wall = framework(cfg, model, tasks)
    raw_tps, fw_tps = raw_tokens / raw_wall, fw_tokens / fw_wall
    print(f"engine {cfg.models[model].engine} model {model}: {len(requests)} first-round prompts")
    print("| path | completion tokens | wall s | tokens/s |\n| --- | --- | --- | --- |")
    print(f"| raw engine batch | {raw_tokens} | {raw_wall:.1f} | {raw_tps:.1f} |")
    print(
        f"| framework ({len(tasks)} concurrent episodes via Ray) | {fw_tokens} | {fw_wall:.1f} | {fw_tps:.1f} |"
    )
    print(f"ratio framework/raw: {fw_tps / raw_tps:.2f}")


if __name__ == "__main__":
    main()
