"""A study never runs one configuration twice because of a restart or a second driver: the sampler
draws by (study seed, trial slot), a killed trial is retried once with its params and takes no new
slot, and `sweep study` owns its output dir like the other writers. In process, simulated engine."""

from __future__ import annotations

import io
import socket
import subprocess
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from optuna.trial import Trial, TrialState
from rich.console import Console

from search_spaces import sample
from sweep.engines.pool import EnginePool
from sweep.study.config import StudySetup, load_study
from sweep.study.runner import StudyRunner
from sweep.study.seeding import ABANDONED, KILLS, RETRY_OF, SLOT
from sweep.study.storage import StudyLock, abandon, open_study, recover_stale

SPACE = {
    "method": "pear",
    "params": {
        "alpha_t": {"type": "float", "low": 0.0, "high": 1.0},
        "k": {"type": "int", "low": 1, "high": 2},
    },
}
SAMPLERS = {
    "tpe": {"name": "tpe", "args": {"seed": 3}},  # n_startup_trials 10: every draw here is a startup draw
    "random": {"name": "random", "args": {"seed": 3}},
    "nsga2": {"name": "nsga2", "args": {"seed": 3, "population_size": 8}},
    "cmaes": {"name": "cmaes", "args": {"seed": 3}},
    "unseeded": {"name": "random", "args": {"seed": None}},
}


def write_study(tmp: Path, sampler: str = "tpe") -> Path:
    """A base sweep of three simulated agents on two arith items, and a PEAR study over it."""
    base = {
        "models": {"sim": {"engine": "simulated"}},
        "agents": [{"model": "sim", "count": 3}],
        "datasets": [{"name": "arith", "split": "train", "limit": 2}],
        "methods": ["cot"],
        "rounds": 1,
        "seeds": [0],
    }
    (tmp / "base.yaml").write_text(yaml.safe_dump(base))
    cfg = {
        "name": "t",
        "output_dir": str(tmp / "out"),
        "sweep": "base.yaml",
        "method": "pear",
        "search_space": SPACE,
        "sampler": SAMPLERS[sampler],
        "parallel": 1,
        "tracking": {"enabled": False},
    }
    (tmp / "study.yaml").write_text(yaml.safe_dump(cfg))
    return tmp / "study.yaml"


def setup_for(path: Path, n_trials: int, out: Path) -> StudySetup:
    return load_study(path, sets=[f"n_trials={n_trials}"], out=str(out))


def run_study(setup: StudySetup) -> str:
    """Run the study in this process as a fresh driver would (a new sampler object); its console."""
    console = Console(file=io.StringIO(), width=200)
    runner = StudyRunner(setup, console)
    with EnginePool(setup.base, setup.base.team(), None, console) as pool:
        runner.run(pool.agents, pool.simulated)
    return str(console.file.getvalue())  # type: ignore[attr-defined]


