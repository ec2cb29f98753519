"""Search spaces: the packaged YAML files, their 1:1 mapping onto Optuna's suggest_* calls, conditional
parameters, and the study config's checks — every bad input one line, exit 2, nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from debate.methods import METHODS, resolve
from search_spaces import SpaceError, load_space, parse_space, sample, space_names
from sweep.config.sweep import ConfigError
from sweep.study.cli import main
from sweep.study.config import load_study
from sweep.study.spaces import check_method
from tests.conftest import ROOT

PEAR_NAMES = {
    "alpha_t",
    "alpha_i",
    "alpha_l",
    "tau_tgt",
    "tau_src",
    "tau_low",
    "beta",
    "selection_temperature",
    "k",
}


def test_packaged_spaces_parse_and_the_registered_ones_match_their_methods() -> None:
    assert {"pear", "random", "fixed", "rumad", "cpp"} <= set(space_names())
    assert set(load_space("pear").names) == PEAR_NAMES
    assert set(resolve("pear", {}).kwargs) >= PEAR_NAMES
    for name in ("pear", "random", "fixed"):
        check_method(load_space(name), name)
    assert load_space("random").names == ("k",)
    cpp = load_space("cpp")
    assert set(cpp.names) == {"k", "a", "round_scale", "beta", "gamma", "lr", "entropy_coef", "entropy_decay"}
    assert {"budget", "theta_act", "theta_vis", "alpha_accuracy"} <= set(load_space("rumad").names)


def test_a_space_for_a_method_that_is_not_registered_fails_loudly() -> None:
    assert "no_such_method" not in METHODS
    with pytest.raises(SpaceError, match="method 'no_such_method' is not registered"):
        space = parse_space(
            {"method": "no_such_method", "params": {"k": {"type": "int", "low": 1, "high": 2}}}, "inline"
        )
        check_method(space, "no_such_method")


class Recorder:
    """A stand-in trial that records each suggest_* call and answers with the low end or first choice."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def suggest_float(
        self, name: str, low: float, high: float, *, step: float | None = None, log: bool = False
    ) -> float:
        self.calls.append(("float", name, low, high, step, log))
        return low

    def suggest_int(self, name: str, low: int, high: int, *, step: int = 1, log: bool = False) -> int:
        self.calls.append(("int", name, low, high, step, log))
        return low

    def suggest_categorical(self, name: str, choices: Any) -> Any:
        self.calls.append(("categorical", name, tuple(choices)))
        return choices[0]


CONDITIONAL = {
    "method": "cpp",
    "params": {
        "entropy_coef": {"type": "float", "low": 0.0001, "high": 0.1, "log": True},
        "truncate": {"choices": [False, True]},
        "truncate_quantile": {"type": "float", "low": 0.5, "high": 0.95, "when": {"truncate": True}},
    },
}


def test_sample_maps_one_to_one_onto_suggest_calls_and_skips_inactive_conditions() -> None:
    rec = Recorder()
    sample(load_space("cpp"), rec)
    assert rec.calls[2] == ("float", "round_scale", 1.0, 2.0, 0.25, False)
    assert rec.calls[6] == ("float", "entropy_coef", 0.0001, 0.1, None, True)
    rec = Recorder()
    chosen = sample(parse_space(CONDITIONAL), rec)
    assert rec.calls[1] == ("categorical", "truncate", (False, True))
    assert "truncate_quantile" not in chosen and len(rec.calls) == 2  # truncate=False: condition off
    raw = {"method": "random", "params": {"k": {"type": "int", "low": 1, "high": 9, "step": 2}}}
    rec = Recorder()
    assert sample(parse_space(raw), rec) == {"k": 1}
    assert rec.calls == [("int", "k", 1, 9, 2, False)]


def test_sample_drives_a_real_optuna_trial_with_matching_distributions() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    study.enqueue_trial({"truncate": True})
    trial = study.ask()
    chosen = sample(parse_space(CONDITIONAL), trial)
    assert chosen["truncate"] is True and 0.5 <= chosen["truncate_quantile"] <= 0.95
    d = trial.distributions
    assert d["entropy_coef"] == FloatDistribution(0.0001, 0.1, log=True)
    assert d["truncate"] == CategoricalDistribution([False, True])
    cpp_trial = optuna.create_study().ask()
    sample(load_space("cpp"), cpp_trial)
    assert cpp_trial.distributions["round_scale"] == FloatDistribution(1.0, 2.0, step=0.25)
    pear_trial = optuna.create_study().ask()
    sample(load_space("pear"), pear_trial)
    assert pear_trial.distributions["tau_src"] == IntDistribution(1, 5)
    assert pear_trial.distributions["selection_temperature"] == FloatDistribution(0.05, 2.0, log=True)


@pytest.mark.parametrize(
    ("param", "message"),
    [
        ({"type": "float", "low": 1.0, "high": 0.5}, "low 1.0 > high 0.5; swap them"),
        ({"type": "float", "low": 0.0, "high": 1.0, "log": True}, "log: true needs low > 0"),
        (
            {"type": "float", "low": 0.1, "high": 1.0, "log": True, "step": 0.1},
            "step and log: true cannot be combined",
        ),
        ({"type": "int", "low": 1.5, "high": 3}, "low must be an integer"),
        (
            {"type": "float", "low": 0.0, "high": 1.0, "stepp": 0.1},
            "unknown key 'stepp' (did you mean 'step'?)",
        ),
        ({"low": 0.0, "high": 1.0}, "type must be float or int"),
        ({"choices": []}, "choices must be a non-empty list"),
        ({"choices": [1, 1]}, "choices repeat a value"),
        ({"type": "float", "low": 0, "high": 1, "when": {"later": 1}}, "not a parameter declared above it"),
    ],
)
def test_bad_parameters_are_one_line_errors_naming_the_field(param: dict[str, Any], message: str) -> None:
    with pytest.raises(SpaceError) as e:
        parse_space({"method": "random", "params": {"k": param}}, "space.yaml")
    text = str(e.value)
    assert message in text and text.startswith("space.yaml: params.k") and "\n" not in text


