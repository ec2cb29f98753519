"""SIGKILL a `sweep study` driver in the middle of a trial, then rerun it: the study ends with the same
configurations as an uninterrupted run — the killed trial retried once with its params, no
configuration drawn twice (the sampler draws by trial slot, not by process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from optuna.trial import TrialState

from sweep.study.storage import open_storage
from tests.conftest import ROOT

pytestmark = pytest.mark.chaos

N_TRIALS = 4


def study_config(tmp: Path, out: str) -> Path:
    """Four PEAR trials on a slow simulated team (about two seconds each), one at a time. No call
    cache: with one, every trial after the first replays the first's calls (these trials' graphs are
    alike) in about 0.1 s, a window the poller below can miss."""
    base = {
        "models": {"sim": {"engine": "simulated", "args": {"latency_s": 0.15}}},
        "agents": [{"model": "sim", "count": 3}],
        "datasets": [{"name": "arith", "split": "train", "limit": 3}],
        "methods": ["cot"],
        "rounds": 2,
        "seeds": [0],
        "concurrency": 1,
        "cache": False,
    }
    (tmp / "base.yaml").write_text(yaml.safe_dump(base))
    space = {"method": "pear", "params": {"alpha_t": {"type": "float", "low": 0.0, "high": 1.0}}}
    cfg = {
        "name": "chaos",
        "output_dir": str(tmp / out),
        "sweep": "base.yaml",
        "method": "pear",
        "search_space": space,
        "sampler": {"name": "tpe", "args": {"seed": 7}},
        "n_trials": N_TRIALS,
        "parallel": 1,
        "tracking": {"enabled": False},
    }
    path = tmp / f"{out}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def study_trials(out: Path) -> list[optuna.trial.FrozenTrial]:
    if not (out / "study.journal").exists():
        return []
    try:
        storage = open_storage(f"journal:{out / 'study.journal'}")
        return optuna.load_study(study_name="chaos", storage=storage).trials
    except KeyError:  # the journal exists, the study not yet
        return []


def done_params(out: Path) -> list[Any]:
    return sorted(t.params["alpha_t"] for t in study_trials(out) if t.state == TrialState.COMPLETE)


def cmd(path: Path) -> list[str]:
    return [sys.executable, "-m", "sweep.study.cli", "study", str(path), "--no-tracking"]


def test_a_study_killed_mid_trial_resumes_to_the_uninterrupted_configurations(tmp_path: Path) -> None:
    path, out = study_config(tmp_path, "out"), tmp_path / "out"
    proc = subprocess.Popen(cmd(path), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline, seen = time.monotonic() + 300, None
    while seen is None and time.monotonic() < deadline and proc.poll() is None:
        states = {t.number: (t.state, bool(t.params)) for t in study_trials(out)}
        running = [n for n, s in states.items() if s == (TrialState.RUNNING, True)]
        if running and (TrialState.COMPLETE, True) in states.values():
            os.kill(proc.pid, signal.SIGKILL)  # a trial done, the next one drawn and running
            seen = running[0]
        time.sleep(0.1)
    if seen is None:
        proc.kill()
    proc.wait()
    assert seen is not None, "no trial was running after another finished"
    killed = study_trials(out)[seen]
    assert killed.state == TrialState.RUNNING and len(done_params(out)) < N_TRIALS

    rerun = subprocess.run(cmd(path), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert (
        f"trial {seen}: its driver is gone; failed, re-enqueued (a retry of {seen})"
        in rerun.stdout + rerun.stderr
    )
    clean = subprocess.run(
        cmd(study_config(tmp_path, "clean")), cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert clean.returncode == 0, clean.stderr[-3000:]

    want = done_params(tmp_path / "clean")
    assert len(want) == len(set(want)) == N_TRIALS
    assert done_params(out) == want  # the same configurations: none drawn twice, none lost
    after = study_trials(out)
    assert after[seen].state == TrialState.FAIL
    retries = [t for t in after if t.user_attrs.get("retry_of") == seen]
    assert [(r.state, r.params) for r in retries] == [(TrialState.COMPLETE, killed.params)]
    assert len(after) == N_TRIALS + 1  # the killed trial, and no extra draw
