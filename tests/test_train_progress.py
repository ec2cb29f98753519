"""`sweep train` says what it is doing: a line before the first update, heartbeat lines while
rollouts run (episodes, calls answered and in flight), time per update and an ETA; and it ends with
the exact `sweep run` command that evaluates the policy it wrote, by method name — which runs."""

from __future__ import annotations

import asyncio
import copy
import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from rich.console import Console

from debate.episode import Agent
from sweep.cli import main
from sweep.config.overrides import apply_override
from sweep.train.config import load_train
from sweep.train.next_run import eval_command, yaml_value
from sweep.train.progress import CallMeter, TrainProgress, duration

BASE: dict[str, Any] = {
    "name": "base",
    "output_dir": "OUT",
    "models": {"strong": {"engine": "simulated", "args": {"skill": 0.8}},
               "weak": {"engine": "simulated", "args": {"skill": 0.35}}},
    "agents": ["strong", {"model": "weak", "count": 2}],
    "datasets": [{"name": "arith", "split": "test", "limit": 12}],
    "methods": ["cot", {"name": "rumad", "args": {"budget": 3, "prompt_style": "rumad"}}],
    "rounds": 2,
    "seeds": [0],
    "concurrency": 8,
    "cache": False,
    "tracking": {"enabled": False},
}  # fmt: skip
TRAIN: dict[str, Any] = {
    "name": "t",
    "sweep": "base.yaml",
    "overrides": ["datasets.arith.split=train"],  # by name: the base sweep's own file evaluates on test
    "method": {"name": "rumad", "args": {"budget": 3, "prompt_style": "rumad", "theta_act": 0.6}},
    "policy": {"hidden": 8},
    "ppo": {"updates": 2, "episodes_per_update": 4, "epochs": 1, "minibatches": 2, "seed": 0},
    "checkpoint_every": 1,
    "tracking": {"enabled": False},
}


def write(tmp: Path, base: dict[str, Any] | None = None) -> Path:
    raw = copy.deepcopy(base or BASE)
    raw["output_dir"] = str(tmp / "base_out")
    (tmp / "base.yaml").write_text(yaml.safe_dump(raw))
    (tmp / "train.yaml").write_text(yaml.safe_dump({**TRAIN, "output_dir": str(tmp / "out")}))
    return tmp / "train.yaml"


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def lines(console: Console) -> list[str]:
    return console.export_text(clear=False).splitlines()


def test_heartbeat_lines_come_only_after_silence_and_count_calls_in_flight() -> None:
    clock, console = FakeClock(), Console(record=True, width=300, file=open("/dev/null", "w"))  # noqa: SIM115
    p = TrainProgress(console, updates=10, every_s=30, clock=clock)
    p.begin(1, episodes=64, rounds=6, seats=6)
    assert lines(console) == [
        "update 1/10: collecting rollouts (64 debates of 6 rounds, 6 agents each); a progress line at least every 30 s"
    ]
    p.phase_start("update 1/10: rollouts", 64)
    p.meter.done, p.meter.in_flight = 40, 6
    clock.now += 29.9
    p.tick()
    assert len(lines(console)) == 1  # not yet silent for 30 s
    clock.now += 0.1
    p.on_progress(type("Stats", (), {"done": 3})())
    p.tick()
    assert (
        lines(console)[-1]
        == "update 1/10: rollouts: 3/64 episodes done, 40 calls answered, 6 in flight, 30 s so far"
    )
    p.tick()
    assert len(lines(console)) == 2  # the line just printed resets the silence
    clock.now += 95
    p.tick()
    assert lines(console)[-1].endswith("2m05s so far")


def test_time_per_update_and_eta_from_this_runs_updates() -> None:
    p = TrainProgress(Console(file=open("/dev/null", "w")), updates=10, every_s=30, clock=FakeClock())  # noqa: SIM115
    assert p.updated(3, 20.0) == "20 s/update, ETA 2m20s"  # 7 updates left at 20 s
    assert p.updated(4, 40.0) == "40 s/update, ETA 3m00s"  # the mean of this run's: 30 s x 6
    assert p.updated(10, 1.5) == "1.5 s/update, done"
    assert [duration(s) for s in (0.04, 59.6, 3600 * 2 + 61)] == ["0.0 s", "1m00s", "2h01m"]