def test_method_checks_name_the_argument_and_the_factorys_refusal() -> None:
    typo = parse_space({"method": "pear", "params": {"alpah_t": {"type": "float", "low": 0, "high": 1}}})
    with pytest.raises(SpaceError, match="has no argument 'alpah_t' \\(did you mean 'alpha_t'\\?\\)"):
        check_method(typo, "pear")
    too_high = parse_space({"method": "pear", "params": {"beta": {"type": "float", "low": 0.5, "high": 1.5}}})
    with pytest.raises(SpaceError, match="pear refuses 1.5"):
        check_method(too_high, "pear")
    when = parse_space({"method": "fixed", "params": {"topology": {"choices": ["ring", "clique"]}}})
    with pytest.raises(SpaceError, match="this space is for 'fixed'"):
        check_method(when, "random")
    with pytest.raises(SpaceError, match="also fixed in the study's method.args"):
        check_method(load_space("random"), "random", {"k": 2})


def study_file(tmp: Path, space: Any = "random", **extra: Any) -> Path:
    base = {
        "models": {"m": {"engine": "simulated"}},
        "agents": [{"model": "m", "count": 3}],
        "datasets": [{"name": "arith", "split": "train", "limit": 2}],
        "methods": ["cot"],
    }
    (tmp / "base.yaml").write_text(yaml.safe_dump(base))
    cfg = {
        "name": "s",
        "output_dir": str(tmp / "out"),
        "sweep": "base.yaml",
        "method": "random",
        "search_space": space,
        **extra,
    }
    (tmp / "study.yaml").write_text(yaml.safe_dump(cfg))
    return tmp / "study.yaml"


@pytest.mark.parametrize(
    ("space", "extra", "message"),
    [
        (
            {"method": "random", "params": {"kk": {"type": "int", "low": 1, "high": 2}}},
            {},
            "has no argument 'kk'",
        ),
        ({"method": "random", "params": {"k": {"type": "int", "low": 3, "high": 1}}}, {}, "low 3 > high 1"),
        (
            "random",
            {"overrides": ["datasets.0.split=test"]},
            "datasets[0].split: 'test' is the held-out test split",
        ),
        (
            "random",
            {"objectives": ["accuracy", "tokens"], "pruner": "wilcoxon"},
            "pruner: Optuna prunes single-objective",
        ),
        ("random", {"objectives": ["accuracy", "tokens"], "sampler": "cmaes"}, "cmaes is single-objective"),
        ("random", {"objectives": ["acuracy"]}, "unknown objective 'acuracy' (did you mean 'accuracy'?)"),
        (
            "random",
            {"sampler": {"name": "tpe", "args": {"n_startup": 3}}},
            "sampler 'tpe' has no argument 'n_startup'",
        ),
        ("random", {"n_trails": 3}, "unknown study key (did you mean 'n_trials'?)"),
        ("nope", {}, "is neither a file nor a packaged space"),
    ],
)
def test_bad_studies_exit_2_with_one_line_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], space: Any, extra: dict[str, Any], message: str
) -> None:
    code = main(["study", str(study_file(tmp_path, space, **extra))])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1 and err.startswith("error: ")
    assert not (tmp_path / "out").exists()


def test_the_real_command_refuses_a_bad_space_before_any_trial(tmp_path: Path) -> None:
    bad = {"method": "random", "params": {"k": {"type": "int", "low": 4, "high": 2}}}
    cmd = [sys.executable, "-m", "sweep.study.cli", "study", str(study_file(tmp_path, bad))]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0 and "low 4 > high 2; swap them" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_test_split_needs_allow_and_the_examples_validate(tmp_path: Path) -> None:
    setup = load_study(study_file(tmp_path, overrides=["datasets.0.split=test"], allow_test_split=True))
    assert setup.base.datasets[0].split == "test"
    assert setup.storage_url() == f"journal:{tmp_path / 'out' / 'study.journal'}"
    for name in ("study_pear_simulated", "study_random_simulated", "study_pear_cpu"):
        setup = load_study(ROOT / "examples" / f"{name}.yaml")
        assert all(d.split != "test" for d in setup.base.datasets)
        assert setup.base.methods[0].name == setup.cfg.method.name


def test_best_before_any_trial_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["study", str(study_file(tmp_path)), "--best"]) == 2
    assert "no study journal" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="overrides: 'datasets.5' is not an index|'5' is not an index"):
        load_study(study_file(tmp_path, overrides=["datasets.5.limit=2"]))


def test_a_study_resumed_or_summarised_from_another_config_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rich.console import Console

    from sweep.study.runner import StudyRunner

    path = study_file(tmp_path)
    StudyRunner(load_study(path), Console(stderr=True))  # creates the study in its journal; no Ray
    assert (tmp_path / "out" / "study.journal").is_file()
    for extra in (["--base-set", "datasets.0.limit=3"], ["--base-set", "rounds=3", "--best"]):
        assert main(["study", str(path), *extra]) == 2
        assert "was created from another base sweep" in capsys.readouterr().err
    assert main(["study", str(path), "--best"]) == 1  # the right config: there is just no trial yet
    assert "has no completed trial yet" in capsys.readouterr().err
