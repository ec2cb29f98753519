"""`sweep study` says how far it is: trials done of n, the best so far, time per trial and an ETA after
each trial, a line when the console was silent for a while, and a note when every completed trial
scored the same. In process, simulated engine, fake clocks where time shows."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Literal

import optuna
import pytest
import yaml
from optuna.distributions import IntDistribution
from optuna.trial import TrialState, create_trial
from rich.console import Console

from sweep.cli import main
from sweep.study.progress import StudyProgress, tie_notes


class FakeClock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def study_of(
    *values: float | None, directions: tuple[Literal["maximize", "minimize"], ...] = ("maximize",)
) -> optuna.Study:
    """An in-memory study whose trials scored `values` (None: pruned), each taking 20 s."""
    study = optuna.create_study(directions=list(directions))
    for i, v in enumerate(values):
        state = TrialState.PRUNED if v is None else TrialState.COMPLETE
        study.add_trial(create_trial(
            state=state, values=None if v is None else [v] * len(directions), params={"k": i % 3 + 1},
            distributions={"k": IntDistribution(1, 3)}, user_attrs={"seconds": 20.0 + 10 * i},
        ))  # fmt: skip
    return study


def console() -> Console:
    return Console(file=io.StringIO(), width=300)


def test_after_each_trial_the_count_the_best_so_far_and_an_eta() -> None:
    p = StudyProgress(
        console(), n_trials=7, parallel=2, objectives=["accuracy"], every_s=30, clock=FakeClock()
    )
    study = study_of(0.5, 0.75, None)
    trials = study.get_trials()
    assert (
        p.told(study, trials[0]) == "trials 3/7: best accuracy 0.75 (trial 1) | 20 s/trial, ETA 40 s"
    )  # 2 waves of 2
    assert p.told(study, trials[2]) == "trials 3/7: best accuracy 0.75 (trial 1) | 30 s/trial, ETA 1m00s"
    study = study_of(0.5, 0.75, None, 0.25, 0.5, 0.5, 0.5)
    assert p.told(study, study.get_trials()[-1]).endswith("/trial, done")
    pruned = study_of(None)
    assert "no trial completed yet" in p.told(pruned, pruned.get_trials()[0])
    pareto = study_of(0.5, 0.6, directions=("maximize", "minimize"))
    assert "Pareto set of 2 trial(s)" in StudyProgress(console(), 4, 1, ["accuracy", "tokens"], 30).told(
        pareto, pareto.get_trials()[0]
    )


def test_a_line_when_silent_while_trials_run() -> None:
    clock, out = FakeClock(), console()
    p = StudyProgress(out, n_trials=4, parallel=2, objectives=["accuracy"], every_s=30, clock=clock)
    clock.now += 29
    p.tick(running=2, episodes=17)
    assert out.file.getvalue() == ""  # type: ignore[attr-defined]
    clock.now += 1
    p.tick(running=0, episodes=17)
    assert out.file.getvalue() == ""  # type: ignore[attr-defined]  # nothing running: nothing to say
    p.tick(running=2, episodes=17)
    assert out.file.getvalue() == "study: 2 trial(s) running, 17 episodes run so far, 30 s since start\n"  # type: ignore[attr-defined]
    p.tick(running=2, episodes=18)
    assert out.file.getvalue().count("\n") == 1  # type: ignore[attr-defined]


def test_a_tie_is_named_only_when_every_completed_trial_scored_the_same() -> None:
    assert tie_notes(study_of(0.7, 0.7, None, 0.7).get_trials(), ["accuracy"]) == [
        "all 3 trials scored accuracy 0.7: the objective does not separate these parameters; run more items or "
        "seeds (e.g. --base-set datasets.0.limit=200, --base-set 'seeds=[0,1,2]')"
    ]
    assert tie_notes(study_of(0.7, 0.75).get_trials(), ["accuracy"]) == []
    assert tie_notes(study_of(0.7, None).get_trials(), ["accuracy"]) == []  # one completed trial ties nothing
    two = study_of(0.7, 0.7, directions=("maximize", "minimize"))
    assert [n.split(":")[0] for n in tie_notes(two.get_trials(), ["accuracy", "tokens"])] == [
        "all 2 trials scored accuracy 0.7", "all 2 trials scored tokens 0.7"]  # fmt: skip


def test_a_study_whose_trials_tie_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Round 0 only: random routing's k changes nothing, so every trial scores the same."""
    base = {"models": {"sim": {"engine": "simulated"}}, "agents": [{"model": "sim", "count": 3}],
            "datasets": [{"name": "arith", "split": "train", "limit": 3}], "methods": ["cot"], "rounds": 0, "seeds": [0]}  # fmt: skip
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    study = {"name": "t", "output_dir": str(tmp_path / "out"), "sweep": "base.yaml", "method": "random",
             "search_space": {"method": "random", "params": {"k": {"type": "int", "low": 1, "high": 2}}},
             "sampler": {"name": "random", "args": {"seed": 0}}, "n_trials": 3, "parallel": 1,
             "tracking": {"enabled": False}}  # fmt: skip
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study))
    assert main(["study", str(tmp_path / "study.yaml")]) == 0
    out, err = capsys.readouterr()
    progress = [line for line in err.splitlines() if line.startswith("trials ")]
    assert [line.split(":")[0] for line in progress] == ["trials 1/3", "trials 2/3", "trials 3/3"]
    assert (
        "/trial, ETA " in progress[0]
        and progress[-1].endswith("/trial, done")
        and "best accuracy" in progress[-1]
    )
    ties = [line for line in out.splitlines() if line.startswith("all 3 trials scored accuracy")]
    assert len(ties) == 1 and "does not separate these parameters" in ties[0]
