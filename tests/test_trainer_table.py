"""The trainers' table (`sweep.train.trainers`): one entry per learned method, registered in the
trainer's own torch-free file; fingerprints as they were before the table (pinned: a run dir made
then still resumes); each trainer's seed in its fingerprint (a resume with another seed is refused
by `sweep train`, one with another trainer's seed is not); a study's training keys the union over the
table; and the shared training code naming no trainer."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from debate.rewards import RewardWeights
from sweep.cli import main
from sweep.study.training import router_args, training_keys
from sweep.train.config import load_train
from sweep.train.pg_config import PGConfig
from sweep.train.ppo_config import PPOConfig
from sweep.train.trainers import TRAINERS, Trainer, all_sections
from tests import test_train, test_train_cpp
from tests.conftest import ROOT

# `setup.fingerprint()` of each, computed at da22f15 (before the table): a change here means every
# existing training of that config is refused on resume. If an example itself changed, re-pin it.
EXAMPLES = {
    ("train_rumad_simulated.yaml", ()): "36b822852d7bb9db",
    ("train_rumad_simulated.yaml", ("ppo.seed=7",)): "d84eedace2c308f8",
    ("train_rumad_simulated.yaml", ("ppo.updates=999", "eval_every=3")): "36b822852d7bb9db",
    ("train_rumad_simulated.yaml", ("reward.alpha_sparsity=0", "ppo.lr=0.001", "policy.hidden=64")): (
        "bfb90d04456343d5"
    ),
    ("train_rumad_simulated.yaml", ("pg.lr=0.5", "cpp.hidden=8")): "36b822852d7bb9db",
    ("train_rumad_simulated.yaml", ("algorithm=ppo",)): "36b822852d7bb9db",
    ("train_rumad_cpu.yaml", ()): "68a204081b55a672",
    ("train_cpp_simulated.yaml", ()): "4723ea3a7de8478d",
    ("train_cpp_simulated.yaml", ("pg.seed=7",)): "4e3a817b25eeb22c",
    ("train_cpp_simulated.yaml", ("pg.updates=999",)): "4723ea3a7de8478d",
    ("train_cpp_simulated.yaml", ("reward.k=0", "pg.first_stage_updates=20", "cpp.hidden=64")): (
        "3923f9866790b7fa"
    ),
    ("train_cpp_simulated.yaml", ("ppo.lr=0.5", "policy.hidden=8")): "4723ea3a7de8478d",
    ("train_cpp_simulated.yaml", ("algorithm=null",)): "fafce78661b63717",  # CPP's keeps `algorithm`
    ("train_cpp_cpu.yaml", ()): "a36d838f665ff758",
    # keys added later (pg.epochs, pg.minibatches, pg.clip), at their defaults: the fingerprint as before
    ("train_cpp_simulated.yaml", ("pg.epochs=1", "pg.minibatches=1", "pg.clip=0")): "4723ea3a7de8478d",
    ("train_cpp_simulated.yaml", ("pg.clip=0.2",)): "569106700175fa5d",
    (
        "train_cpp_main.yaml",
        ("cpp.encoder=hashed",),
    ): "500f0bf394c4a441",  # bench/protocols/cpp-v5-main.yaml's
}
# the same, of the small trainings of tests/test_train.py and tests/test_train_cpp.py (files of their own)
SMALL = {
    ("rumad", ()): "cf0a9b1e390d9789",
    ("rumad", ("ppo.seed=3", "pg.seed=3")): "4098292285db5f84",
    ("rumad", ("reward.alpha_sparsity=0",)): "43f942ef61a4b783",
    ("cpp", ()): "d71aecc6876083b2",
    ("cpp", ("ppo.seed=3", "pg.seed=3")): "58d4dfc6e3c96395",
    ("cpp", ("reward.k=0.25",)): "cfab0f6c2753bc60",
}
SMALL_CONFIGS = {"rumad": test_train, "cpp": test_train_cpp}


@pytest.mark.parametrize("example, sets", list(EXAMPLES))
def test_the_examples_fingerprints_are_what_they_were(
    example: str, sets: tuple[str, ...], tmp_path: Path
) -> None:
    setup = load_train(ROOT / "examples" / example, list(sets), out=str(tmp_path / "out"))
    assert setup.fingerprint() == EXAMPLES[example, sets]


def small(tmp: Path, method: str, **extra: Any) -> Path:
    mod = SMALL_CONFIGS[method]
    (tmp / "base.yaml").write_text(yaml.safe_dump(mod.BASE))
    (tmp / "train.yaml").write_text(yaml.safe_dump({**mod.TRAIN, "output_dir": str(tmp / "out"), **extra}))
    return tmp / "train.yaml"


@pytest.mark.parametrize("method, sets", list(SMALL))
def test_the_small_trainings_fingerprints_are_what_they_were(
    method: str, sets: tuple[str, ...], tmp_path: Path
) -> None:
    assert load_train(small(tmp_path, method), list(sets)).fingerprint() == SMALL[method, sets]


# one update, as small as each trainer goes
ONE_UPDATE = {
    "rumad": {"ppo": {"updates": 1, "episodes_per_update": 2, "epochs": 1, "minibatches": 1, "seed": 0}},
    "cpp": {"pg": {"updates": 1, "episodes_per_update": 2, "seed": 0}, "eval_every": 0},
}


@pytest.mark.parametrize("method, own, other", [("rumad", "ppo", "pg"), ("cpp", "pg", "ppo")])
def test_a_resume_with_another_seed_is_refused(
    method: str, own: str, other: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The seed behind the rollouts is the trainer's own (`setup.seed`), in its fingerprint."""
    path = small(tmp_path, method, **ONE_UPDATE[method])
    assert load_train(path).seed == 0 and load_train(path, [f"{own}.seed=5"]).seed == 5
    assert main(["train", str(path), "--no-tracking"]) == 0
    capsys.readouterr()
    assert (
        main(["train", str(path), "--no-tracking", "--set", f"{own}.seed=5", "--set", f"{own}.updates=2"])
        == 2
    )
    err = capsys.readouterr().err
    assert (
        "checkpoints/trainer.pt: a training of another config" in err and len(err.strip().splitlines()) == 1
    )
    assert (
        main(["train", str(path), "--no-tracking", "--set", f"{other}.seed=5", "--set", f"{own}.updates=2"])
        == 0
    )
    assert "trained 2 updates (1 before this run)" in capsys.readouterr().out