def dead_driver() -> dict[str, Any]:
    """The driver record of a process that has exited, as `recover_stale` finds a killed driver's."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return {"host": socket.gethostname(), "pid": proc.pid, "started": None}


def ask_and_die(setup: StudySetup, draw: bool = True) -> Trial:
    """A driver that asks a trial (drawing its params, or not yet) and is killed while it runs."""
    lock = StudyLock(setup.out / f".{setup.cfg.name}.lock")
    study = open_study(setup, lock)
    with lock:
        trial = study.ask()
        trial.set_user_attr("driver", dead_driver())
    if draw:
        sample(setup.space, trial)
    return trial


def completed(out: Path) -> list[tuple[tuple[str, Any], ...]]:
    return sorted(tuple(sorted(t.params.items())) for t in trials(out) if t.state == TrialState.COMPLETE)


def trials(out: Path) -> list[optuna.trial.FrozenTrial]:
    from sweep.study.storage import open_storage

    return optuna.load_study(study_name="t", storage=open_storage(f"journal:{out / 'study.journal'}")).trials


@pytest.mark.parametrize("sampler", list(SAMPLERS))
def test_two_drivers_asking_in_turn_draw_distinct_params(tmp_path: Path, sampler: str) -> None:
    setup = setup_for(write_study(tmp_path, sampler), 6, tmp_path / "out")
    lock = StudyLock(setup.out / ".t.lock")
    drivers = [open_study(setup, lock), open_study(setup, lock)]  # two processes' studies and samplers
    drawn = []
    for i in range(6):
        study = drivers[i % 2]
        with lock:
            trial = study.ask()
        params = sample(setup.space, trial)
        study.tell(trial, params["alpha_t"])  # values for the samplers that learn from them
        drawn.append(tuple(sorted(params.items())))
    assert len(set(drawn)) == 6, drawn
    assert sorted(t.system_attrs[SLOT] for t in trials(setup.out)) == list(range(6))


@pytest.mark.parametrize("sampler", ["tpe", "random"])
def test_a_killed_trial_is_retried_once_and_the_study_ends_with_the_uninterrupted_params(
    tmp_path: Path, sampler: str
) -> None:
    path = write_study(tmp_path, sampler)
    run_study(setup_for(path, 5, tmp_path / "clean"))
    want = completed(tmp_path / "clean")
    assert len(set(want)) == 5

    cut = tmp_path / "cut"
    run_study(setup_for(path, 2, cut))  # two trials finished, then a driver is killed mid-trial
    dead = ask_and_die(setup_for(path, 5, cut))
    said = run_study(setup_for(path, 5, cut))  # the rerun: a fresh driver, a fresh sampler
    assert f"trial {dead.number}: its driver is gone; failed, re-enqueued (a retry of {dead.number})" in said

    assert completed(cut) == want  # the same configurations, none twice, none lost
    after = trials(cut)
    assert (
        after[dead.number].state == TrialState.FAIL and after[dead.number].user_attrs[ABANDONED] == "killed"
    )
    retries = [t for t in after if t.user_attrs.get(RETRY_OF) == dead.number]
    assert len(retries) == 1 and retries[0].state == TrialState.COMPLETE
    assert retries[0].params == dead.params and retries[0].user_attrs[KILLS] == 1
    assert len(after) == 6  # 5 complete and the killed one: no extra trial drawn


def test_a_retry_killed_again_is_failed_and_not_retried_a_second_time(tmp_path: Path) -> None:
    path = write_study(tmp_path)
    setup = setup_for(path, 1, tmp_path / "out")
    first = ask_and_die(setup)
    lock = StudyLock(setup.out / ".t.lock")
    study = open_study(setup, lock)
    with lock:
        (recovered,) = recover_stale(study, set(), 600.0)
        assert recovered.retry == first.number
        retry = study.ask()  # the retry, popped by a driver that dies on it again
        retry.set_user_attr("driver", dead_driver())
    assert sample(setup.space, retry) == first.params and retry.user_attrs[KILLS] == 1

    said = run_study(setup)
    assert (
        f"warning: trial {retry.number}: its driver died again running a retry; failed, not retried" in said
    )
    after = trials(setup.out)
    assert [t.state for t in after] == [TrialState.FAIL, TrialState.FAIL, TrialState.COMPLETE]
    assert after[retry.number].user_attrs["error"] == "its driver died twice on these params"
    assert after[2].params != first.params and after[2].system_attrs[SLOT] == 1  # slot 0 was drawn


def test_an_interrupted_retry_keeps_its_one_retry_after_a_kill(tmp_path: Path) -> None:
    setup = setup_for(write_study(tmp_path), 1, tmp_path / "out")
    trial = ask_and_die(setup)
    study = open_study(setup, StudyLock(setup.out / ".t.lock"))
    assert abandon(study, trial, "interrupted", retry=True) == trial.number  # Ctrl-C: no kill counted
    with StudyLock(setup.out / ".t.lock"):
        again = study.ask()
        again.set_user_attr("driver", dead_driver())
    assert again.user_attrs == {**again.user_attrs, RETRY_OF: trial.number, KILLS: 0}
    with StudyLock(setup.out / ".t.lock"):
        (recovered,) = recover_stale(study, set(), 600.0)
    assert recovered.retry == trial.number  # the first kill on these params: retried
    waiting = study.get_trials(states=(TrialState.WAITING,))
    assert [t.user_attrs[KILLS] for t in waiting] == [1]


def test_a_trial_killed_before_it_drew_gives_its_slot_to_the_next_trial(tmp_path: Path) -> None:
    path = write_study(tmp_path)
    run_study(setup_for(path, 1, tmp_path / "clean"))
    setup = setup_for(path, 1, tmp_path / "out")
    ask_and_die(setup, draw=False)
    said = run_study(setup)
    assert "trial 0: its driver went before it drew params; failed, its slot drawn anew" in said
    after = trials(setup.out)
    assert [t.state for t in after] == [TrialState.FAIL, TrialState.COMPLETE]
    assert after[1].system_attrs[SLOT] == 0 and completed(setup.out) == completed(tmp_path / "clean")


def test_a_study_refuses_an_output_dir_holding_a_sweep_or_one_it_cannot_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sweep.study.cli import main

    path = write_study(tmp_path)
    sweep_dir = tmp_path / "sweep-out"
    (sweep_dir / "episodes").mkdir(parents=True)
    (sweep_dir / "config.resolved.yaml").write_text("name: s\n")
    assert main(["study", str(path), "--out", str(sweep_dir), "--no-tracking"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: output_dir: {sweep_dir} holds a sweep's results, not a study;")
    assert err.count("\n") == 1 and sorted(p.name for p in sweep_dir.iterdir()) == [
        "config.resolved.yaml",
        "episodes",
    ]

    (tmp_path / "a-file").write_text("")
    below_a_file = tmp_path / "a-file" / "out"
    assert main(["study", str(path), "--out", str(below_a_file), "--no-tracking"]) == 2
    err = capsys.readouterr().err
    # the wording is sweep.config.paths' (which path it names, the dir or the file below it, is its to say)
    assert (
        err.startswith("error: output_dir: cannot ")
        and str(tmp_path / "a-file") in err
        and err.count("\n") == 1
    )


@pytest.mark.parametrize("name", ["../../x", "a/b", "..", "tab\there"])
def test_a_study_name_that_would_place_its_lock_file_elsewhere_is_refused(tmp_path: Path, name: str) -> None:
    from sweep.config.errors import ConfigError

    path = write_study(tmp_path)
    with pytest.raises(ConfigError, match=r"^name: .*give a plain name"):
        load_study(path, sets=[f"name={name}"], out=str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_a_study_dir_reads_as_a_study_before_the_base_sweeps_config_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A driver joining at this moment checks the dir's kind: had the base sweep's config come first,
    # it would read a sweep's results and refuse to join (seen once in a four-driver run).
    import sweep.run.runner
    from sweep.store.targets import dir_kind
    from sweep.study.cli import main

    seen: list[str | None] = []

    def cut_short(cfg: Any, out: Path) -> None:
        seen.append(dir_kind(out))
        raise RuntimeError("cut short here")

    monkeypatch.setattr(sweep.run.runner, "write_resolved_config", cut_short)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="cut short here"):
        main(["study", str(write_study(tmp_path)), "--out", str(out), "--no-tracking"])
    assert seen == ["study"] and dir_kind(out) == "study"
    assert (
        yaml.safe_load((out / "study.resolved.yaml").read_text())["name"]
        == load_study(write_study(tmp_path), out=str(out)).cfg.name
    )
