"""Training configs are validated as strictly as sweep configs: strict whole numbers, finite floats,
seeds in [0, 2**32), bounded sizes, a plain run name and an output dir of its own — each refused at
load (so `sweep train --validate` refuses it, writing nothing) in one line naming the field. Edge
values at the bounds, a study trial's dir and a training's own dir are accepted."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from sweep.cli import main
from sweep.config.sweep import ConfigError
from sweep.study.training import TrainSpec
from sweep.train.config import load_train
from sweep.train.pg_config import CppPolicyConfig, PGConfig
from sweep.train.ppo_config import PolicyConfig, PPOConfig
from tests.conftest import ROOT

RUMAD = ROOT / "examples" / "train_rumad_simulated.yaml"
CPP = ROOT / "examples" / "train_cpp_simulated.yaml"
WHOLE, FINITE, NUMBER = "give a whole number such as 3", "not a finite number", "expected a number"

# (config, the --set overrides, the field the error line starts with, a fragment of what it says)
BAD: list[tuple[Path, list[str], str, str]] = [
    (RUMAD, ["ppo.updates=true"], "ppo.updates", WHOLE),
    (RUMAD, ["ppo.updates=1.0e12"], "ppo.updates", WHOLE),
    (RUMAD, ['ppo.updates="3"'], "ppo.updates", WHOLE),
    (RUMAD, ["ppo.updates=1000001"], "ppo.updates", "less than or equal to 1000000"),
    (RUMAD, ["ppo.episodes_per_update=1.0e12"], "ppo.episodes_per_update", WHOLE),
    (RUMAD, ["ppo.episodes_per_update=100001"], "ppo.episodes_per_update", "100000"),
    (RUMAD, ["ppo.epochs=2.5"], "ppo.epochs", WHOLE),
    (RUMAD, ["ppo.epochs=1001"], "ppo.epochs", "less than or equal to 1000"),
    (RUMAD, ["ppo.minibatches=65"], "ppo.minibatches", "more than ppo.episodes_per_update (64)"),
    (RUMAD, ["ppo.minibatches=true"], "ppo.minibatches", WHOLE),
    (RUMAD, ["ppo.lr=.inf"], "ppo.lr", FINITE),
    (RUMAD, ["ppo.lr=.nan"], "ppo.lr", FINITE),
    (RUMAD, ["ppo.lr=1e999"], "ppo.lr", FINITE),  # text to YAML 1.1: read as a number, then refused
    (RUMAD, ["ppo.lr=true"], "ppo.lr", NUMBER),
    (RUMAD, ["ppo.lr='0.5'"], "ppo.lr", "unquoted"),
    (RUMAD, ["ppo.lr=11"], "ppo.lr", "less than or equal to 10"),
    (RUMAD, ["ppo.value_coef=.inf"], "ppo.value_coef", FINITE),
    (RUMAD, ["ppo.entropy_coef=-.inf"], "ppo.entropy_coef", FINITE),
    (RUMAD, ["ppo.clip=1.0e7"], "ppo.clip", "less than or equal to 1000000"),
    (RUMAD, ["ppo.max_grad_norm=.nan"], "ppo.max_grad_norm", FINITE),
    (RUMAD, ["ppo.target_kl=.inf"], "ppo.target_kl", FINITE),
    (RUMAD, ["ppo.gamma=.nan"], "ppo.gamma", FINITE),
    (RUMAD, ["ppo.seed=-1"], "ppo.seed", "greater than or equal to 0"),
    (RUMAD, ["ppo.seed=4294967296"], "ppo.seed", "less than or equal to 4294967295"),
    (RUMAD, [f"ppo.seed={2**64}"], "ppo.seed", "less than or equal to 4294967295"),
    (RUMAD, ["ppo.seed=true"], "ppo.seed", WHOLE),
    (RUMAD, ["ppo.norm_adv=1"], "ppo.norm_adv", "give true or false"),
    (RUMAD, ["policy.hidden=1.0e9"], "policy.hidden", WHOLE),
    (RUMAD, ["policy.hidden=65537"], "policy.hidden", "less than or equal to 65536"),
    (RUMAD, ["policy.hidden=true"], "policy.hidden", WHOLE),
    (RUMAD, ["policy.log_std_init=.nan"], "policy.log_std_init", FINITE),
    (RUMAD, ["policy.log_std_init=25"], "policy.log_std_init", "less than or equal to 20"),
    (RUMAD, ["reward.alpha_accuracy=.inf"], "reward.alpha_accuracy", FINITE),
    (RUMAD, ["reward.token_scale=.nan"], "reward.token_scale", FINITE),
    (RUMAD, ["reward.beta_accuracy=true"], "reward.beta_accuracy", NUMBER),
    (RUMAD, ["reward.alpha_sparsity=1.0e10"], "reward.alpha_sparsity", "less than or equal to 1000000000"),
    (RUMAD, ["checkpoint_every=0"], "checkpoint_every", "greater than or equal to 1"),
    (RUMAD, ["checkpoint_every=1000001"], "checkpoint_every", "1000000"),
    (RUMAD, ["eval_every=-1"], "eval_every", "greater than or equal to 0"),
    (RUMAD, ["eval_every=1.5"], "eval_every", WHOLE),
    (RUMAD, ["eval_episodes=100001"], "eval_episodes", "100000"),
    (RUMAD, ["eval_episodes=false"], "eval_episodes", WHOLE),
    (RUMAD, ["allow_test_split=1"], "allow_test_split", "give true or false"),
    (RUMAD, ["name=a/b"], "name", "holds '/'"),
    (RUMAD, ["name=a\\b"], "name", "holds '\\\\'"),
    (RUMAD, ["name=.."], "name", "is '..'"),
    (RUMAD, ["name=."], "name", "is '.'"),
    (RUMAD, ['name="  "'], "name", "give a plain name"),
    (RUMAD, ['name=""'], "name", "at least 1 character"),
    (RUMAD, ['name="a\\tb"'], "name", "holds '\\t'"),
    (RUMAD, ['name="a\\0b"'], "name", "holds '\\x00'"),
    (RUMAD, [f"name={'x' * 101}"], "name", "at most 100 characters"),
    (RUMAD, ["name=3"], "name", "give text"),
    (RUMAD, ["output_dir=/etc"], "output_dir", "system location"),
    (RUMAD, ["output_dir=/"], "output_dir", "system location"),
    (RUMAD, ["output_dir=/proc/self"], "output_dir", "system location"),
    (RUMAD, ['output_dir=""'], "output_dir", "empty path"),
    (RUMAD, ['output_dir="{tmp}/a\\0b"'], "output_dir", "NUL"),
    (RUMAD, ["output_dir={tmp}/afile"], "output_dir", "is a file"),
    (RUMAD, ["output_dir={tmp}/foreign"], "output_dir", "already holds other files"),
    (RUMAD, ["output_dir={tmp}/asweep"], "output_dir", "holds a sweep's results, not a training"),
    (RUMAD, ["output_dir={tmp}/astudy"], "output_dir", "holds a study, not a training"),
    (RUMAD, ["output_dir={tmp}/areport"], "output_dir", "holds a sweep report, not a training"),
    (CPP, ["pg.updates=true"], "pg.updates", WHOLE),
    (CPP, ["pg.updates=1000001"], "pg.updates", "1000000"),
    (CPP, ["pg.episodes_per_update=1.0e12"], "pg.episodes_per_update", WHOLE),
    (CPP, ["pg.lr=.inf"], "pg.lr", FINITE),
    (CPP, ["pg.entropy_decay=.nan"], "pg.entropy_decay", FINITE),
    (CPP, ["pg.first_stage_k=.inf"], "pg.first_stage_k", FINITE),
    (CPP, ["pg.first_stage_updates=-1"], "pg.first_stage_updates", "greater than or equal to 0"),
    (CPP, ["pg.first_stage_updates=3.0"], "pg.first_stage_updates", WHOLE),
    (CPP, ["pg.seed=-1"], "pg.seed", "greater than or equal to 0"),
    (CPP, [f"pg.seed={2**64}"], "pg.seed", "4294967295"),
    (CPP, ["pg.norm_returns=0"], "pg.norm_returns", "give true or false"),
    (CPP, ["cpp.hidden=1.0e9"], "cpp.hidden", WHOLE),
    (CPP, ["cpp.hidden=1000000000"], "cpp.hidden", "less than or equal to 65536"),
    (CPP, ["cpp.behaviour_items=10001"], "cpp.behaviour_items", "10000"),
    (CPP, ["cpp.behaviour_items=true"], "cpp.behaviour_items", WHOLE),
    (CPP, ["cpp.behaviour_offset=-1"], "cpp.behaviour_offset", "greater than or equal to 0"),
    (CPP, ["reward.k=.nan"], "reward.k", FINITE),
    (CPP, ["reward.gamma=true"], "reward.gamma", NUMBER),
]


def places(tmp: Path) -> None:
    """A file, a foreign dir and the output dirs of other commands, for output_dir to be pointed at."""
    (tmp / "afile").write_text("not a dir\n")
    for name, marker in (
        ("foreign", "notes.txt"),
        ("asweep", "config.resolved.yaml"),
        ("astudy", "study.journal"),
        ("areport", ".sweep-report"),
    ):
        (tmp / name).mkdir()
        (tmp / name / marker).write_text("x\n")


def snapshot(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def with_out(tmp: Path, sets: list[str]) -> list[str]:
    sets = [s.replace("{tmp}", str(tmp)) for s in sets]
    return sets if any(s.startswith("output_dir=") for s in sets) else [f"output_dir={tmp}/out", *sets]


@pytest.mark.parametrize("config, sets, field, fragment", BAD, ids=[" ".join(b[1])[:60] for b in BAD])
def test_bad_training_configs_name_the_field(
    tmp_path: Path, config: Path, sets: list[str], field: str, fragment: str
) -> None:
    places(tmp_path)
    before = snapshot(tmp_path)
    with pytest.raises(ConfigError) as e:
        load_train(config, with_out(tmp_path, sets))
    line = str(e.value)
    assert len(line.splitlines()) == 1 and line.startswith(f"{field}: "), line
    assert fragment in line, line
    assert snapshot(tmp_path) == before  # nothing written


@pytest.mark.parametrize(
    "config, sets, out, field",
    [
        (RUMAD, ["ppo.updates=true"], "out", "ppo.updates"),
        (RUMAD, ["ppo.minibatches=100"], "out", "ppo.minibatches"),
        (RUMAD, ["policy.log_std_init=.nan"], "out", "policy.log_std_init"),
        (RUMAD, ["name=../up"], "out", "name"),
        (CPP, ["pg.seed=-1"], "out", "pg.seed"),
        (CPP, ["cpp.hidden=1e9"], "out", "cpp.hidden"),
        (CPP, [], "/etc", "output_dir"),
        (RUMAD, [], "asweep", "output_dir"),
    ],
)
def test_sweep_train_validate_refuses_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: Path, sets: list[str], out: str, field: str
) -> None:
    places(tmp_path)
    before = snapshot(tmp_path)
    argv = ["train", str(config), "--validate", "--out", str(tmp_path / out)]
    assert main([*argv, *(a for s in sets for a in ("--set", s))]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}: "), captured.err
    assert captured.out == "" and snapshot(tmp_path) == before


def test_edge_values_are_accepted(tmp_path: Path) -> None:
    top = 2**32 - 1
    sets = [
        f"ppo.seed={top}",
        "ppo.minibatches=64",
        "ppo.episodes_per_update=64",
        "policy.hidden=65536",
        "ppo.updates=1000000",
        "ppo.lr=3e-4",
        "eval_every=0",
        f"name={'n' * 100}",
        f"pg.seed={top}",
        "reward.token_scale=1.0e9",
        "ppo.target_kl=0.02",
        "checkpoint_every=1000000",
    ]
    cfg = load_train(RUMAD, sets, out=str(tmp_path / "out")).cfg
    ppo, pg, policy = (
        cfg.section("ppo", PPOConfig),
        cfg.section("pg", PGConfig),
        cfg.section("policy", PolicyConfig),
    )
    assert (ppo.seed, pg.seed, ppo.minibatches, policy.hidden) == (top, top, 64, 65536)
    assert (
        ppo.lr == 3e-4 and cfg.eval_every == 0 and len(cfg.name) == 100 and cfg.reward["token_scale"] == 1e9
    )
    assert (
        load_train(RUMAD, ["ppo.seed=0"], out=str(tmp_path / "out")).cfg.section("ppo", PPOConfig).seed == 0
    )
    cpp = load_train(
        CPP,
        ["pg.seed=0", "pg.first_stage_updates=0", "cpp.behaviour_items=10000", "cpp.hidden=65536"],
        out=str(tmp_path / "out"),
    ).cfg
    pg, net = cpp.section("pg", PGConfig), cpp.section("cpp", CppPolicyConfig)
    assert (pg.seed, pg.first_stage_updates, net.behaviour_items, net.hidden) == (
        0,
        0,
        10000,
        65536,
    )
    assert not (tmp_path / "out").exists()


def test_validate_accepts_a_good_config_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["train", str(CPP), "--validate", "--out", str(tmp_path / "new")]) == 0
    assert capsys.readouterr().out.startswith("ok: ") and not (tmp_path / "new").exists()


def test_a_trainings_own_dirs_are_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = tmp_path / "own"
    (own / "checkpoints").mkdir(parents=True)
    for name in ("train.resolved.yaml", "config.resolved.yaml", "policy.npz", "checkpoints/trainer.pt"):
        (own / name).write_text("x")
    empty, configs = tmp_path / "empty", tmp_path / "configs"
    empty.mkdir()
    configs.mkdir()
    (configs / "train.yaml").write_text("x")
    (configs / ".gitignore").write_text("x")
    for where in (own, empty, configs):
        assert load_train(RUMAD, out=str(where)).out == where
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    setup = load_train(RUMAD, out="~/runs/t")
    assert setup.cfg.output_dir == setup.base.output_dir == str(tmp_path / "home" / "runs" / "t")


def test_a_study_trials_dir_is_a_trainings(tmp_path: Path) -> None:
    study = tmp_path / "study"
    study.mkdir()
    (study / "study.journal").write_text("{}\n")
    setup = load_train(RUMAD, out=str(tmp_path / "train"))
    trials = study / "trials"
    fresh, resumed, killed, foreign = (trials / h for h in ("a1", "b2", "c3", "d4"))
    for d, files in (
        (resumed, ["checkpoints/trainer.pt", "checkpoints/policy-u000002.npz", "policy.npz"]),
        (killed, ["checkpoints/policy-u000001.npz", "checkpoints/.trainer.pt.tmp"]),
        (foreign, ["checkpoints/policy-u000001.npz", "checkpoints/notes.txt"]),
    ):
        (d / "checkpoints").mkdir(parents=True)
        for f in files:
            (d / f).write_text("x")
    for where in (fresh, resumed, killed):  # killed: before its first trainer.pt landed
        trial = setup.with_params({"alpha_sparsity": 0.2}, str(where))
        assert trial.out == where and trial.rewards.alpha_sparsity == 0.2
    with pytest.raises(ConfigError, match=r"^output_dir: .*d4 already holds other files"):
        setup.with_params({"alpha_sparsity": 0.2}, str(foreign))


@pytest.mark.parametrize(
    "key, value", [("prune_warmup", True), ("prune_window", 1e12), ("prune_startup_trials", 0), ("prune", 1)]
)
def test_a_studys_train_section_is_strict_too(key: str, value: object) -> None:
    with pytest.raises(ValidationError, match=key):
        TrainSpec.model_validate({"config": "train.yaml", key: value})
    assert TrainSpec.model_validate({"config": "train.yaml", "prune_warmup": 1000000}).prune_warmup == 1000000
