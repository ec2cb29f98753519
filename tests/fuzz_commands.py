"""Generated bad inputs for `tests/test_command_fuzz.py`: `sweep train`, `sweep report` and `sweep view`.

Each `Case` (the sweep config corpus's type, `tests/fuzz_cases.py`) holds the files to write, the
command line, and the fragment the one-line error must hold (the field or file it names). Its `extra`:

- `code`: the exit code wanted (default 2: bad input, usage or a refused target; 1: a failure while
  working; 0: a run that must go on, warning about what it skips);
- `also`: more fragments the error line must hold (e.g. "did you mean");
- `warn`: a fragment some `warning: ` line on stderr must hold (an unreadable part it skipped);
- `targets`: paths that must be byte-identical afterwards (a refused target, a corrupt state);
- `writes`: a path that must exist afterwards (the report or page of a run that went on);
- `prepare`: steps run after the files are written (`Prep`): copy the session's real sweep or training
  output dir in, corrupt one of its Parquet parts or its `trainer.pt`, make links, dirs and fifos.

`{tmp}` in any string stands for the case's temp dir, `{part}` for the part a step corrupted.
Training cases run a tiny training (`TINY`), so a corrupt state wrongly taken as good fails fast."""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tests.fuzz_cases import INF, NAN, Case, dump, typos, with_value

# A step preparing a case: (case dir, the session's fixture dirs by name) -> placeholders it defines.
Prep = Callable[[Path, Mapping[str, Path]], dict[str, str]]

BASE: dict[str, Any] = {  # the base sweep of every training: three simulated seats, one debate round
    "name": "fzbase",
    "models": {"sim": {"engine": "simulated", "args": {"skill": 0.6}}},
    "agents": ["sim", {"model": "sim", "count": 2}],
    "datasets": [{"name": "arith", "split": "train", "limit": 6}],
    "methods": ["cot"],
    "rounds": 1,
    "seeds": [0],
    "cache": False,
}
TRAIN: dict[str, Any] = {  # RUMAD with PPO, as small as a training gets
    "name": "fz",
    "output_dir": "{tmp}/tout",
    "sweep": "base.yaml",
    "method": {"name": "rumad", "args": {"budget": 2}},
    "policy": {"hidden": 8},
    "ppo": {"updates": 1, "episodes_per_update": 2, "epochs": 1, "minibatches": 1, "seed": 0},
    "eval_every": 0,
    "tracking": {"enabled": False},
}
CPP_TRAIN: dict[str, Any] = {  # CPP with its policy gradient
    "name": "fzc",
    "output_dir": "{tmp}/tout",
    "sweep": "base.yaml",
    "method": {"name": "cpp", "args": {"threshold": 0.5}},
    "algorithm": "pg",
    "cpp": {"encoder": "hashed", "hidden": 8, "behaviour_items": 2},
    "pg": {"updates": 1, "episodes_per_update": 2, "seed": 0},
    "eval_every": 0,
    "tracking": {"enabled": False},
}
TINY_SETS = {"ppo.updates": "1", "ppo.episodes_per_update": "2"}
TINY_BASE = ["--base-set", "datasets.0.limit=4", "--no-tracking"]
# The session's real sweep (`sweep run`, twice, so episodes/ and rounds/ hold two parts each).
SWEEP: dict[str, Any] = {
    "name": "fzsweep",
    "output_dir": "runs/fzsweep",
    "models": {"sim": {"engine": "simulated", "args": {"skill": 0.6}}},
    "agents": ["sim", {"model": "sim", "count": 2}],
    "datasets": [{"name": "arith", "limit": 3}],
    "methods": ["cot", {"name": "fixed", "args": {"topology": "ring"}}],
    "rounds": 1,
    "seeds": [0],
    "cache": False,
}


def tiny(skip: str = "") -> list[str]:
    """The flags that keep a training that should have been refused short (minus an override of the
    key under test, which would hide its bad value)."""
    sets = [a for k, v in TINY_SETS.items() if k != skip for a in ("--set", f"{k}={v}")]
    return sets + TINY_BASE


def case(
    name: str, argv: list[str], expect: str, files: dict[str, str | bytes] | None = None, **extra: Any
) -> Case:
    return Case(name, dict(files or {}), argv, expect, extra)


def train_files(cfg: Mapping[str, Any]) -> dict[str, str | bytes]:
    return {"base.yaml": dump(BASE), "train.yaml": dump(cfg)}


# --- preparation steps -------------------------------------------------------------------------