def test_the_table_holds_each_learned_method_once() -> None:
    assert {m: (t.name, t.reward.__name__, sorted(t.sections)) for m, t in TRAINERS.items()} == {
        "rumad": ("ppo", "RewardWeights", ["policy", "ppo"]),
        "cpp": ("pg", "CppReward", ["cpp", "pg"]),
    }
    assert TRAINERS["rumad"].own is PPOConfig and TRAINERS["cpp"].own is PGConfig
    assert sorted(all_sections()) == ["cpp", "pg", "policy", "ppo"]
    keys = training_keys()
    assert set(TRAINERS["rumad"].reward_keys()) | set(TRAINERS["cpp"].reward_keys()) | {"lr"} <= keys
    assert router_args({"alpha_sparsity": 0.1, "k": 0.5, "entropy_decay": 0.9, "theta_act": 0.3}) == {
        "theta_act": 0.3
    }


def test_an_entry_without_its_own_section_seed_or_updates_is_refused() -> None:
    class NoSeed(BaseModel):
        updates: int = 1

    with pytest.raises(TypeError, match="its own section 'x' is not among its sections"):
        Trainer("m", "x", RewardWeights, {"y": NoSeed}, "m")
    with pytest.raises(TypeError, match="section 'x' lacks seed, lr"):
        Trainer("m", "x", RewardWeights, {"x": NoSeed}, "m", tuned=("lr",))


def test_the_config_validates_without_torch() -> None:
    code = "import sys, sweep.train.config as c; c.config_class(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


SHARED = [
    *(ROOT / "sweep" / "study").glob("*.py"),
    *(
        p
        for p in (ROOT / "sweep" / "train").glob("*.py")
        if p.stem not in {"ppo", "pg", "pg_update", "behaviour"}
    ),
]
OWN = {"ppo_config.py", "pg_config.py"}  # each trainer's entry names itself
ALLOWED = {("config.py", "rumad")}  # `method:`'s default, as before the table


def test_the_shared_training_code_names_no_trainer() -> None:
    """No `if algorithm == "ppo"`: a trainer's name, method or section key appears as a string only in
    its own files (ppo.py, pg.py with pg_update.py and behaviour.py, and their `*_config.py` entries)."""
    names = {n for t in TRAINERS.values() for n in (t.method, t.name, *t.sections)}
    found = sorted(
        (p.name, node.value)
        for p in SHARED
        if p.name not in OWN
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and node.value in names
    )
    assert set(found) <= ALLOWED, found
