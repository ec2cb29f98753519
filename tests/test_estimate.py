"""The throughput model: continuous batching's timing on a step curve, and `sweep plan --estimate`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from actors.base import ChatRequest, Completion, Message
from actors.batch_curve import BatchCurve, BatchingEngine
from sweep.cli import main
from sweep.config.sweep import load_config
from sweep.run.estimate import estimate
from sweep.run.plan import build_plan

ROOT = Path(__file__).resolve().parents[1]
# 1 ms per step whatever the batch: a step count is a time.
FLAT = BatchCurve(
    base_ms=1.0, per_seq_ms=0.0, per_prefill_token_ms=0.0, per_context_token_ms=0.0, max_num_seqs=2
)


def timed(lengths: list[int], curve: BatchCurve = FLAT) -> tuple[list[int], list[int]]:
    """(finish step of each request, batch size per step) when all arrive at once."""
    engine = BatchingEngine(curve)

    async def one(n: int) -> None:
        request = ChatRequest((Message("user", "x"),), max_tokens=n)
        await engine.serve([request], [Completion("r", 0, 0)])

    async def run() -> None:
        # each reply is exactly `n` tokens: the curve's mean, no spread
        engine._length = lambda c, max_tokens: max_tokens  # type: ignore[method-assign]
        await asyncio.gather(*(one(n) for n in lengths))
        engine.close()

    asyncio.run(run())
    # The engine's own record: a waiter may resume a step or more later on a busy machine.
    finished = engine.meter.ends
    return finished, [n for _, n in sorted(engine.meter.tokens.items())]


def test_a_sequence_takes_one_step_per_token_and_frees_its_slot_at_once() -> None:
    finished, _ = timed([3, 5, 2])  # two slots: the third joins when the first (3 tokens) leaves
    assert finished == [3, 5, 5]


def test_step_time_grows_with_batch_prefill_and_context() -> None:
    c = BatchCurve()
    assert c.step_s(2, 0, 0) > c.step_s(1, 0, 0)
    assert c.step_s(1, 500, 0) > c.step_s(1, 0, 0) and c.step_s(1, 0, 10_000) > c.step_s(1, 0, 0)
    sat = c.saturated(500, 300)
    assert sat["output_tokens_per_s"] == pytest.approx(c.max_num_seqs / sat["step_s"])
    assert sat["requests_per_s"] == pytest.approx(sat["output_tokens_per_s"] / 300)


def test_the_estimate_scales_with_the_curve(tmp_path: Path) -> None:
    cfg = load_config(ROOT / "examples" / "simulated.yaml", ["datasets.0.limit=3"])
    plan = build_plan(cfg)
    base = estimate(cfg, BatchCurve(), plan)  # a curve given: every model on it, as --estimate CURVE
    slow = BatchCurve(base_ms=11.0, per_seq_ms=0.04, per_prefill_token_ms=0.03, per_context_token_ms=0.00008)
    assert base["calls"] == plan.calls() and base["episodes"] == len(plan.tasks) == 30
    rows = base["models"].values()
    assert base["prompt_tokens"] == sum(r["calls"] * r["prompt_tokens_per_call"] for r in rows) > 0
    assert estimate(cfg, slow, plan)["gpu_hours"] == pytest.approx(2 * base["gpu_hours"])
    assert base["gpu_hours"] == pytest.approx(sum(r["calls"] / r["requests_per_s"] / 3600 for r in rows))


def test_plan_estimate_refuses_a_bad_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = str(ROOT / "examples" / "simulated.yaml")
    bad = tmp_path / "curve.yaml"
    bad.write_text(yaml.safe_dump({"base_ms": 5, "max_batch": 8}))
    assert main(["plan", config, "--estimate", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "max_batch" in err[0] and "max_num_seqs" in err[0]
    bad.write_text(yaml.safe_dump({"name": "cpu", "in_flight": {1: {"prompt_tokens_per_s": 0}}}))
    assert main(["plan", config, "--estimate", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --estimate") and "in_flight.1" in err[0]