def copy_fixture(kind: str, dest: str) -> Prep:
    """Copy the session's `kind` output dir ("sweep" or "train") to `dest` in the case dir."""

    def step(tmp: Path, fixtures: Mapping[str, Path]) -> dict[str, str]:
        shutil.copytree(fixtures[kind], tmp / dest, symlinks=True)
        return {}

    return step


def write(rel: str, content: str | bytes) -> Prep:
    def step(tmp: Path, fixtures: Mapping[str, Path]) -> dict[str, str]:
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return {}

    return step


def _replace_with(path: Path, shape: str) -> None:
    """Make `path` (a Parquet part or a state file) unreadable in one way."""
    data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    if shape == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif shape == "garbage":
        path.write_bytes(b"PAR1 this is not parquet \x00\xff" * 40)
    elif shape == "empty":
        path.write_bytes(b"")
    elif shape == "dir":
        path.mkdir()
        (path / "inside.txt").write_text("a folder named like a part\n")
    elif shape == "dangling":
        path.symlink_to(path.parent / "gone" / path.name)
    elif shape == "foreign parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"x": [1, 2, 3]}), path)
    else:
        raise ValueError(shape)


def corrupt_part(where: str, table: str, which: int | None, shape: str) -> Prep:
    """Corrupt part `which` (None: every part) of `<where>/<table>/`; `{part}` names the (first) one."""

    def step(tmp: Path, fixtures: Mapping[str, Path]) -> dict[str, str]:
        parts = sorted((tmp / where / table).glob("part-*.parquet"))
        assert len(parts) >= 2, f"the fixture sweep has {len(parts)} {table} parts; the corpus needs two"
        chosen = parts if which is None else [parts[which]]
        for p in chosen:
            _replace_with(p, shape)
        return {"part": chosen[0].name}

    return step


def link(rel: str, target: str) -> Prep:
    """A symlink at `rel` to `target` (`{tmp}` allowed; a relative target stays relative)."""

    def step(tmp: Path, fixtures: Mapping[str, Path]) -> dict[str, str]:
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        path.symlink_to(target.replace("{tmp}", str(tmp)))
        return {}

    return step


def move(rel: str, dest: str) -> Prep:
    def step(tmp: Path, fixtures: Mapping[str, Path]) -> dict[str, str]:
        (tmp / dest).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).rename(tmp / dest)
        return {}

    return step


def fifo(rel: str) -> Prep:
    def step(tmp: Path, fixtures: Mapping[str, Path]) -> dict[str, str]:
        path = tmp / rel
        path.unlink(missing_ok=True)
        os.mkfifo(path)
        return {}

    return step


def state(change: Callable[[dict[str, Any]], Any]) -> Prep:
    """Rewrite the copied training's `trainer.pt` as torch would save `change(the real state)`."""

    def step(tmp: Path, fixtures: Mapping[str, Path]) -> dict[str, str]:
        import torch

        path = tmp / "tout" / "checkpoints" / "trainer.pt"
        real = torch.load(path, weights_only=True)
        buf = io.BytesIO()
        torch.save(change(real), buf)
        path.write_bytes(buf.getvalue())
        return {}

    return step


def shape_file(rel: str, shape: str) -> Prep:
    def step(tmp: Path, fixtures: Mapping[str, Path]) -> dict[str, str]:
        _replace_with(tmp / rel, shape)
        return {}

    return step


