"""`sweep train`: the config's checks, GAE, a training that learns what its reward asks, exact resume
(in-process, and after a real SIGKILL of `sweep train` on the session's Ray), MLflow's run with every
metric and the checkpoints as artifacts, `runs:/` checkpoint URIs, and `sweep run` evaluating a
checkpoint with the same episodes twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import torch
import yaml

from debate.methods import build_method
from debate.policies import checkpoint as ckpt
from sweep.config.sweep import ConfigError
from sweep.engines.pool import local_agents as pool_agents
from sweep.train.config import TrainSetup, load_train
from sweep.train.ppo import gae, train
from tests.conftest import ROOT, RayHead, sweep_cmd

BASE: dict[str, Any] = {
    "models": {
        "strong": {"engine": "simulated", "args": {"skill": 0.8}},
        "weak": {"engine": "simulated", "args": {"skill": 0.35}},
    },
    "agents": ["strong", {"model": "weak", "count": 2}],
    "datasets": [{"name": "arith", "split": "train", "limit": 12}],
    "methods": ["cot"],
    "rounds": 2,
    "concurrency": 8,
    "cache": False,
}
TRAIN: dict[str, Any] = {
    "name": "t",
    "sweep": "base.yaml",
    "method": {"name": "rumad", "args": {"budget": 3, "prompt_style": "rumad"}},
    "policy": {"hidden": 16},
    "ppo": {"updates": 3, "episodes_per_update": 8, "epochs": 2, "minibatches": 2, "seed": 0},
    "checkpoint_every": 2,
    "tracking": {"enabled": False},
}


def write(tmp: Path, base: dict[str, Any] | None = None, **train_cfg: Any) -> Path:
    (tmp / "base.yaml").write_text(yaml.safe_dump(base or BASE))
    cfg = {**TRAIN, "output_dir": str(tmp / "out"), **train_cfg}
    (tmp / "train.yaml").write_text(yaml.safe_dump(cfg))
    return tmp / "train.yaml"


def local_agents(setup: TrainSetup) -> dict[str, Any]:
    """The base sweep's agents on in-process simulated backends (no Ray)."""
    return pool_agents(setup.base)


def same_weights(a: Path, b: Path) -> bool:
    wa, wb = ckpt.load(str(a)).weights, ckpt.load(str(b)).weights
    return wa.keys() == wb.keys() and all(np.array_equal(wa[k], wb[k]) for k in wa)


def curve(history: list[dict[str, float]]) -> list[dict[str, float]]:
    return [{k: v for k, v in h.items() if k != "seconds"} for h in history]


def train_here(path: Path, *sets: str, out: Path | None = None) -> Any:
    setup = load_train(path, list(sets), [], str(out) if out else None)
    return train(setup, local_agents(setup))


@pytest.mark.parametrize(
    "sets, message",
    [
        (["ppo.lrr=0.1"], "did you mean 'lr'"),
        (["method.name=fixed"], "no trainable policy"),
        (["method.args.checkpoint=x.npz"], "method.args.checkpoint"),
        (["reward.alpha_acuracy=1"], "did you mean 'alpha_accuracy'"),
        (["reward.alpha_sparsity=-1"], "alpha_sparsity must be"),
        (["ppo.epochs=0"], "ppo.epochs"),
        (["policy.head=cauchy"], "unknown head"),
        (["method.args.theta_act=2"], "theta_act must be in"),
    ],
)
def test_bad_training_configs_are_one_line_errors(tmp_path: Path, sets: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_train(write(tmp_path), sets)


def test_the_test_split_and_zero_rounds_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="held-out test split"):
        load_train(write(tmp_path), [], ["datasets.0.split=test"])
    with pytest.raises(ConfigError, match="rounds >= 1"):
        load_train(write(tmp_path), [], ["rounds=0"])
    from sweep.cli import main

    assert main(["train", str(write(tmp_path)), "--set", "ppo.clip=0", "--validate"]) == 2
    assert main(["train", str(write(tmp_path)), "--validate"]) == 0


def test_the_sweep_command_loads_torch_only_to_train() -> None:
    code = "import sys, sweep.cli, sweep.train.config, sweep.study.runner; assert 'torch' not in sys.modules"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_gae_hand_computed() -> None:
    rewards, values = np.array([1.0, 0.0, 2.0, 0.5]), np.array([0.5, 0.2, 1.0, 0.0])
    ends = np.array([False, True, False, True])  # two episodes of two steps
    g, lam = 0.9, 0.8
    d1, d0 = 0.0 - 0.2, 1.0 + g * 0.2 - 0.5  # episode 1: the last step is terminal
    d3, d2 = 0.5 - 0.0, 2.0 + g * 0.0 - 1.0
    expect = [d0 + g * lam * d1, d1, d2 + g * lam * d3, d3]
    np.testing.assert_allclose(gae(rewards, values, ends, g, lam), expect)