def test_the_meter_counts_calls_answered_and_in_flight() -> None:
    meter, gate = CallMeter(), asyncio.Event()

    class Slow:
        async def generate(self, requests: Sequence[Any]) -> list[Any]:
            await gate.wait()
            return [f"re: {r}" for r in requests]

    async def go() -> list[Any]:
        one: Any = Slow()  # only `generate` is asked of a backend here
        agents = meter.metered({"a": Agent("m", one), "b": Agent("m", one), "c": Agent("n", Slow())})
        assert agents["a"].backend is agents["b"].backend and agents["a"].backend is not agents["c"].backend
        call = asyncio.create_task(agents["a"].backend.generate(["x", "y"]))  # type: ignore[list-item]
        await asyncio.sleep(0)
        assert (meter.in_flight, meter.done) == (2, 0)
        gate.set()
        return await call

    assert asyncio.run(go()) == ["re: x", "re: y"] and (meter.in_flight, meter.done) == (0, 2)


def test_train_says_what_it_does_then_prints_a_run_command_that_evaluates_the_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["train", str(write(tmp_path)), "--no-tracking"]) == 0
    out, err = capsys.readouterr()
    progress = [line for line in err.splitlines() if line.startswith("update ")]
    assert progress[0].startswith("update 1/2: collecting rollouts (4 debates of 2 rounds, 3 agents each)")
    assert progress[1].startswith("update 1/2: return") and "/update, ETA " in progress[1]
    assert progress[2].startswith("update 2/2: return") and progress[2].endswith("/update, done")
    command = [
        line.removeprefix("evaluate it: ") for line in out.splitlines() if line.startswith("evaluate it: ")
    ]
    assert len(command) == 1
    argv = shlex.split(command[0])
    policy = tmp_path / "out" / "policy.npz"
    assert argv == ["sweep", "run", str(tmp_path / "base.yaml"), "--set", "methods.rumad.args.theta_act=0.6",
                    "--set", f"methods.rumad.args.checkpoint={policy}"]  # fmt: skip
    assert main([*argv[1:], "--limit", "2", "--out", str(tmp_path / "eval"), "--no-tracking"]) == 0
    episodes = pl.read_parquet(tmp_path / "eval" / "episodes" / "*.parquet")
    specs = [json.loads(s) for s in episodes.filter(pl.col("method") == "rumad")["method_spec"]]
    assert len(specs) == 2 and all(
        s["args"]["checkpoint"] == str(policy) and s["args"]["theta_act"] == 0.6 for s in specs
    )
    assert set(episodes["split"]) == {"test"}  # the base file's own split, not the training's override
    rounds = pl.read_parquet(tmp_path / "eval" / "rounds" / "*.parquet").filter(pl.col("round") > 0)
    assert rounds.height > 0 and all(
        '"mode":"mean"' in d for d in rounds["decision"].to_list()
    )  # the policy's mean ran


def command_for(tmp_path: Path, methods: list[Any]) -> list[str]:
    setup = load_train(write(tmp_path, {**BASE, "methods": methods}))
    return shlex.split(eval_command(setup, tmp_path / "out" / "policy.npz", cwd=tmp_path))


def test_the_entry_that_runs_as_trained_is_picked_by_index_when_the_name_repeats(tmp_path: Path) -> None:
    ablation = {"name": "rumad", "args": {"budget": 3, "activation": False, "prompt_style": "rumad"}}
    same = {"name": "rumad", "args": {"budget": 3, "theta_act": 0.6, "prompt_style": "rumad"}}
    assert command_for(tmp_path, ["cot", same, ablation]) == [
        "sweep", "run", "base.yaml", "--set", "methods.1.args.checkpoint=out/policy.npz"]  # fmt: skip
    assert command_for(tmp_path, ["cot", ablation, BASE["methods"][1]])[4] == "methods.2.args.theta_act=0.6"
    vis = [
        {"name": "rumad", "args": {"budget": 3, "prompt_style": "rumad", "theta_vis": v}} for v in (0.7, 0.3)
    ]
    assert command_for(tmp_path, ["cot", *vis])[4:8:2] == [  # as far from the training each: the last
        "methods.2.args.theta_act=0.6", "methods.2.args.theta_vis=0.5"]  # fmt: skip


def test_a_sweep_without_the_method_runs_the_trained_entry_alone(tmp_path: Path) -> None:
    argv = command_for(tmp_path, ["cot"])
    assert argv[:4] == ["sweep", "run", "base.yaml", "--set"] and len(argv) == 5
    raw = yaml.safe_load((tmp_path / "base.yaml").read_text())
    apply_override(raw, argv[4])
    assert raw["methods"] == [
        {
            "name": "rumad",
            "args": {"budget": 3, "prompt_style": "rumad", "theta_act": 0.6, "checkpoint": "out/policy.npz"},
        }
    ]


def test_values_read_back_as_written() -> None:
    for value in (0.6, 3, True, "rumad", "0.5", "yes", "a: b", "runs/x/policy.npz"):
        assert yaml.safe_load(yaml_value(value)) == value
