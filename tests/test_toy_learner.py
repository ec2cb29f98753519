"""A third learned router from its own files alone (`tests/toy_learner.py`: router, network shapes,
reward, config section, program) plus the three registrations CONTRIBUTING.md's "Add a trainer"
lists: `load_train` accepts a config naming it and its section, refuses a bad value of the section in
one line naming `hill.<key>`, fingerprints it (its own section without `updates`, none of the other
trainers'), and `sweep train` trains it on the simulated engine, resumes it, and refuses a resume
with another seed. Without the registrations the same config is refused: nothing else knows it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from actors.registry import build_backend
from data.grading.graders import grader_for
from debate.episode import run_episode
from debate.methods import build_method
from debate.policies import checkpoint as ckpt
from debate.policies.shapes import NETWORKS
from debate.registry import METHODS
from sweep.cli import main
from sweep.config.sweep import ConfigError
from sweep.engines.pool import build_agents
from sweep.train.config import load_train
from sweep.train.rollouts import training_items
from sweep.train.trainers import TRAINERS
from tests import toy_learner
from tests.toy_learner import HillConfig, ToyReward

BASE: dict[str, Any] = {
    "models": {
        "strong": {"engine": "simulated", "args": {"skill": 0.8}},
        "weak": {"engine": "simulated", "args": {"skill": 0.35}},
    },
    "agents": ["strong", {"model": "weak", "count": 2}],
    "datasets": [{"name": "arith", "split": "train", "limit": 8}],
    "methods": ["cot"],
    "rounds": 2,
    "concurrency": 4,
    "cache": False,
}
TRAIN: dict[str, Any] = {
    "name": "toy",
    "sweep": "base.yaml",
    "method": {"name": "toy", "args": {"keep": 0.5}},
    "hill": {"updates": 2, "episodes_per_update": 3, "lr": 2.0, "seed": 0},
    "reward": {"edge_cost": 0.02},
    "checkpoint_every": 1,
    "eval_every": 0,
    "tracking": {"enabled": False},
}


@pytest.fixture
def toy() -> Iterator[None]:
    toy_learner.register()
    yield
    toy_learner.unregister()
    assert "toy" not in METHODS and "toy" not in TRAINERS and "toy" not in NETWORKS


def write(tmp: Path, **extra: Any) -> Path:
    (tmp / "base.yaml").write_text(yaml.safe_dump(BASE))
    (tmp / "train.yaml").write_text(yaml.safe_dump({**TRAIN, "output_dir": str(tmp / "out"), **extra}))
    return tmp / "train.yaml"


def test_without_its_registrations_the_toy_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="hill: unknown training key; remove it"):
        load_train(write(tmp_path))
    no_section = {k: v for k, v in TRAIN.items() if k != "hill"}
    (tmp_path / "bare.yaml").write_text(yaml.safe_dump({**no_section, "output_dir": str(tmp_path / "out")}))
    with pytest.raises(ConfigError, match="method: 'toy' has no trainable policy; trainable: cpp, rumad"):
        load_train(tmp_path / "bare.yaml")


def test_load_train_takes_the_toy_and_its_section_from_the_table(toy: None, tmp_path: Path) -> None:
    setup = load_train(write(tmp_path))
    assert setup.trainer is toy_learner.TRAINER and setup.algorithm == "hill"
    assert setup.section("hill", HillConfig).episodes_per_update == 3
    assert (setup.updates, setup.seed, setup.rewards) == (2, 0, ToyReward(edge_cost=0.02))
    assert setup.method.router == toy_learner.ToyRouter(keep=0.5)


@pytest.mark.parametrize(
    "sets, message",
    [
        (["hill.lr=-1"], "hill.lr: Input should be greater than 0; raise it"),
        (
            ["hill.lrr=1"],
            "hill.lrr: unknown training key (did you mean 'lr'?); remove it or fix its spelling",
        ),
        (["hil.lr=1"], "hil: unknown training key (did you mean 'hill'?); remove it or fix its spelling"),
        (["hill.seed=true"], "hill.seed: Input should be a valid integer"),
        (["reward.edge_cost=-1"], "edge_cost must be >= 0"),
        (
            ["reward.alpha_sparsity=1"],
            "reward: unknown reward weight 'alpha_sparsity'; known: accuracy, edge_cost",
        ),
        (["algorithm=ppo"], "algorithm: 'ppo' does not train toy; it trains with 'hill'"),
        (["ppo.lr=-1"], "ppo.lr: Input should be greater than 0"),  # another trainer's: validated, unused
        (["method.args.keep=2"], "toy: keep must be in [0, 1]"),
        (
            ["method.args.checkpoint=p.npz"],
            "training starts from a fresh network seeded by hill.seed; remove it",
        ),
    ],
)
def test_a_bad_toy_config_is_one_line(toy: None, tmp_path: Path, sets: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_train(write(tmp_path), sets)
    assert "\n" not in str(e.value) and message in str(e.value), str(e.value)


def test_the_toys_fingerprint_is_its_own_section_and_reward(toy: None, tmp_path: Path) -> None:
    path = write(tmp_path)
    fp = load_train(path).fingerprint()
    assert fp == load_train(path, ["hill.updates=9", "ppo.lr=0.5", "pg.seed=4", "eval_every=3"]).fingerprint()
    for changed in ("hill.seed=1", "hill.lr=0.1", "reward.edge_cost=0.5", "method.args.keep=0.2"):
        assert load_train(path, [changed]).fingerprint() != fp, changed


def test_sweep_train_trains_the_toy_resumes_it_and_refuses_another_seed(
    toy: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path)
    fp = load_train(path).fingerprint()
    assert main(["train", str(path), "--validate"]) == 0
    assert f"(toy, fingerprint {fp})" in capsys.readouterr().out
    assert main(["train", str(path), "--no-tracking"]) == 0
    out, err = capsys.readouterr()
    assert "trained 2 updates (0 before this run)" in out and "update 2/2: keep" in err
    policy = ckpt.load(str(tmp_path / "out" / "policy.npz"), "toy")  # its kind, checked by its shapes
    assert policy.arch == {"kind": "toy"} and policy.provenance["fingerprint"] == fp
    assert policy.provenance["train_config"]["hill"]["updates"] == 2
    assert not np.array_equal(policy.weights["logit"], np.zeros(1, np.float32))  # the update moved it

    assert main(["train", str(path), "--no-tracking", "--set", "hill.seed=1"]) == 2
    err = capsys.readouterr().err
    assert "a training of another config (base sweep, method, reward or hill)" in err

    assert main(["train", str(path), "--no-tracking", "--set", "hill.updates=3", "--set", "pg.seed=9"]) == 0
    out, err = capsys.readouterr()
    assert "resumed from update 2" in err and "trained 3 updates (2 before this run)" in out
    assert "evaluate it: sweep run" in out and '"name": "toy"' in out


def test_the_trained_checkpoint_drives_the_toy_router(toy: None, tmp_path: Path) -> None:
    """The method evaluation runs (`toy {checkpoint: ...}`): its chance is the trained one, its ids
    hash the checkpoint's content, and an episode routes with it."""
    path = write(tmp_path)
    assert main(["train", str(path), "--no-tracking"]) == 0
    policy = str(tmp_path / "out" / "policy.npz")
    logit = float(ckpt.load(policy, "toy").weights["logit"][0])
    method = build_method("toy", {"checkpoint": policy})
    assert method.router.chance == pytest.approx(1 / (1 + np.exp(-logit))) != 0.5  # type: ignore[union-attr]
    assert method.spec.identity()["args"]["checkpoint"].startswith("sha:")
    setup = load_train(path)
    specs = {m: setup.base.models[m] for m in set(setup.base.team())}
    agents = build_agents(
        specs, {m: build_backend(s.engine, m, dict(s.args)) for m, s in specs.items()}, None
    )
    _, sample = training_items(setup)[0]
    team = [agents[m] for m in setup.base.team()]
    result = asyncio.run(run_episode(method, team, sample, grader_for(sample), 0, 2, "arith"))
    records = [rec.decision.record for rec in result.trajectory[1:] if rec.decision is not None]
    assert len(records) == 2 and all(r["keep"] == method.router.chance for r in records)  # type: ignore[union-attr]
