"""SIGKILL a `sweep study` driver while one of its trials trains (its first update recorded, its last
not yet), then rerun it: the study ends with the configurations of an uninterrupted run, the killed
trial's training resumes from its checkpoint (not from scratch), and every trial's trained policy is
the uninterrupted run's, weight for weight."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from optuna.trial import TrialState

from debate.policies import checkpoint
from debate.spec import stable_hash
from tests.chaos.test_chaos_study_kill import cmd, study_trials
from tests.conftest import ROOT

pytestmark = pytest.mark.chaos

N_TRIALS, UPDATES = 3, 5


def study_config(tmp: Path, out: str) -> Path:
    """Three CPP trials, one at a time, each training 5 updates of 3 episodes on a slow simulated team
    (about 0.3 s an update), then evaluating its policy on 2 items."""
    base = {
        "models": {"sim": {"engine": "simulated", "args": {"skill": 0.6, "latency_s": 0.15}}},
        "agents": [{"model": "sim", "count": 3}],
        "datasets": [{"name": "arith", "split": "train", "limit": 2, "offset": 20}],
        "methods": ["cot"],
        "rounds": 1,
        "seeds": [0],
        "concurrency": 4,
        "cache": False,  # every call reaches the engine: a resumed training is not fed the killed one's replies
    }
    train = {
        "sweep": "base.yaml",
        "overrides": ["datasets.0.offset=0", "datasets.0.limit=8"],
        "method": {"name": "cpp"},
        "cpp": {"hidden": 8, "behaviour_items": 1, "behaviour_offset": 40},
        "pg": {"updates": UPDATES, "episodes_per_update": 3},
        "eval_every": 0,
        "tracking": {"enabled": False},
    }
    (tmp / "base.yaml").write_text(yaml.safe_dump(base))
    (tmp / "train.yaml").write_text(yaml.safe_dump(train))
    space = {
        "method": "cpp",
        "params": {
            "k": {"type": "float", "low": -1.0, "high": 1.0},
            "lr": {"type": "float", "low": 1e-3, "high": 3e-2, "log": True},
        },
    }
    cfg = {
        "name": "chaos",  # the name `study_trials` loads
        "output_dir": str(tmp / out),
        "sweep": "base.yaml",
        "method": "cpp",
        "search_space": space,
        "sampler": {"name": "random", "args": {"seed": 7}},
        "train": {"config": "train.yaml", "prune": False},
        "n_trials": N_TRIALS,
        "parallel": 1,
        "tracking": {"enabled": False},
    }
    path = tmp / f"{out}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def trial_dir(out: Path, params: dict[str, Any]) -> Path:
    return out / "trials" / stable_hash(params)  # sweep.study.training.trial_training's layout


def history(trial: Path) -> list[dict[str, float]]:
    """Every recorded update's metrics, from the training's `trainer.pt`."""
    state = torch.load(trial / "checkpoints" / "trainer.pt", weights_only=True)
    return list(state["history"])


def mid_training(out: Path) -> int | None:
    """A running trial whose training recorded an update but not its last one (so a kill now leaves
    it mid-training), once another trial finished; its number, else None."""
    trials = study_trials(out)
    if not any(t.state == TrialState.COMPLETE for t in trials):
        return None
    for t in trials:
        if t.state == TrialState.RUNNING and t.params:
            ckpts = trial_dir(out, t.params) / "checkpoints"
            # The last update's policy file lands before its trainer.pt: absent, the last is not recorded.
            if (ckpts / "trainer.pt").is_file() and not (ckpts / f"policy-u{UPDATES:06d}.npz").exists():
                return t.number
    return None


def done(out: Path) -> dict[tuple[tuple[str, Any], ...], str]:
    """The completed trials' params, each with the checkpoint its training handed back."""
    complete = [t for t in study_trials(out) if t.state == TrialState.COMPLETE]
    return {tuple(sorted(t.params.items())): t.user_attrs["checkpoint"] for t in complete}


def without_clock(h: list[dict[str, float]]) -> list[dict[str, float]]:
    return [{k: v for k, v in u.items() if k != "seconds"} for u in h]


def test_a_study_killed_mid_training_resumes_each_training_to_the_uninterrupted_policies(
    tmp_path: Path,
) -> None:
    path, out = study_config(tmp_path, "out"), tmp_path / "out"
    clean_path = study_config(tmp_path, "clean")
    # The uninterrupted run goes on beside the one to kill: the same study in another dir.
    clean = subprocess.Popen(
        cmd(clean_path), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    proc = subprocess.Popen(cmd(path), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, seen = time.monotonic() + 60, None
        while seen is None and time.monotonic() < deadline and proc.poll() is None:
            seen = mid_training(out)
            if seen is not None:
                os.kill(proc.pid, signal.SIGKILL)
            else:
                time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
    try:
        assert seen is not None, "no trial was caught training after another finished"
        killed = study_trials(out)[seen]
        assert killed.state == TrialState.RUNNING and len(done(out)) < N_TRIALS
        where = trial_dir(out, killed.params)
        before = history(where)
        assert 1 <= len(before) < UPDATES and not (where / "policy.npz").exists()  # killed mid-training

        rerun = subprocess.run(cmd(path), cwd=ROOT, capture_output=True, text=True, timeout=120)
        said = rerun.stdout + rerun.stderr
        assert rerun.returncode == 0, said[-3000:]
        clean_said, _ = clean.communicate(timeout=120)
        assert clean.returncode == 0, clean_said[-3000:]
    finally:
        clean.kill()
        clean.wait()

    assert f"trial {seen}: its driver is gone; failed, re-enqueued (a retry of {seen})" in said
    n = len(before)
    assert f"resumed from update {n} (policy-u{n:06d}.npz)" in said
    after = study_trials(out)
    retries = [t for t in after if t.user_attrs.get("retry_of") == seen]
    assert [(r.state, r.params) for r in retries] == [(TrialState.COMPLETE, killed.params)]
    assert after[seen].state == TrialState.FAIL and len(after) == N_TRIALS + 1  # no extra draw
    assert Path(retries[0].user_attrs["checkpoint"]) == where / "policy.npz"
    resumed = history(where)
    assert len(resumed) == UPDATES and resumed[:n] == before  # the killed run's updates, kept as recorded

    got, want = done(out), done(tmp_path / "clean")
    assert len(want) == N_TRIALS and sorted(got) == sorted(want)  # the same configurations
    for params, policy in want.items():
        mine, theirs = checkpoint.load(got[params]), checkpoint.load(policy)
        assert mine.arch == theirs.arch and sorted(mine.weights) == sorted(theirs.weights), params
        for name, weights in theirs.weights.items():
            assert np.array_equal(mine.weights[name], weights), (params, name)
    # The resumed training's curve is the uninterrupted one's, update for update (wall times aside).
    assert without_clock(resumed) == without_clock(history(trial_dir(tmp_path / "clean", killed.params)))
    assert not [p for p in out.glob("trials/*/**/.*.tmp")]  # no temp file a kill cut short is left
