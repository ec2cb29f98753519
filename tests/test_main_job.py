"""The main job as `make run` runs it — `examples/quickstart.yaml` on the embedded llama.cpp engine,
hosted in its Ray actor — cut to one item, one round and short replies: every turn's tokens are the
engine's own counts (the same request sent to the engine in this process gives the same text and the
same counts, so the seed reached the engine and nothing was estimated)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import polars as pl
import pytest

from actors.base import ChatRequest
from actors.registry import build_backend
from data.benchmarks.registry import load_benchmark
from debate import prompts
from debate.critique import answer_property, structured_schema
from sweep.config.sweep import load_config
from sweep.engines.pool import build_agents
from sweep.run.runner import run_sweep

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.cpu_model, pytest.mark.ray, pytest.mark.slow]


def test_one_item_of_the_main_job_through_the_ray_actor(tmp_path: Path, ray_driver: object) -> None:
    overrides = [
        "datasets.0.limit=1", "rounds=1", "models.smol.sampling.max_tokens=48", "cache=false",
        "tracking.enabled=false", "methods=[{name: fixed, args: {topology: clique}}]",
        f"ray.address={ray_driver.address}",  # type: ignore[attr-defined]
    ]  # fmt: skip
    cfg = load_config(ROOT / "examples" / "quickstart.yaml", overrides, str(tmp_path / "out"))
    out = run_sweep(cfg)
    assert out.stats is not None and out.stats.done == 1 and not out.stats.failures
    turns = pl.read_parquet(tmp_path / "out" / "turns" / "*.parquet").sort("round", "phase", "agent")
    assert turns.height == 6  # 3 agents answer, then 3 updates
    assert (turns["prompt_tokens"] > 100).all() and (turns["completion_tokens"] > 0).all()
    assert (turns["completion_tokens"] <= 48).all()
    assert turns["seed"].n_unique() == 6

    # The first agent's round-0 call, rebuilt and sent again to the same engine built in this process:
    # same seed, same text, and the counts the engine reports, so the sweep's numbers are the engine's.
    first = turns.row(0, named=True)
    assert (first["round"], first["agent"], first["phase"]) == (0, 0, "initial")
    spec = cfg.models["smol"]
    local = build_backend(spec.engine, spec.model or "smol", dict(spec.args))
    agent = build_agents({"smol": spec}, {"smol": local}, None)["smol"]
    sample = load_benchmark(cfg.datasets[0].name, cfg.datasets[0].split, limit=1)[0]
    request = ChatRequest(
        messages=prompts.initial_messages(sample, 0, "pear"),
        max_tokens=agent.max_tokens,
        temperature=agent.temperature,
        top_p=agent.top_p,
        seed=first["seed"],
        json_schema=structured_schema(
            "initial", (), agent.json_schema, "pear", answer_property(sample.kind, len(sample.choices))
        ),
    )
    (again,) = asyncio.run(local.generate([request]))
    assert again.text == first["text"]
    assert (again.prompt_tokens, again.completion_tokens) == (
        first["prompt_tokens"],
        first["completion_tokens"],
    )