def test_a_resumed_training_ends_where_an_uninterrupted_one_does(tmp_path: Path) -> None:
    path = write(tmp_path)
    first = train_here(path, "ppo.updates=2")
    assert first.resumed_from == 0 and len(first.history) == 2
    more = train_here(path, "ppo.updates=5")  # the same dir: goes on from update 2
    assert more.resumed_from == 2 and [h["update"] for h in more.history] == [1, 2, 3, 4, 5]
    straight = train_here(path, "ppo.updates=5", out=tmp_path / "straight")
    assert same_weights(straight.policy, more.policy)  # the same policy, bit for bit
    assert curve(straight.history) == curve(more.history)
    kept = sorted(p.name for p in (tmp_path / "out" / "checkpoints").glob("policy-u*.npz"))
    assert kept == ["policy-u000002.npz", "policy-u000004.npz", "policy-u000005.npz"]
    final = ckpt.load(str(tmp_path / "out" / "policy.npz"))
    assert final.digest == more.digest and final.provenance["update"] == 5
    assert final.provenance["train_config"]["ppo"]["updates"] == 5 and final.arch["horizon"] == 2
    with pytest.raises(ConfigError, match="another config"):
        train_here(path, "ppo.updates=6", "ppo.lr=0.001")


def test_the_mean_policy_is_evaluated_and_the_best_kept(tmp_path: Path) -> None:
    out = train_here(write(tmp_path, eval_every=1, eval_episodes=4), "ppo.updates=3")
    evals = [h["eval.return"] for h in out.history]
    assert all(
        k in out.history[0]
        for k in ("eval.accuracy", "eval.tokens_per_task", "eval.activations", "eval.reward.accuracy")
    )
    best = ckpt.load(str(out.best))
    assert best.provenance["update"] == max(range(1, 4), key=lambda u: (evals[u - 1], u))
    plain = train_here(
        write(tmp_path), "ppo.updates=3", out=tmp_path / "plain"
    )  # evaluating changes nothing else
    assert same_weights(plain.policy, out.policy) and plain.best is None


def test_training_pursues_its_reward(tmp_path: Path) -> None:
    """Rewarded only for sparsity, the policy learns to show fewer edges: a sign error in the policy
    loss (or advantages that ignore the reward) makes this fail."""
    zero = {k: 0.0 for k in ("alpha_accuracy", "beta_accuracy", "alpha_consensus", "beta_consensus",
                             "alpha_progress", "alpha_efficiency", "beta_efficiency", "alpha_improvement",
                             "beta_improvement")}  # fmt: skip
    ppo = {**TRAIN["ppo"], "updates": 12, "episodes_per_update": 16, "lr": 0.003}
    path = write(tmp_path, reward={**zero, "alpha_sparsity": 1.0}, ppo=ppo)
    history = train_here(path).history
    edges = [h["visible_edges_per_round"] for h in history]
    assert np.mean(edges[-3:]) < 0.5 * np.mean(edges[:3]), edges
    assert all(h["reward.accuracy"] == 0 and h["reward.sparsity"] < 0 for h in history)


def test_mlflow_run_metrics_artifacts_and_runs_uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow import MlflowClient

    from sweep.train.tracking import TrainTracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    path = write(tmp_path, tracking={"experiment": "train-test"})
    setup = load_train(path, ["ppo.updates=2"])
    first = train(setup, local_agents(setup), TrainTracker(uri, setup))
    setup = load_train(path, ["ppo.updates=3"])
    out = train(setup, local_agents(setup), TrainTracker(uri, setup))  # resumed: logs into the same run
    assert out.run_id == first.run_id
    client = MlflowClient(uri)
    for key in ("return", "reward.accuracy", "reward.consensus", "reward.progress", "reward.efficiency",
                "reward.improvement", "reward.sparsity", "accuracy", "tokens_per_task", "activations",
                "budget", "entropy", "approx_kl", "clip_frac", "value_loss"):  # fmt: skip
        assert [m.step for m in client.get_metric_history(out.run_id, key)] == [1, 2, 3], key
    names = {a.path for a in client.list_artifacts(out.run_id)} | {
        a.path for d in ("checkpoints", "plots") for a in client.list_artifacts(out.run_id, d)
    }
    assert {"policy.npz", "checkpoints/policy-u000002.npz", "plots/training_curves.png"} <= names
    assert client.get_run(out.run_id).data.params["ppo.lr"] == "0.0001"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("DEBATE_SWEEP_CACHE", str(tmp_path / "cache"))
    remote = build_method("rumad", {"checkpoint": f"runs:/{out.run_id}/policy.npz"})
    local = build_method("rumad", {"checkpoint": str(out.policy)})
    assert remote.spec.identity() == local.spec.identity()
    with pytest.raises(ValueError, match="not found in"):
        build_method("rumad", {"checkpoint": f"runs:/{out.run_id}/nothing.npz"})


