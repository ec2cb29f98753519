"""Studies whose trials train: the space split between reward weights and router arguments, the
config's checks, the median rule on training curves, and (on the session's Ray) a multi-objective
study whose trials train, evaluate their checkpoints, log their curves and Pareto set to MLflow, and
resume as done."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from optuna.trial import TrialState

from sweep.config.sweep import ConfigError
from sweep.study.config import load_study
from sweep.study.storage import open_storage
from sweep.study.training import TrainSpec, should_prune
from sweep.tracking.tracker import read_runs
from sweep.train.pg_config import PGConfig
from tests.conftest import RayHead

BASE: dict[str, Any] = {
    "models": {
        "strong": {"engine": "simulated", "args": {"skill": 0.8}},
        "weak": {"engine": "simulated", "args": {"skill": 0.35}},
    },
    "agents": ["strong", {"model": "weak", "count": 2}],
    "datasets": [{"name": "arith", "split": "train", "limit": 4, "offset": 20}],
    "methods": ["cot"],
    "rounds": 2,
    "cache": False,
}
TRAIN: dict[str, Any] = {
    "sweep": "base.yaml",
    "overrides": ["datasets.0.offset=0", "datasets.0.limit=12"],
    "method": {"name": "rumad", "args": {"budget": 3, "prompt_style": "rumad"}},
    "policy": {"hidden": 16},
    "ppo": {"updates": 4, "episodes_per_update": 8, "epochs": 1, "minibatches": 2},
    "tracking": {"enabled": False},
}
SPACE: dict[str, Any] = {
    "method": "rumad",
    "params": {
        "alpha_sparsity": {"type": "float", "low": 0.0, "high": 0.5},
        "beta_accuracy": {"type": "float", "low": 0.5, "high": 4.0},
        "theta_vis": {"type": "float", "low": 0.2, "high": 0.8},
        "budget": {"type": "int", "low": 2, "high": 6},
    },
}


def write(tmp: Path, space: Any = SPACE, training: dict[str, Any] | None = None, **study: Any) -> Path:
    (tmp / "base.yaml").write_text(yaml.safe_dump(BASE))
    (tmp / "train.yaml").write_text(yaml.safe_dump(training or TRAIN))
    cfg = {
        "name": "ts", "output_dir": str(tmp / "out"), "sweep": "base.yaml", "method": {"name": "rumad", "args": {"prompt_style": "rumad"}},
        "search_space": space, "objectives": ["accuracy", "tokens"], "train": {"config": "train.yaml", "prune_warmup": 2},
        "n_trials": 3, "parallel": 2, "sampler": {"name": "random", "args": {"seed": 0}}, **study,
    }  # fmt: skip
    (tmp / "study.yaml").write_text(yaml.safe_dump(cfg))
    return tmp / "study.yaml"


def test_the_space_splits_into_reward_weights_and_router_arguments(tmp_path: Path) -> None:
    setup = load_study(write(tmp_path))
    assert setup.training is not None and setup.training.cfg.method.args["budget"] == 3
    trial = setup.training.with_params(
        {"alpha_sparsity": 0.2, "budget": 5, "theta_vis": 0.4}, str(tmp_path / "t")
    )
    assert trial.rewards.alpha_sparsity == 0.2 and trial.method.router.budget == 5  # type: ignore[union-attr]
    assert trial.cfg.method.args["theta_vis"] == 0.4 and trial.out == tmp_path / "t"
    assert (
        load_study(write(tmp_path, training={**TRAIN, "policy": {"hidden": 8}})).fingerprint()
        != setup.fingerprint()
    )


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"space": {**SPACE, "params": {"alpha_sparsity": {"type": "float", "low": -1.0, "high": 0.5}}}},
            "reward refuses -1.0",
        ),
        (
            {"space": {**SPACE, "params": {"theta_vis": {"type": "float", "low": 0.2, "high": 1.5}}}},
            "rumad refuses 1.5",
        ),
        (
            {"space": {**SPACE, "params": {"alpha_sparsty": {"type": "float", "low": 0.0, "high": 0.5}}}},
            "no argument 'alpha_sparsty'",
        ),
        ({"pruner": {"name": "median"}, "objectives": ["accuracy"]}, "pruned on their training curve"),
        (
            {"train": {**TRAIN, "method": {"name": "rumad", "args": {"budget": 3}}, "sweep": "other.yaml"}},
            "model 'strong' is not the study's",
        ),
        ({"train_spec": {"config": "train.yaml", "prune_metric": "tokens_per_task"}}, "prune_metric"),
    ],
)
def test_training_studies_are_checked_before_any_trial(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    (tmp_path / "other.yaml").write_text(
        yaml.safe_dump({**BASE, "models": {**BASE["models"], "strong": {"engine": "simulated"}}})
    )
    extra = {k: v for k, v in change.items() if k in ("pruner", "objectives")}
    if "train_spec" in change:
        extra["train"] = change["train_spec"]
    path = write(tmp_path, change.get("space", SPACE), change.get("train"), **extra)
    with pytest.raises(ConfigError, match=message):
        load_study(path)


def test_a_rumad_space_without_training_names_the_reward_weights(tmp_path: Path) -> None:
    path = write(tmp_path)
    raw = yaml.safe_load(path.read_text())
    del raw["train"]
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match="no argument 'alpha_sparsity'"):
        load_study(path)


def test_the_median_rule_on_training_curves() -> None:
    spec = TrainSpec(config="x", prune_warmup=3, prune_window=2, prune_startup_trials=2)
    finished = [[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 1.0, 1.0], [5.0, 5.0, 5.0, 5.0]]
    assert not should_prune(spec, [0.0, 0.0], finished)  # before the warmup
    assert should_prune(spec, [9.0, 0.0, 0.0], finished)  # window (0 + 0)/2 below the median 1.5
    assert not should_prune(spec, [0.0, 1.6, 1.6], finished)  # 1.6 >= median(1.5, 1.0, 5.0) = 1.5
    assert not should_prune(spec, [9.0, 0.0, 0.0], finished[:1])  # too few finished trials
    assert not should_prune(spec.model_copy(update={"prune": False}), [9.0, 0.0, 0.0], finished)


@pytest.mark.ray
@pytest.mark.slow
def test_a_pareto_study_trains_then_evaluates_each_trial(
    tmp_path: Path, ray_driver: RayHead, capsys: pytest.CaptureFixture[str]
) -> None:
    from sweep.study.cli import main

    path = write(tmp_path)
    assert main(["study", str(path)]) == 0
    printed = capsys.readouterr().out
    out = tmp_path / "out"
    study = optuna.load_study(study_name="ts", storage=open_storage(f"journal:{out / 'study.journal'}"))
    done = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert len(study.trials) == 3 and done
    assert all(t.user_attrs["train_activations"] >= 0 for t in done)
    assert f"of {len(done)} complete trials ended silent" in printed.replace("\n", " ")
    for t in done:
        policy = Path(t.user_attrs["checkpoint"])
        assert (
            policy.is_file()
            and policy.parent.parent.name == "trials"
            and len(t.user_attrs["train_curve"]) == 4
        )
        assert t.user_attrs["method_args"]["budget"] == t.params["budget"] and len(t.values) == 2
    runs = read_runs(f"sqlite:///{out / 'mlflow.db'}", "debate-sweep-studies")
    parent = next(r for r in runs if r["tags"].get("debate_sweep.role") == "study")
    children = [r for r in runs if r["parent_run_id"] == parent["run_id"]]
    assert len(children) == 3
    trained = [c for c in children if "objective.accuracy" in c["metrics"]]
    assert trained and all(
        "reward.alpha_sparsity" in c["params"] and "train_curve" in c["metrics"] for c in trained
    )
    assert all(c["params"]["method.args.checkpoint"].endswith("policy.npz") for c in trained)
    capsys.readouterr()
    assert main(["study", str(path)]) == 0  # finished: nothing trained or run again
    assert "episodes: 0 run now; trials finished here: 0" in capsys.readouterr().err
    assert main(["study", str(path), "--best"]) == 0
    best = yaml.safe_load((out / "best.yaml").read_text())
    tuned = [
        m
        for m in best["methods"]
        if isinstance(m, dict) and m["name"] == "rumad" and m["args"].get("checkpoint")
    ]
    assert tuned and all(m["args"]["checkpoint"].endswith("policy.npz") for m in tuned)


CPP_TRAIN: dict[str, Any] = {
    "sweep": "base.yaml",
    "overrides": ["datasets.0.offset=0", "datasets.0.limit=12"],
    "method": {"name": "cpp"},
    "cpp": {"hidden": 8, "behaviour_items": 2, "behaviour_offset": 40},
    "pg": {"updates": 2, "episodes_per_update": 4},
    "eval_every": 0,
    "tracking": {"enabled": False},
}
CPP_SPACE: dict[str, Any] = {
    "method": "cpp",
    "params": {
        "k": {"type": "float", "low": -1.0, "high": 1.0},
        "gamma": {"type": "float", "low": 0.5, "high": 1.0},
        "lr": {"type": "float", "low": 1e-4, "high": 3e-3, "log": True},
        "threshold": {"type": "float", "low": 0.3, "high": 0.7},
    },
}


def test_a_cpp_space_splits_into_reward_pg_and_router_arguments(tmp_path: Path) -> None:
    path = write(tmp_path, CPP_SPACE, CPP_TRAIN, method={"name": "cpp"})
    setup = load_study(path)
    assert setup.training is not None and setup.training.algorithm == "pg"
    trial = setup.training.with_params(
        {"k": -0.5, "gamma": 0.7, "lr": 1e-3, "threshold": 0.6}, str(tmp_path / "t")
    )
    assert trial.rewards.k == -0.5 and trial.rewards.gamma == 0.7 and trial.section("pg", PGConfig).lr == 1e-3
    assert trial.cfg.method.args == {"threshold": 0.6}
    bad = {**CPP_SPACE, "params": {"entropy_decay": {"type": "float", "low": 0.5, "high": 1.5}}}
    with pytest.raises(ConfigError, match="pg refuses 1.5"):
        load_study(write(tmp_path, bad, CPP_TRAIN, method={"name": "cpp"}))


def test_a_cpp_trial_trains_to_the_end_and_hands_back_its_policy(tmp_path: Path) -> None:
    import asyncio

    from rich.console import Console

    from actors.registry import build_backend
    from sweep.engines.pool import build_agents
    from sweep.study.training import train_trial

    setup = load_study(write(tmp_path, CPP_SPACE, CPP_TRAIN, method={"name": "cpp"}))
    assert setup.training is not None and setup.cfg.train is not None
    specs = {m: setup.base.models[m] for m in set(setup.base.team())}
    agents = build_agents(
        specs, {m: build_backend(s.engine, m, dict(s.args)) for m, s in specs.items()}, None
    )
    trial = optuna.create_study(directions=["maximize", "minimize"]).ask()
    params = {"k": 0.2, "gamma": 0.8, "lr": 1e-3, "threshold": 0.5}
    got = asyncio.run(
        train_trial(
            setup.cfg.train, setup.training, tmp_path / "out", trial, params, agents, Console(quiet=True)
        )
    )
    assert got is not None and Path(got).is_file()  # a finished training is not taken for a pruned one
    assert len(trial.user_attrs["train_curve"]) == 2 and trial.user_attrs["reward"]["k"] == 0.2


def test_a_trials_training_dir_is_owned_while_it_trains(tmp_path: Path) -> None:
    import asyncio

    from rich.console import Console

    from sweep.store.ownership import OutputBusy
    from sweep.store.targets import own_dir
    from sweep.study.training import train_trial, trial_training

    setup = load_study(write(tmp_path, CPP_SPACE, CPP_TRAIN, method={"name": "cpp"}))
    assert setup.training is not None and setup.cfg.train is not None
    params = {"k": 0.2, "gamma": 0.8, "lr": 1e-3, "threshold": 0.5}
    trial_dir = trial_training(setup.training, tmp_path / "out", params).out
    held = own_dir(trial_dir, "train", "someone else")  # e.g. `sweep train --out` on the trial's dir
    try:
        trial = optuna.create_study(directions=["maximize", "minimize"]).ask()
        run = train_trial(
            setup.cfg.train, setup.training, tmp_path / "out", trial, params, {}, Console(quiet=True)
        )
        with pytest.raises(OutputBusy, match=f"output_dir {trial_dir}: in use"):
            asyncio.run(run)
    finally:
        held.release()
    assert not (trial_dir / "checkpoints").exists()  # refused before it trained
