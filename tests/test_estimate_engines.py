"""`sweep plan --estimate` for the engine the config names: llama_cpp on the measured CPU curve (wall
time, no GPU), vLLM on the batch curve (GPU-hours), the simulated engine on its latency_s; `--estimate
CURVE` still puts every model on one profile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from actors.batch_curve import BatchCurve
from sweep.cli import main
from sweep.config.sweep import load_config
from sweep.profiles import CPU_PROFILES, CpuCurve, load_profile
from sweep.run.estimate import estimate, hh_mm
from sweep.run.plan import build_plan

ROOT = Path(__file__).resolve().parents[1]
QUICK = ROOT / "examples" / "quickstart.yaml"
VLLM = ROOT / "examples" / "vllm_cpu.yaml"


def _only(figures: dict[str, Any]) -> dict[str, Any]:
    (row,) = figures["models"].values()
    return row


def test_each_engine_gets_its_own_profile() -> None:
    cpu = estimate(load_config(QUICK, ["datasets.0.limit=2"]))
    measured = load_profile(CPU_PROFILES["llama_cpp"])
    assert isinstance(measured, CpuCurve) and measured.engine == "llama_cpp"
    assert _only(cpu)["profile"] == measured.name and _only(cpu)["cpu"]
    assert cpu["gpu_hours"] is None and _only(cpu)["gpu_hours"] is None
    gpu = estimate(load_config(VLLM, ["datasets.0.limit=2"]))
    assert _only(gpu)["profile"] == BatchCurve().name and not _only(gpu)["cpu"]
    assert gpu["gpu_hours"] == _only(gpu)["gpu_hours"] > 0


def test_the_quickstarts_wall_time_derives_from_the_measured_curve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = load_config(QUICK, ["datasets.0.limit=2"])
    plan = build_plan(cfg)
    before = estimate(cfg, plan=plan)
    row, curve = _only(before), load_profile(CPU_PROFILES["llama_cpp"])
    assert isinstance(curve, CpuCurve)
    (spec,) = (cfg.models[m] for m in before["models"])
    k = curve.level(spec.replicas * int(spec.args.get("n_parallel", 1)))
    prompt_rate, completion_rate = curve.in_flight[k]
    reply = min(curve.completion_tokens, spec.sampling.max_tokens)
    assert row["calls"] == plan.calls() and row["in_flight"] == k
    expected = row["calls"] * (row["prompt_tokens_per_call"] / prompt_rate + reply / completion_rate) / k
    assert before["wall_s"] == pytest.approx(expected) and before["wall_s"] > 0

    raw = yaml.safe_load(CPU_PROFILES["llama_cpp"].read_text(encoding="utf-8"))
    raw["in_flight"][k]["completion_tokens_per_s"] = completion_rate / 2  # decoding twice as slow
    slower = tmp_path / "slower.yaml"
    slower.write_text(yaml.safe_dump(raw))
    monkeypatch.setitem(CPU_PROFILES, "llama_cpp", slower)
    after = estimate(cfg, plan=plan)
    assert after["wall_s"] - before["wall_s"] == pytest.approx(row["calls"] * reply / completion_rate / k)


def test_the_simulated_engine_takes_its_latency_per_batch(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "models": {"sim": {"engine": "simulated", "args": {"latency_s": 0.5}}},
                "agents": [{"model": "sim", "count": 3}],
                "datasets": [{"name": "arith", "limit": 4}],
                "methods": [{"name": "fixed", "args": {"topology": "clique"}}],
                "rounds": 2,
                "concurrency": 2,
            }
        )
    )
    figures = estimate(load_config(path))
    # 4 episodes of 3 steps (round 0, 2 update rounds), one batch each; 2 episodes at once: 6 waits.
    assert figures["wall_s"] == pytest.approx(0.5 * 12 / 2)
    assert figures["gpu_hours"] is None and _only(figures)["calls"] == 4 * 3 * 3


def test_more_in_flight_than_measured_gains_nothing_beyond_it() -> None:
    curve = CpuCurve("c", {1: (100.0, 50.0), 2: (80.0, 40.0)}, completion_tokens=10, tokens_per_char=0.25)
    assert [curve.level(n) for n in (1, 2, 3, 16)] == [1, 2, 2, 2]
    assert curve.call_s(2, 80, 40) == pytest.approx(2.0)


def test_cpu_engines_print_wall_time_and_no_gpu_hours(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(QUICK), "--limit", "2", "--estimate"]) == 0
    out = capsys.readouterr().out
    assert "wall time ~" in out and "(hh:mm;" in out and "no GPU" in out
    assert "GPU-hours" not in out
    assert main(["plan", str(VLLM), "--limit", "2", "--estimate"]) == 0
    out = capsys.readouterr().out
    assert "GPU-hours ~" in out and "wall time ~" in out and "no GPU" not in out


def test_a_given_curve_still_overrides_the_engines_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gpu = tmp_path / "gpu.yaml"
    gpu.write_text(yaml.safe_dump({"name": "my-70B-on-8-GPUs", "base_ms": 40.0}))
    assert main(["plan", str(QUICK), "--limit", "2", "--estimate", str(gpu)]) == 0
    out = capsys.readouterr().out
    assert "my-70B-on-8-GPUs" in out and "GPU-hours ~" in out
    cpu = tmp_path / "cpu.yaml"
    cpu.write_text(
        yaml.safe_dump(
            {
                "name": "my-laptop",
                "completion_tokens": 50,
                "tokens_per_char": 0.3,
                "in_flight": {1: {"prompt_tokens_per_s": 200, "completion_tokens_per_s": 20}},
            }
        )
    )
    assert main(["plan", str(VLLM), "--limit", "2", "--estimate", str(cpu)]) == 0
    out = capsys.readouterr().out
    assert "my-laptop" in out and "no GPU" in out and "GPU-hours" not in out


def test_hh_mm() -> None:
    assert [hh_mm(s) for s in (0, 29, 31, 3600 * 2 + 60 * 5 + 20, 100 * 3600)] == [
        "00:00",
        "00:00",
        "00:01",
        "02:05",
        "100:00",
    ]