def test_the_beta_head_trains(tmp_path: Path) -> None:
    out = train_here(write(tmp_path), "policy.head=beta", "ppo.updates=2")
    assert ckpt.load(str(out.policy)).arch["head"] == "beta" and np.isfinite(out.history[-1]["approx_kl"])
    assert "log_std" not in out.history[-1]
    assert torch.get_num_threads() == 1  # a policy this small runs on one thread


def kill_mid_training(cmd: list[str], out: Path) -> None:
    """Start `sweep train` and SIGKILL it once it has recorded an update and is running the next."""
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = out / "checkpoints" / "trainer.pt"
    deadline = time.time() + 900  # start-up alone can take minutes at load average 20

    def mid_training() -> bool:
        return state.exists() and torch.load(state, weights_only=True)["update"] >= 2

    while time.time() < deadline and not mid_training():
        assert proc.poll() is None, "the training finished before it could be interrupted"
        time.sleep(0.2)
    assert mid_training(), "no second update recorded within 900 s"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.ray
@pytest.mark.slow
def test_sigkill_mid_training_then_rerun_resumes_to_the_same_policy(
    tmp_path: Path, ray_head: RayHead
) -> None:
    base = {
        **BASE,
        "models": {m: {**s, "args": {**s["args"], "latency_s": 0.1}} for m, s in BASE["models"].items()},
    }
    path = write(tmp_path, base=base, ppo={**TRAIN["ppo"], "updates": 8})
    cmd = sweep_cmd("train", str(path), "--address", ray_head.address, "--no-tracking")
    kill_mid_training(cmd, tmp_path / "out")
    done = torch.load(tmp_path / "out" / "checkpoints" / "trainer.pt", weights_only=True)["update"]
    assert 2 <= done < 8
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"resumed from update {done}" in proc.stderr
    resumed = ckpt.load(str(tmp_path / "out" / "policy.npz"))
    straight = train_here(path, out=tmp_path / "straight")  # in-process, never interrupted
    assert (
        same_weights(tmp_path / "out" / "policy.npz", straight.policy) and resumed.provenance["update"] == 8
    )


@pytest.mark.ray
@pytest.mark.slow
def test_sweep_run_evaluates_a_checkpoint_with_the_same_episodes_twice(
    tmp_path: Path, ray_driver: RayHead
) -> None:
    from sweep.config.sweep import validate
    from sweep.run.runner import run_sweep

    policy = train_here(write(tmp_path), "ppo.updates=1").policy
    other = train_here(write(tmp_path), "ppo.updates=1", "ppo.seed=1", out=tmp_path / "other").policy

    def evaluate(out: str, *refs: Path) -> pl.DataFrame:
        methods = [
            {"name": "rumad", "args": {"checkpoint": str(r), "budget": 3, "prompt_style": "rumad"}}
            for r in refs
        ]
        cfg = validate({
            **{k: v for k, v in BASE.items() if k != "methods"}, "output_dir": str(tmp_path / out),
            "datasets": [{"name": "arith", "split": "test", "limit": 4}], "seeds": [3], "methods": methods,
            "tracking": {"enabled": False}, "ray": {"address": ray_driver.address},
        })  # fmt: skip
        run_sweep(cfg)
        turns = pl.read_parquet(tmp_path / out / "turns" / "*.parquet")
        return turns.select("episode_id", "round", "agent", "text", "prompt_tokens").sort(
            "episode_id", "round", "agent"
        )

    both, again = evaluate("a", policy, other), evaluate("b", policy)
    ids = set(again["episode_id"])
    assert (
        both.filter(pl.col("episode_id").is_in(ids)).equals(again)
        and again.filter(pl.col("round") > 0).height > 0
    )
    assert both["episode_id"].n_unique() == 2 * len(ids)  # the other checkpoint: other ids
    rounds = pl.read_parquet(tmp_path / "b" / "rounds" / "*.parquet").filter(pl.col("round") > 0)
    assert all('"mode":"mean"' in d for d in rounds["decision"].to_list())


def test_a_tracking_mapping_without_an_experiment_still_logs_with_the_trainings() -> None:
    from sweep.train.config import config_class

    config = config_class()
    assert config(sweep="x", tracking={"enabled": True}).tracking.experiment == "debate-sweep-training"
    assert config(sweep="x", tracking={"experiment": "mine"}).tracking.experiment == "mine"