def policy_npz(rel: str, how: str) -> Prep:
    """A policy file at `rel` made from the session's trained policy, broken in way `how`."""

    def step(tmp: Path, fixtures: Mapping[str, Path]) -> dict[str, str]:
        import numpy as np

        from debate.policies import checkpoint as ckpt

        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        good = fixtures["train"] / "policy.npz"
        real = ckpt.load(str(good))
        meta: dict[str, Any] = {"format": ckpt.FORMAT, "arch": real.arch, "provenance": real.provenance}
        meta["hash"] = real.digest

        def savez(meta: dict[str, Any] | None, weights: Mapping[str, Any], pickle: bool = False) -> None:
            members: dict[str, Any] = {"w." + k: v for k, v in weights.items()}
            if meta is not None:
                members["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
            np.savez(path, allow_pickle=pickle, **members)

        if how == "truncated":
            path.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
        elif how == "no meta":
            savez(None, real.weights)
        elif how == "meta not json":
            np.savez(path, __meta__=np.frombuffer(b"\xff{not json", dtype=np.uint8))
        elif how in ("no arch", "no provenance"):
            savez({k: v for k, v in meta.items() if k != how.removeprefix("no ")}, real.weights)
        elif how == "other format":
            savez({**meta, "format": "someone-else/1"}, real.weights)
        elif how == "object array":
            savez(meta, {"evil": np.array([{"a": 1}, None], dtype=object)}, pickle=True)
        elif how == "tampered":  # weights changed after the hash was taken
            savez(meta, {k: v + 1 for k, v in real.weights.items()})
        elif how in ("wrong shapes", "no weights", "wrong dtype"):
            weights = {k: v.reshape(-1)[:1].copy() for k, v in real.weights.items()}
            if how == "no weights":
                weights = {}
            elif how == "wrong dtype":
                weights = {k: v.astype(np.int8) for k, v in real.weights.items()}
            ckpt.save_checkpoint(path, real.arch, weights, real.provenance)  # a true hash over wrong content
        elif how == "other policy":  # a sound file, but not the one trainer.pt recorded
            ckpt.save_checkpoint(
                path, real.arch, {k: v + 1 for k, v in real.weights.items()}, real.provenance
            )
        else:
            raise ValueError(how)
        return {}

    return step


# --- sweep train: every key x hostile values ---------------------------------------------------

INT_BAD: list[Any] = [True, 1.5, 1e12, 2**64, -1, INF, NAN, "x", [1], {"a": 1}, None]
FLOAT_BAD: list[Any] = [True, INF, -INF, NAN, "x", [1], {"a": 1}, None]
BOOL_BAD: list[Any] = ["yes", 1, 2, None, [True]]
INTS = [
    "ppo.updates",
    "ppo.episodes_per_update",
    "ppo.epochs",
    "ppo.minibatches",
    "ppo.seed",
    "policy.hidden",
    "checkpoint_every",
    "eval_every",
    "eval_episodes",
]
CPP_INTS = [
    "pg.updates",
    "pg.episodes_per_update",
    "pg.first_stage_updates",
    "pg.seed",
    "cpp.hidden",
    "cpp.behaviour_items",
    "cpp.behaviour_offset",
]
# float field: the values out of its range beyond FLOAT_BAD (-1 where it must be >= 0 or > 0, ...)
FLOATS: dict[str, list[Any]] = {
    "ppo.lr": [-1, 0],
    "ppo.gamma": [-1, 2, 1e12],
    "ppo.gae_lambda": [-1, 1.5],
    "ppo.clip": [-1, 0],
    "ppo.value_coef": [-1],
    "ppo.entropy_coef": [-1],
    "ppo.max_grad_norm": [-1, 0],
    "ppo.target_kl": [-1, 0],
    "policy.log_std_init": [],
}
CPP_FLOATS: dict[str, list[Any]] = {
    "pg.lr": [-1, 0],
    "pg.entropy_coef": [-1],
    "pg.entropy_decay": [-1, 0, 1.5],
    "pg.first_stage_k": [-2, 2],
    "pg.max_grad_norm": [-1, 0],
}
REWARDS = [
    "alpha_accuracy",
    "beta_accuracy",
    "alpha_consensus",
    "beta_consensus",
    "alpha_progress",
    "alpha_efficiency",
    "beta_efficiency",
    "alpha_improvement",
    "beta_improvement",
    "alpha_sparsity",
    "token_scale",
]
CPP_REWARDS: dict[str, list[Any]] = {
    "k": [2, -1.5],
    "a": [-1, 0],
    "round_scale": [-1],
    "beta": [-1, 2],
    "gamma": [1.5],
    "prune_flip": [],
}
# other fields: (bad values, the fragment naming the field)
OTHERS: dict[str, tuple[list[Any], str]] = {
    "name": (["", "a/b", "..", "x\x00y", "n" * 300, "tab\there", 3, [1], None], "name"),
    "sweep": (["missing.yaml", "", "/dev/zero", "{tmp}/afile", 3, None, ["base.yaml"]], "sweep"),
    "overrides": (["rounds=1", ["rounds"], [3], ["datasets.9.limit=1"], ["=1"], [None]], "overrides"),
    "method": (["fixed", "rumadd", 3, None, [], {"nam": "rumad"}, {"name": "rumad", "args": "x"}], "method"),
    "method.args": (
        [
            {"budgt": 2},
            {"budget": True},
            {"budget": -1},
            {"theta_act": 2},
            {"init_seed": 1},
            {"checkpoint": "x.npz"},
        ],
        "method",
    ),
    "algorithm": (["pgg", "pg", 3, [1]], "algorithm"),
    "policy.head": (["cauchy", "", 3, None, ["gaussian"]], "policy.head"),
    "tracking": (["yes", 3, {"uri": ""}, {"enabld": True}, {"uri": "sqlite:////etc/x.db"}], "tracking"),
    "ppo": ([3, "x", [1], None], "ppo"),
    "policy": ([3, "x", [1]], "policy"),
    "reward": (["x", [1], 3], "reward"),
    "ppo.norm_adv": (BOOL_BAD, "ppo.norm_adv"),
    "allow_test_split": (BOOL_BAD, "allow_test_split"),
}
CPP_OTHERS: dict[str, tuple[list[Any], str]] = {
    "cpp.encoder": (["minlm", "", 3, None], "cpp.encoder"),
    "cpp.behaviour_split": ([3, [1], None], "cpp.behaviour_split"),
    "pg.norm_returns": (BOOL_BAD, "pg.norm_returns"),
    "pg": ([3, [1]], "pg"),
    "cpp": (["x", [1]], "cpp"),
}


def _huge(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 1e6 <= abs(value) < INF


def field_cases() -> list[Case]:
    """Every training key given every hostile value it must refuse, through `--validate` (all) and
    through a real `sweep train` (every third, with the tiny settings; never a huge size)."""
    rows: list[tuple[dict[str, Any], str, Any, str]] = []  # (config, path, value, fragment)
    for cfg, ints, floats in ((TRAIN, INTS, FLOATS), (CPP_TRAIN, CPP_INTS, CPP_FLOATS)):
        for path in ints:
            rows += [(cfg, path, v, path) for v in INT_BAD]
        for path, extra in floats.items():
            rows += [
                (cfg, path, v, path) for v in FLOAT_BAD + extra if not (v is None and path == "ppo.target_kl")
            ]
    for key in REWARDS:
        rows += [(TRAIN, f"reward.{key}", v, key) for v in [*FLOAT_BAD, -1]]
    for key, extra in CPP_REWARDS.items():
        rows += [(CPP_TRAIN, f"reward.{key}", v, key) for v in FLOAT_BAD + extra]
    for cfg, others in ((TRAIN, OTHERS), (CPP_TRAIN, CPP_OTHERS)):
        for path, (values, fragment) in others.items():
            rows += [(cfg, path, v, fragment) for v in values]
    out = []
    for i, (cfg, path, value, fragment) in enumerate(rows):
        files = train_files(with_value(path, value, cfg))
        label = f"{cfg['method']['name']} {path}={value!r}"[:80].replace("\x00", "NUL")
        prep = [TARGET_DIRS["{tmp}/afile"]] if value == "{tmp}/afile" else []
        argv = ["train", "train.yaml", "--validate"]
        fragment = "afile" if prep else fragment  # the file it names, not a field
        out.append(case(f"train --validate {label} #{i}", argv, fragment, files, prepare=prep))
        if i % 3 == 0 and not _huge(value):  # a size no machine holds, were it taken, is not run
            pg = ["--set", "pg.updates=1"] if path != "pg.updates" else []
            flags = [*pg, *TINY_BASE] if cfg is CPP_TRAIN else tiny(skip=path)
            out.append(
                case(f"train {label} #{i}", ["train", "train.yaml", *flags], fragment, files, prepare=prep)
            )
    return out


def typo_cases() -> list[Case]:
    """A slipped key in every section: named, with a did-you-mean."""
    sections: dict[str, tuple[dict[str, Any], str]] = {  # where: (config, the keys there)
        "": (
            TRAIN,
            "name output_dir sweep overrides method policy reward algorithm checkpoint_every eval_every "
            "eval_episodes allow_test_split tracking",
        ),
        "ppo": (
            TRAIN,
            "updates episodes_per_update epochs minibatches gamma gae_lambda clip value_coef entropy_coef "
            "max_grad_norm norm_adv target_kl",
        ),
        "policy": (TRAIN, "hidden head log_std_init"),
        "reward": (TRAIN, " ".join(REWARDS)),
        "pg": (
            CPP_TRAIN,
            "updates episodes_per_update entropy_coef entropy_decay first_stage_updates first_stage_k "
            "norm_returns max_grad_norm",
        ),
        "cpp": (CPP_TRAIN, "encoder hidden behaviour_items behaviour_split behaviour_offset"),
        "method": (TRAIN, "name args"),
        "tracking": (TRAIN, "enabled experiment"),
    }
    out = []
    for where, (base, keys) in sections.items():
        for key in keys.split():
            for t in typos(key)[:2]:
                cfg = copy.deepcopy(base)
                node = cfg.setdefault(where, {}) if where else cfg
                node[t] = 0.5
                also = ["did you mean"] if len(key) >= 5 else []
                files = train_files(cfg)
                out.append(
                    case(
                        f"train typo {where}.{t}", ["train", "train.yaml", "--validate"], t, files, also=also
                    )
                )
    return out


TARGET_DIRS: dict[str, Prep] = {  # what an output dir may wrongly be, and how to make it
    "{tmp}/afile": write("afile", "not a dir\n"),
    "{tmp}/foreign": write("foreign/notes.txt", "someone else's\n"),
    "{tmp}/sweep": copy_fixture("sweep", "sweep"),
    "{tmp}/study": write("study/study.resolved.yaml", "name: s\n"),
    "{tmp}/oldreport": write("oldreport/.sweep-report", '{"kind": "report"}\n'),
    "{tmp}/sweep/episodes": copy_fixture("sweep", "sweep"),
}
SYSTEM = ["/etc", "/", "/proc/self", "/usr/lib/fz", "/dev/null", "/tmp", "/sys/fz", ".", "~", "", "   "]


def output_dir_cases() -> list[Case]:
    """`output_dir` (and `--out`) that is a system place, a file, holds a NUL, or another's output."""
    out = []
    for value in [*SYSTEM, "{tmp}/a\x00b", *TARGET_DIRS]:
        prep = [TARGET_DIRS[value]] if value in TARGET_DIRS else []
        targets = [value] if value in TARGET_DIRS else []
        label = value.replace("\x00", "NUL") or "empty"
        files = train_files(with_value("output_dir", value, TRAIN))
        for argv in (["train", "train.yaml", "--validate"], ["train", "train.yaml", *tiny()]):
            what = "train --validate" if "--validate" in argv else "train"
            out.append(
                case(f"{what} output_dir={label}", argv, "output_dir", files, prepare=prep, targets=targets)
            )
        out.append(
            case(
                f"train --out {label}",
                ["train", "train.yaml", "--out", value, *tiny()],
                "output_dir",
                train_files(TRAIN),
                prepare=prep,
                targets=targets,
            )
        )
    return out


def override_cases() -> list[Case]:
    """Bad `--set` / `--base-set` syntax and values, and minibatches above the episodes of an update."""
    sets = [
        ("ppo.updates", "--set"),
        ("=3", "--set"),
        ("a..b=1", "--set"),
        ("ppo.lr.x=1", "ppo.lr"),
        ("ppo.updates=" + "[" * 100 + "]" * 100, "ppo.updates"),
        ("overrides.5=x", "overrides"),
        ("ppo.updates=true", "ppo.updates"),
        ("ppo.seed=18446744073709551616", "ppo.seed"),
        ("ppo.lr=.inf", "ppo.lr"),
        ("ppo.gamma=.nan", "ppo.gamma"),
        ("policy.hidden=1e12", "policy.hidden"),
        ("ppo.lrr=0.1", "ppo.lrr"),
        ("output_dir=/etc", "output_dir"),
    ]
    base_sets = [
        ("rounds", "rounds"),
        ("=3", "=3"),
        ("datasets.9.limit=3", "datasets.9"),
        ("datasets.0.limit=0", "datasets[0].limit"),
        ("datasets.0.split=test", "datasets[0].split"),
        ("rounds=0", "rounds"),
        ("agents=[sim]", "agents"),
        ("models.sim.args.skil=0.5", "skil"),
        ("seeds=[2**70]", "seeds"),
    ]
    files = train_files(TRAIN)
    out = [
        case(f"train --set {s}", ["train", "train.yaml", "--validate", "--set", s], e, files) for s, e in sets
    ]
    out += [
        case(f"train --base-set {s}", ["train", "train.yaml", "--validate", "--base-set", s], e, files)
        for s, e in base_sets
    ]
    too_many = [("4", "2"), ("3", "2"), ("65", "64")]
    for mb, ep in too_many:
        cfg = with_value("ppo.episodes_per_update", int(ep), with_value("ppo.minibatches", int(mb), TRAIN))
        for argv in (["train", "train.yaml", "--validate"], ["train", "train.yaml", *TINY_BASE]):
            out.append(
                case(
                    f"{' '.join(argv[:1] + argv[2:3])} minibatches {mb} > episodes {ep}",
                    argv,
                    "ppo.minibatches",
                    train_files(cfg),
                    also=["episodes_per_update"],
                )
            )
    return out


def _drop(key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda s: {k: v for k, v in s.items() if k != key}


def _put(key: str, value: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda s: {**s, key: value}


def state_cases() -> list[Case]:
    """A copy of the session's real training, its `checkpoints/trainer.pt` (or the policy file it
    names) corrupt: `sweep train` refuses it in one line naming the file, and leaves it as it was."""
    ck = "tout/checkpoints"
    shapes: dict[str, list[Prep]] = {
        "garbage": [shape_file(f"{ck}/trainer.pt", "garbage")],
        "empty": [shape_file(f"{ck}/trainer.pt", "empty")],
        "truncated": [shape_file(f"{ck}/trainer.pt", "truncated")],
        "a directory": [shape_file(f"{ck}/trainer.pt", "dir")],
        "a dangling symlink": [shape_file(f"{ck}/trainer.pt", "dangling")],
        "a symlink to a real state": [
            move(f"{ck}/trainer.pt", "elsewhere/trainer.pt"),
            link(f"{ck}/trainer.pt", "{tmp}/elsewhere/trainer.pt"),
        ],
        "a symlink loop": [link(f"{ck}/trainer.pt", "trainer.pt")],
        "a fifo": [fifo(f"{ck}/trainer.pt")],
        "a torch-saved list": [state(lambda s: [1, 2, 3])],
        "a torch-saved int": [state(lambda s: 7)],
        "a torch-saved tensor": [state(lambda s: __import__("torch").zeros(3))],
        "a dict missing optimizer": [state(_drop("optimizer"))],
        "a dict missing fingerprint": [state(_drop("fingerprint"))],
        "a dict missing policy_hash": [state(_drop("policy_hash"))],
        "a dict missing history": [state(_drop("history"))],
        "a dict missing rng": [state(_drop("rng"))],
        "update as a string": [state(_put("update", "x"))],
        "update negative": [state(_put("update", -3))],
        "history not a list": [state(_put("history", 5))],
        "rng not a state": [state(_put("rng", [1, 2]))],
        "policy_file outside checkpoints": [state(_put("policy_file", "../../../../etc/passwd"))],
        "policy_file missing": [move(f"{ck}/policy-u000001.npz", "elsewhere/policy-u000001.npz")],
        "policy_file truncated": [shape_file(f"{ck}/policy-u000001.npz", "truncated")],
        "policy_file a directory": [shape_file(f"{ck}/policy-u000001.npz", "dir")],
        "policy_file of another policy": [policy_npz(f"{ck}/policy-u000001.npz", "other policy")],
        "policy_file tampered": [policy_npz(f"{ck}/policy-u000001.npz", "tampered")],
    }
    out = []
    for what, steps in shapes.items():
        expect = (
            "policy-u000001.npz"
            if what.startswith("policy_file ") and "outside" not in what
            else "trainer.pt"
        )
        out.append(
            case(
                f"train with trainer.pt {what}",
                ["train", "train.yaml", *tiny()],
                expect,
                train_files(TRAIN),
                prepare=[copy_fixture("train", "tout"), *steps],
                targets=["{tmp}/tout/checkpoints"],
            )
        )
    # A state of another config: refused today; kept as the line the others should match.
    out.append(
        case(
            "train with trainer.pt of another config",
            ["train", "train.yaml", *tiny()],
            "output_dir",
            train_files(TRAIN),
            prepare=[copy_fixture("train", "tout"), state(_put("fingerprint", "0" * 16))],
            targets=["{tmp}/tout/checkpoints"],
        )
    )
    return out


NPZ = [
    "truncated",
    "no meta",
    "meta not json",
    "no arch",
    "no provenance",
    "other format",
    "object array",
    "wrong shapes",
    "no weights",
    "wrong dtype",
    "tampered",
]


def checkpoint_cases() -> list[Case]:
    """A corrupt policy .npz named as a method's checkpoint in a sweep config: `validate` (and `run`)
    refuse it in one line naming the file."""
    sweep = {**BASE, "output_dir": "{tmp}/out", "datasets": [{"name": "arith", "limit": 2}]}
    out = []
    shapes: dict[str, Prep] = {h: policy_npz("p.npz", h) for h in NPZ}
    shapes |= {
        "garbage": write("p.npz", b"PK\x03\x04 not a zip" * 20),
        "empty": write("p.npz", b""),
        "a directory": write("p.npz/inside.txt", "x"),
        "a symlink loop": link("p.npz", "p.npz"),
    }
    for i, (what, step) in enumerate(shapes.items()):
        for method in ("rumad", "cpp") if what in ("truncated", "no arch", "wrong shapes") else ("rumad",):
            cfg = with_value("methods", [{"name": method, "args": {"checkpoint": "{tmp}/p.npz"}}], sweep)
            for cmd in ("validate", "run") if i % 2 == 0 and method == "rumad" else ("validate",):
                argv = [cmd, "c.yaml", *(["--no-tracking"] if cmd == "run" else [])]
                out.append(
                    case(
                        f"{cmd} {method} checkpoint {what}",
                        argv,
                        "p.npz",
                        {"c.yaml": dump(cfg)},
                        prepare=[step],
                    )
                )
    # The trained RUMAD policy given to CPP: another architecture, one line.
    cfg = with_value("methods", [{"name": "cpp", "args": {"checkpoint": "{tmp}/p.npz"}}], sweep)
    out.append(
        case(
            "run cpp checkpoint of rumad",
            ["run", "c.yaml", "--no-tracking"],
            "p.npz",
            {"c.yaml": dump(cfg)},
            prepare=[copy_fixture("train", "t"), link("p.npz", "{tmp}/t/policy.npz")],
        )
    )
    return out


# --- sweep report ------------------------------------------------------------------------------

SHAPES = ["truncated", "garbage", "empty", "dir", "dangling", "foreign parquet"]


def report_cases() -> list[Case]:
    rep = ["report", "{tmp}/sweep", "--no-tracking", "--report-dir"]
    sweep = copy_fixture("sweep", "sweep")
    out = []
    refused: dict[str, list[Prep]] = {
        "{tmp}/sweep": [],
        "{tmp}/sweep/episodes": [],
        "{tmp}/foreign": [TARGET_DIRS["{tmp}/foreign"]],
        "{tmp}/afile": [TARGET_DIRS["{tmp}/afile"]],
        "{tmp}/study": [TARGET_DIRS["{tmp}/study"]],
        "{tmp}/tout": [copy_fixture("train", "tout")],
        "{tmp}/other": [copy_fixture("sweep", "other")],
        "{tmp}/link": [TARGET_DIRS["{tmp}/foreign"], link("link", "{tmp}/foreign")],
        "{tmp}/sweep/config.resolved.yaml": [],
    }
    for target, steps in refused.items():
        kept = target.replace("/link", "/foreign")
        out.append(
            case(
                f"report --report-dir {target}",
                [*rep, target],
                "--report-dir",
                prepare=[sweep, *steps],
                targets=[kept, "{tmp}/sweep"],
            )
        )
    for value in [
        "/etc",
        "/etc/fz",
        "/",
        "/proc/self",
        "/usr/share/fz",
        "/dev/null",
        ".",
        "",
        "~",
        "{tmp}/a\x00b",
    ]:
        label = value.replace("\x00", "NUL") or "empty"
        out.append(
            case(
                f"report --report-dir {label}",
                [*rep, value],
                "--report-dir",
                prepare=[sweep],
                targets=["{tmp}/sweep"],
            )
        )
    for table in ("episodes", "rounds"):
        for shape in SHAPES:
            out.append(
                case(
                    f"report one {table} part {shape}",
                    ["report", "{tmp}/sweep", "--no-tracking"],
                    "",
                    prepare=[sweep, corrupt_part("sweep", table, 0, shape)],
                    code=0,
                    warn="{part}",
                    writes="{tmp}/sweep/report/index.html",
                )
            )
    for shape in SHAPES:
        out.append(
            case(
                f"report every episodes part {shape}",
                ["report", "{tmp}/sweep", "--no-tracking"],
                "{tmp}/sweep",
                prepare=[sweep, corrupt_part("sweep", "episodes", None, shape)],
                warn="{part}",
            )
        )
    inputs: dict[str, tuple[list[Prep], str]] = {
        "{tmp}/foreign": ([TARGET_DIRS["{tmp}/foreign"]], "{tmp}/foreign"),
        "{tmp}/nope": ([], "{tmp}/nope"),
        "{tmp}/afile": ([TARGET_DIRS["{tmp}/afile"]], "{tmp}/afile"),
        "{tmp}/noparts": ([write("noparts/episodes/README", "x")], "{tmp}/noparts"),
        "{tmp}/tout": ([copy_fixture("train", "tout")], "{tmp}/tout"),
        "/proc/self": ([], "/proc/self"),
        "{tmp}/a\x00b": ([], "NUL"),
    }
    for value, (steps, expect) in inputs.items():
        label = value.replace("\x00", "NUL")
        out.append(
            case(
                f"report OUT {label}",
                ["report", value, "--no-tracking", "--report-dir", "{tmp}/rep"],
                expect,
                prepare=steps,
            )
        )
        out.append(
            case(
                f"report OUT sweep + {label}",
                ["report", "{tmp}/sweep", value, "--no-tracking"],
                expect,
                prepare=[sweep, *steps],
                targets=["{tmp}/sweep"],
            )
        )
    return out


# --- sweep view --export -----------------------------------------------------------------------


def view_cases() -> list[Case]:
    view = ["view", "{tmp}/sweep", "--export"]
    sweep = copy_fixture("sweep", "sweep")
    out = []
    refused: dict[str, list[Prep]] = {
        "{tmp}/afile": [TARGET_DIRS["{tmp}/afile"]],
        "{tmp}/page.html": [write("page.html", "<html>mine</html>\n")],
        "{tmp}/foreign": [TARGET_DIRS["{tmp}/foreign"]],
        "{tmp}/sweep": [],
        "{tmp}/sweep/config.resolved.yaml": [],
        "{tmp}/link.html": [write("page.html", "<p>mine</p>"), link("link.html", "{tmp}/page.html")],
        "{tmp}/dangling.html": [link("dangling.html", "{tmp}/gone/x.html")],
        "{tmp}/fifo.html": [fifo("fifo.html")],
    }
    for target, steps in refused.items():
        kept = target.replace("link.html", "page.html")
        out.append(
            case(
                f"view --export {target}",
                [*view, target],
                "--export",
                prepare=[sweep, *steps],
                targets=[kept, "{tmp}/sweep"],
            )
        )
    for value in [
        "/etc/fz.html",
        "/etc/passwd",
        "/dev/null",
        "/proc/self/fz",
        "/",
        "/usr/fz.html",
        ".",
        "",
        "~",
        "{tmp}/a\x00b.html",
    ]:
        label = value.replace("\x00", "NUL") or "empty"
        out.append(
            case(
                f"view --export {label}", [*view, value], "--export", prepare=[sweep], targets=["{tmp}/sweep"]
            )
        )
    page = [*view, "{tmp}/out.html"]
    for flag, value in [
        ("--limit", "0"),
        ("--limit", "-1"),
        ("--limit", str(10**30)),
        ("--limit", str(2**63)),
        ("--method", "nope"),
        ("--method", "COT"),
        ("--method", "cot\x00"),
        ("--dataset", "nope/test"),
        ("--dataset", "arith"),
    ]:
        label = value.replace("\x00", "NUL") or "empty"
        out.append(
            case(f"view {flag} {label}", [*page, flag, value], flag, prepare=[sweep], targets=["{tmp}/sweep"])
        )
    for table in ("episodes", "turns", "rounds"):
        for shape in SHAPES:
            # A turns or rounds part only matters once its episodes are opened: the export either goes
            # on without them (exit 0, a warning naming the part) or stops (exit 2, naming the part).
            code: Any = 0 if table == "episodes" else (0, 2)
            out.append(
                case(
                    f"view --export, one {table} part {shape}",
                    page,
                    "{part}",
                    prepare=[sweep, corrupt_part("sweep", table, 0, shape)],
                    code=code,
                    warn="{part}",
                    writes="{tmp}/out.html",
                )
            )
    for shape in SHAPES:
        out.append(
            case(
                f"view --export, every episodes part {shape}",
                page,
                "{tmp}/sweep",
                prepare=[sweep, corrupt_part("sweep", "episodes", None, shape)],
                warn="{part}",
            )
        )
    inputs: dict[str, tuple[list[Prep], str]] = {
        "{tmp}/nope": ([], "{tmp}/nope"),
        "{tmp}/afile": ([TARGET_DIRS["{tmp}/afile"]], "{tmp}/afile"),
        "{tmp}/foreign": ([TARGET_DIRS["{tmp}/foreign"]], "{tmp}/foreign"),
        "{tmp}/noparts": ([write("noparts/episodes/README", "x")], "{tmp}/noparts"),
        "{tmp}/a\x00b": ([], "NUL"),
    }
    for value, (steps, expect) in inputs.items():
        label = value.replace("\x00", "NUL")
        out.append(
            case(f"view OUT {label}", ["view", value, "--export", "{tmp}/out.html"], expect, prepare=steps)
        )
    return out


def all_cases() -> list[Case]:
    return (
        field_cases()
        + typo_cases()
        + output_dir_cases()
        + override_cases()
        + state_cases()
        + checkpoint_cases()
        + report_cases()
        + view_cases()
    )
