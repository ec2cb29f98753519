"""A training's files on disk: `sweep train` owns its output dir (a second trainer, or a dir holding a
sweep, is refused in one line); a damaged, foreign or misplaced `trainer.pt`, a policy `.npz` that is
truncated, foreign or does not fit its architecture, each is one line naming the file and the fix,
through `state.load`, `checkpoint.load`, `sweep validate` and `sweep run` (exit 2); a write that fails
on a full disk is one line (exit 1), leaves no temp file and leaves the last recorded update usable.
Nothing here starts Ray: trainings run in-process on simulated agents."""

from __future__ import annotations

import errno
import json
import os
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml

from debate.policies import checkpoint as ckpt
from debate.policies import shapes
from debate.policies.actor_critic import PolicyArch, build, weights_of
from debate.policies.fuseglu import build as build_pruning
from debate.policies.fuseglu import weights_of as pruning_weights
from debate.policies.pruning import PruningArch
from sweep import interrupt
from sweep.cli import main
from sweep.config.sweep import ConfigError
from sweep.engines.pool import local_agents
from sweep.store.ownership import OutputBusy
from sweep.store.targets import dir_kind, own_dir
from sweep.train import state
from sweep.train.config import TrainSetup, load_train
from tests.test_train import BASE as SMALL_BASE
from tests.test_train import TRAIN as SMALL_TRAIN

# test_train's small training, smaller: a real run here only has to reach its first save.
BASE: dict[str, Any] = {
    **SMALL_BASE,
    "datasets": [{"name": "arith", "split": "train", "limit": 6}],
    "concurrency": 4,
}
TRAIN: dict[str, Any] = {
    **SMALL_TRAIN,
    "policy": {"hidden": 8},
    "ppo": {"updates": 2, "episodes_per_update": 2, "epochs": 1, "minibatches": 1, "seed": 0},
    "checkpoint_every": 5,
}
# torch's words for a write that failed (torch.save to a path, on a full disk)
ENFORCE = (
    "[enforce fail at inline_container.cc:672] . PytorchStreamWriter failed writing file data/0: "
    "file write failed"
)


def train_file(tmp: Path, **extra: Any) -> Path:
    (tmp / "base.yaml").write_text(yaml.safe_dump(BASE))
    (tmp / "train.yaml").write_text(yaml.safe_dump({**TRAIN, "output_dir": str(tmp / "out"), **extra}))
    return tmp / "train.yaml"


@pytest.fixture
def setup(tmp_path: Path) -> TrainSetup:
    return load_train(train_file(tmp_path), [], [], None)


def record(setup: TrainSetup, updates: int, first: int = 1) -> None:
    """Record updates `first`..`updates` of an untrained network, as a training does after each one."""
    module = build(PolicyArch(hidden=8, horizon=setup.base.rounds), 0)
    optimizer = torch.optim.Adam(module.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    history = [{"update": float(u), "return": 0.5} for u in range(1, updates + 1)]
    for u in range(first, updates + 1):
        state.save(setup, u, module, optimizer, rng, history[:u])


def one_line(text: str) -> str:
    assert "\n" not in text.strip() and "Traceback" not in text, text
    return text.strip()


def state_file(setup: TrainSetup) -> Path:
    return state.checkpoint_dir(setup.out) / state.TRAINER_STATE


def temps(out: Path) -> list[str]:
    return sorted(p.name for p in out.rglob("*.tmp"))


# --- trainer.pt ---------------------------------------------------------------------------------


def test_a_recorded_state_loads_and_names_its_policy(setup: TrainSetup) -> None:
    record(setup, 2)
    resume = state.load(setup)
    assert resume is not None and resume.update == 2 and len(resume.history) == 2
    assert state.restore(resume, setup.out).provenance["update"] == 2


def _rewrite(**changes: Any) -> Callable[[Path], None]:
    """A trainer.pt with some fields changed (`None`: removed), written as torch writes it."""

    def corrupt(path: Path) -> None:
        raw = torch.load(path, weights_only=True)
        for key, value in changes.items():
            raw.pop(key) if value is None else raw.__setitem__(key, value)
        torch.save(raw, path)

    return corrupt


def _replace_with(make: Callable[[Path], None]) -> Callable[[Path], None]:
    def corrupt(path: Path) -> None:
        path.unlink()
        make(path)

    return corrupt


def _symlink_to_a_good_copy(path: Path) -> None:
    copy = path.with_name("elsewhere.pt")
    path.rename(copy)
    path.symlink_to(copy)


STATES: dict[str, tuple[Callable[[Path], object], str]] = {
    "a directory": (_replace_with(lambda p: p.mkdir()), "is a directory"),
    "a symlink": (_symlink_to_a_good_copy, "is a symlink"),
    "a fifo": (_replace_with(lambda p: os.mkfifo(p)), "not a regular file"),
    "empty": (lambda p: p.write_bytes(b""), "is empty"),
    "garbage": (lambda p: p.write_bytes(b"\x00garbage" * 64), "not a training state (truncated or foreign"),
    "truncated": (lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]), "truncated or foreign"),
    "a pickled list": (lambda p: torch.save([1, 2, 3], p), "holds a list, not a training state"),
    "a foreign pickle": (
        lambda p: p.write_bytes(b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00]\x94."),
        "truncated",
    ),
    "no update": (_rewrite(update=None), "it lacks update"),
    "no rng": (_rewrite(rng=None), "it lacks rng"),
    "no fingerprint": (_rewrite(fingerprint=None), "it lacks fingerprint"),
    "no policy hash": (_rewrite(policy_hash=None), "it lacks policy_hash"),
    "update as text": (_rewrite(update="2"), "'update' is of type str, not int"),
    "update as bool": (_rewrite(update=True), "'update' is of type bool, not int"),
    "history as a dict": (_rewrite(history={}), "'history' is of type dict, not list"),
    "policy file as a number": (_rewrite(policy_file=3), "'policy_file' is of type int, not str"),
    "update count off": (_rewrite(update=5), "update count 5 disagrees with its 2 recorded updates"),
    "history of text": (_rewrite(history=["a", "b"]), "'history' holds something other"),
    "a policy elsewhere": (_rewrite(policy_file="../../policy.npz"), "is not the policy of update 2"),
    "a foreign rng": (_rewrite(rng={"bit_generator": "MT19937"}), "'rng' is not a random generator's state"),
    "an optimizer of nothing": (_rewrite(optimizer={"x": 1}), "'optimizer' is not an optimizer's state"),
}


@pytest.mark.parametrize("case", list(STATES))
def test_a_trainer_state_that_cannot_be_trusted_is_one_line(setup: TrainSetup, case: str) -> None:
    record(setup, 2)
    corrupt, expect = STATES[case]
    corrupt(state_file(setup))
    with pytest.raises(ConfigError) as e, warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        state.load(setup)
    assert not warned, [str(w.message)[:80] for w in warned]  # torch's warnings would be more lines on stderr
    text = one_line(str(e.value))
    assert text.startswith(f"{state_file(setup)}: ") and expect in text, text
    assert "move it aside to start over, or restore it" in text


def test_a_state_of_another_config_is_refused_naming_the_file(setup: TrainSetup, tmp_path: Path) -> None:
    record(setup, 1)
    other = load_train(train_file(tmp_path), ["ppo.lr=0.5"], [], None)
    with pytest.raises(ConfigError) as e:
        state.load(other)
    text = one_line(str(e.value))
    assert (
        text.startswith(f"{state_file(setup)}: a training of another config")
        and "use a new output_dir" in text
    )


POLICIES: dict[str, tuple[Callable[[Path], object], str]] = {
    "missing": (lambda p: p.unlink(), "not found"),
    "truncated": (lambda p: p.write_bytes(p.read_bytes()[:100]), "truncated or foreign"),
    "another update's": (lambda p: p.with_name("policy-u000001.npz").replace(p), "does not match the hash"),
}


@pytest.mark.parametrize("case", list(POLICIES))
def test_the_policy_a_state_names_must_be_there_and_the_one_recorded(tmp_path: Path, case: str) -> None:
    setup = load_train(train_file(tmp_path), ["checkpoint_every=1"], [], None)  # update 1's policy kept too
    record(setup, 2)
    resume = state.load(setup)
    assert resume is not None
    policy = state.checkpoint_dir(setup.out) / resume.policy_file
    POLICIES[case][0](policy)
    with pytest.raises(ConfigError) as e:
        state.restore(resume, setup.out)
    text = one_line(str(e.value))
    assert POLICIES[case][1] in text and str(policy) in text and "move" in text and ckpt.FIX not in text


# --- policy .npz --------------------------------------------------------------------------------


def _policy(path: Path, hidden: int = 4) -> dict[str, np.ndarray]:
    module = build(PolicyArch(hidden=hidden), 0)
    ckpt.save_checkpoint(path, module.arch.to_dict(), weights_of(module), {"test": True})
    return weights_of(module)


def _crafted(path: Path, arch: Any = None, weights: dict[str, np.ndarray] | None = None, **meta: Any) -> None:
    """A checkpoint whose hash matches its content, so only the check under test can refuse it."""
    arch = PolicyArch(hidden=4).to_dict() if arch is None else arch
    weights = weights_of(build(PolicyArch(hidden=4), 0)) if weights is None else weights
    body = {"format": ckpt.FORMAT, "arch": arch, "provenance": {}, **meta}
    if "hash" not in meta and isinstance(arch, dict):
        body["hash"] = ckpt.content_hash(arch, weights, {})
    blob = np.frombuffer(json.dumps(body).encode(), dtype=np.uint8)
    members: dict[str, Any] = {"__meta__": blob, **{f"w.{k}": v for k, v in weights.items()}}
    np.savez(path, **members)


def _with(name: str, change: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        weights = weights_of(build(PolicyArch(hidden=4), 0))
        weights[name] = change(weights[name])
        _crafted(path, weights=weights)

    return make


def _missing_weight(path: Path) -> None:
    weights = weights_of(build(PolicyArch(hidden=4), 0))
    del weights["log_std"]
    _crafted(path, weights=weights)


def _loop(path: Path) -> None:
    path.symlink_to(path.with_name("loop2"))
    path.with_name("loop2").symlink_to(path)


def _object_array(path: Path) -> None:
    np.savez(path, __meta__=np.array([{"format": ckpt.FORMAT}], dtype=object))


def _not_a_zip(path: Path) -> None:
    np.save(path.with_suffix(".npy"), np.zeros(3))
    path.with_suffix(".npy").rename(path)


NPZ: dict[str, tuple[Callable[[Path], object], str]] = {
    "truncated": (lambda p: (_policy(p), p.write_bytes(p.read_bytes()[:-200])), "truncated or foreign"),
    "cut at its start": (lambda p: (_policy(p), p.write_bytes(p.read_bytes()[:40])), "truncated or foreign"),
    "empty": (lambda p: p.write_bytes(b""), "truncated or foreign"),
    "garbage": (lambda p: p.write_bytes(b"not a zip at all" * 8), "truncated or foreign"),
    "a lone .npy": (_not_a_zip, "truncated or foreign"),
    "a pickled object array": (_object_array, "truncated or foreign"),
    "a zip of text": (lambda p: zipfile.ZipFile(p, "w").writestr("a.txt", "hi"), "truncated or foreign"),
    "meta a list": (
        lambda p: np.savez(p, __meta__=np.frombuffer(b"[1, 2]", dtype=np.uint8)),
        "format 'list'",
    ),
    "no arch": (lambda p: _crafted(p, arch="none"), "lacks its architecture"),
    "no weights": (lambda p: _crafted(p, weights={}), "lacks weights"),
    "an arch of nothing": (lambda p: _crafted(p, arch={"size": 3}), "not a rumad policy's architecture"),
    "a size as text": (
        lambda p: _crafted(p, arch={**PolicyArch(hidden=4).to_dict(), "hidden": "4"}),
        "'hidden' is '4'",
    ),
    "a wrong shape": (
        _with("edge.0.weight", lambda w: w[:, :-1].copy()),
        "has shape (4, 8), its architecture",
    ),
    "a wrong dtype": (_with("critic.2.bias", lambda w: w.astype(np.int32)), "has dtype int32, not a float"),
    "a missing weight": (_missing_weight, "missing log_std"),
    "a stored hash off": (lambda p: _crafted(p, hash="0" * 32), "its content does not match its hash"),
    "a directory": (lambda p: p.mkdir(), "is a directory"),
    "a fifo": (lambda p: os.mkfifo(p), "is not a regular file"),
    "a symlink loop": (_loop, "is a symlink loop"),
    "absent": (lambda p: None, "not found"),
}


@pytest.mark.parametrize("case", list(NPZ))
def test_a_policy_file_that_cannot_be_trusted_is_one_line(tmp_path: Path, case: str) -> None:
    path = tmp_path / "p.npz"
    NPZ[case][0](path)
    with pytest.raises(ckpt.CheckpointError) as e:
        ckpt.load(str(path))
    text = one_line(str(e.value))
    assert text.startswith(f"checkpoint '{path}'") and NPZ[case][1] in text and text.endswith(ckpt.FIX), text


def test_a_damaged_policy_file_never_passes_nor_escapes_as_another_error(tmp_path: Path) -> None:
    good = tmp_path / "good.npz"
    _policy(good)
    data, digest = good.read_bytes(), ckpt.load(str(good)).digest
    rng = np.random.default_rng(0)
    for i, cut in enumerate(rng.integers(1, len(data), 12)):
        (tmp_path / f"cut{i}.npz").write_bytes(data[:cut])
    for i, at in enumerate(rng.integers(0, len(data), 24)):
        flipped = bytearray(data)
        flipped[at] ^= 0xFF
        (tmp_path / f"flip{i}.npz").write_bytes(bytes(flipped))
    for path in sorted(tmp_path.glob("[cf]*.npz")):
        try:
            assert ckpt.load(str(path)).digest == digest, path.name  # a flip in zip padding changes nothing
        except ckpt.CheckpointError as e:
            one_line(str(e))


def test_a_policy_of_another_method_is_refused_when_a_kind_is_asked(tmp_path: Path) -> None:
    _policy(tmp_path / "rumad.npz")
    arch = PruningArch(3, dim=8, hidden=4)
    ckpt.save_checkpoint(tmp_path / "cpp.npz", arch.to_dict(), pruning_weights(build_pruning(arch, 0)), {})
    assert ckpt.load(str(tmp_path / "rumad.npz"), kind="rumad") and ckpt.load(
        str(tmp_path / "cpp.npz"), kind="cpp"
    )
    with pytest.raises(ckpt.CheckpointError) as e:
        ckpt.load(str(tmp_path / "rumad.npz"), kind="cpp")
    assert one_line(str(e.value)) == (
        f"checkpoint '{tmp_path / 'rumad.npz'}' holds a rumad policy, not a cpp one; give a policy that sweep "
        "train wrote for method cpp"
    )


@pytest.mark.parametrize(
    "head, seats, critic",
    [
        ("gaussian", 0, "shared"),
        ("beta", 0, "shared"),
        ("bernoulli", 6, "separate"),
        ("gaussian", 3, "separate"),
    ],
)
def test_the_expected_shapes_are_the_networks_own(head: str, seats: int, critic: str) -> None:
    module = build(PolicyArch(hidden=6, head=head, seats=seats, critic=critic), 0)
    assert shapes.expected(module.arch.to_dict()) == {
        k: tuple(v.shape) for k, v in module.state_dict().items()
    }
    for author_seat, seat_trust in ((False, False), (True, False), (False, True), (True, True)):
        arch = PruningArch(3, dim=8, hidden=5, author_seat=author_seat, seat_trust=seat_trust)
        net = build_pruning(arch, 0)
        assert shapes.expected(net.arch.to_dict()) == {k: tuple(v.shape) for k, v in net.state_dict().items()}


def _sweep_file(tmp_path: Path, method: dict[str, Any]) -> Path:
    cfg = {**BASE, "methods": [method], "output_dir": str(tmp_path / "run"), "tracking": {"enabled": False}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(cfg))
    return tmp_path / "sweep.yaml"


@pytest.mark.parametrize(
    "case", ["truncated", "a pickled object array", "a wrong shape", "no arch", "a directory"]
)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_validate_and_run_refuse_a_bad_checkpoint_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, command: str
) -> None:
    path = tmp_path / "p.npz"
    NPZ[case][0](path)
    cfg = _sweep_file(tmp_path, {"name": "rumad", "args": {"checkpoint": str(path)}})
    extra = ["--no-tracking"] if command == "run" else []
    assert main([command, str(cfg), *extra]) == 2
    err = one_line(capsys.readouterr().err)
    assert err.startswith("error: ") and f"checkpoint '{path}'" in err and NPZ[case][1] in err
    assert not (tmp_path / "run").exists()  # refused before anything is written


def test_a_cpp_checkpoint_that_does_not_fit_its_architecture_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arch = PruningArch(3, dim=8, hidden=4)
    weights = pruning_weights(build_pruning(arch, 0))
    path = tmp_path / "cpp.npz"
    ckpt.save_checkpoint(path, arch.to_dict(), weights, {})
    cfg = _sweep_file(tmp_path, {"name": "cpp", "args": {"checkpoint": str(path)}})
    assert main(["validate", str(cfg)]) == 0
    weights["fuse_query.w_d.weight"] = weights["fuse_query.w_d.weight"].T.copy()
    ckpt.save_checkpoint(path, arch.to_dict(), weights, {})
    assert main(["validate", str(cfg)]) == 2
    err = one_line(capsys.readouterr().err)
    assert "weight 'fuse_query.w_d.weight' has shape (4, 8), its architecture needs (8, 4)" in err


# --- sweep train: ownership and refusals --------------------------------------------------------


@pytest.fixture
def no_training(monkeypatch: pytest.MonkeyPatch) -> list[TrainSetup]:
    """`sweep train` up to the point where engines would start; the setups it got that far with."""
    from sweep.train import cli

    reached: list[TrainSetup] = []

    def reach(setup: TrainSetup, args: Any) -> int:
        reached.append(setup)
        return 0

    monkeypatch.setattr(cli, "_run", reach)
    return reached


def test_a_second_trainer_is_refused_in_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_training: list[TrainSetup]
) -> None:
    cfg, out = train_file(tmp_path), tmp_path / "out"
    setup = load_train(cfg, [], [], None)
    held = own_dir(out, "train", setup.fingerprint())
    try:
        assert main(["train", str(cfg), "--out", str(out)]) == 2
    finally:
        held.release()
    err = one_line(capsys.readouterr().err)
    assert err.startswith(f"error: output_dir {out}: in use by another driver (pid {os.getpid()} on ")
    assert "use another output dir (--out)" in err and "--join" not in err
    assert (
        not no_training
        and not (out / "train.resolved.yaml").exists()
        and not (out / "config.resolved.yaml").exists()
    )
    assert main(["train", str(cfg), "--out", str(out)]) == 0 and len(no_training) == 1  # once it is free
    assert (out / "train.resolved.yaml").is_file() and (out / "config.resolved.yaml").is_file()
    own_dir(out, "train", setup.fingerprint()).release()  # and the trainer let go of it


def test_the_trainer_holds_its_dir_while_it_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sweep.train import cli

    cfg, out = train_file(tmp_path), tmp_path / "out"
    seen: list[str] = []

    def busy(setup: TrainSetup, args: Any) -> int:
        with pytest.raises(OutputBusy) as e:
            own_dir(out, "train", setup.fingerprint())
        seen.append(str(e.value))
        return 0

    monkeypatch.setattr(cli, "_run", busy)
    assert main(["train", str(cfg)]) == 0 and len(seen) == 1


def test_a_trainer_pointed_at_a_sweeps_dir_is_refused_and_leaves_it_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_training: list[TrainSetup]
) -> None:
    out = tmp_path / "out"
    (out / "episodes").mkdir(parents=True)
    (out / "config.resolved.yaml").write_text("name: a sweep\n")
    assert main(["train", str(train_file(tmp_path))]) == 2
    err = one_line(capsys.readouterr().err)
    assert err.startswith(f"error: output_dir: {out} holds a sweep's results, not a training")
    assert (out / "config.resolved.yaml").read_text() == "name: a sweep\n" and not (
        out / "train.resolved.yaml"
    ).exists()
    assert not no_training


@pytest.mark.parametrize("case", ["a directory", "garbage", "no update", "a symlink"])
def test_sweep_train_refuses_a_bad_state_before_anything_starts(
    setup: TrainSetup,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    no_training: list[TrainSetup],
    case: str,
) -> None:
    record(setup, 2)
    STATES[case][0](state_file(setup))
    assert main(["train", str(tmp_path / "train.yaml")]) == 2
    err = one_line(capsys.readouterr().err)
    assert err.startswith(f"error: {state_file(setup)}: ") and STATES[case][1] in err
    assert not no_training and not (setup.out / "train.resolved.yaml").exists()


def test_sweep_train_refuses_a_missing_policy_before_anything_starts(
    setup: TrainSetup, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_training: list[TrainSetup]
) -> None:
    record(setup, 2)
    state.policy_file(setup.out, 2).unlink()
    assert main(["train", str(tmp_path / "train.yaml")]) == 2
    err = one_line(capsys.readouterr().err)
    assert "policy-u000002.npz: unusable" in err and "not found" in err and not no_training


def test_a_killed_trainings_temp_files_are_cleared_by_the_next(
    setup: TrainSetup, tmp_path: Path, no_training: list[TrainSetup]
) -> None:
    record(setup, 1)
    for name in (".trainer.pt.tmp", ".policy-u000002.npz.tmp", ".best.npz.tmp"):
        (state.checkpoint_dir(setup.out) / name).write_bytes(b"half")
    (setup.out / ".policy.npz.tmp").write_bytes(b"half")
    assert main(["train", str(tmp_path / "train.yaml")]) == 0 and temps(setup.out) == []


def test_a_dir_cut_short_while_its_configs_are_written_still_reads_as_a_training(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_training: list[TrainSetup],
) -> None:
    import sweep.run.runner

    def denied(cfg: Any, out: Path) -> None:  # the second of the two configs cannot be written
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(sweep.run.runner, "write_resolved_config", denied)
    assert main(["train", str(train_file(tmp_path))]) == 2
    out = tmp_path / "out"
    assert one_line(capsys.readouterr().err) == (
        f"error: output_dir: cannot write {out / 'config.resolved.yaml'} (Permission denied); "
        "choose a directory you can write, or fix its permissions"
    )
    assert dir_kind(out) == "train"  # so a rerun is not refused as a sweep's dir
    assert temps(out) == [] and not no_training


# --- a full disk --------------------------------------------------------------------------------


def _fail_after_writing(error: BaseException, file_arg: int = 1) -> Callable[..., None]:
    """A stand-in for torch.save (the file is its 2nd argument) or np.savez (its 1st) that fails midway."""

    def write(*args: Any, **kwargs: Any) -> None:
        args[file_arg].write(b"partial bytes")  # a temp file is there, half written, when the write fails
        raise error

    return write


@pytest.mark.parametrize(
    ("error", "free", "expect"),
    [
        (
            OSError(errno.ENOSPC, "No space left on device"),
            None,
            "no space left on the device while writing {}; free",
        ),
        (RuntimeError(ENFORCE), 0, "no space left on the device while writing {}; free space"),
        (RuntimeError(ENFORCE), 1 << 40, "cannot write {} ([enforce fail at inline_container.cc:672]"),
        (
            OSError(errno.EROFS, "Read-only file system"),
            None,
            "read-only file system while writing {}; make it",
        ),
    ],
)
def test_a_failed_state_write_is_one_line_and_leaves_the_last_update(
    setup: TrainSetup, monkeypatch: pytest.MonkeyPatch, error: BaseException, free: int | None, expect: str
) -> None:
    record(setup, 2)
    before = state_file(setup).read_bytes()
    monkeypatch.setattr(state.torch, "save", _fail_after_writing(error))
    monkeypatch.setattr(state, "free_bytes", lambda path: free)
    with pytest.raises(state.SaveFailed) as e:
        record(setup, 3, first=3)
    text = one_line(str(e.value))
    assert text.startswith(expect.format(state_file(setup))) and text.endswith(
        "rerun the same command to resume from update 2"
    )
    assert temps(setup.out) == [] and state_file(setup).read_bytes() == before
    monkeypatch.undo()
    resume = state.load(setup)
    assert (
        resume is not None
        and resume.update == 2
        and state.restore(resume, setup.out).provenance["update"] == 2
    )


def test_a_failed_policy_write_is_one_line_and_leaves_no_policy_behind(
    setup: TrainSetup, monkeypatch: pytest.MonkeyPatch
) -> None:
    record(setup, 1)
    monkeypatch.setattr(
        ckpt.np, "savez", _fail_after_writing(OSError(errno.ENOSPC, "No space left on device"), 0)
    )
    with pytest.raises(state.SaveFailed) as e:
        record(setup, 2, first=2)
    policy = state.policy_file(setup.out, 2)
    assert one_line(str(e.value)) == (
        f"no space left on the device while writing {policy}; free space and rerun the same command to "
        "resume from update 1"
    )
    assert temps(setup.out) == [] and not policy.exists()
    monkeypatch.undo()
    resume = state.load(setup)
    assert resume is not None and resume.update == 1


def test_a_failed_copy_of_the_best_or_final_policy_leaves_no_temp(
    setup: TrainSetup, monkeypatch: pytest.MonkeyPatch
) -> None:
    record(setup, 1)
    monkeypatch.setattr(
        state.shutil, "copyfileobj", _fail_after_writing(OSError(errno.ENOSPC, "No space left"))
    )
    with pytest.raises(
        state.SaveFailed, match=r"writing .*/policy\.npz; free space .* resume from update 1$"
    ):
        state.finish(setup.out, state.policy_file(setup.out, 1))
    with pytest.raises(state.SaveFailed, match=r"writing .*/checkpoints/best\.npz; .* resume from update 1$"):
        state._copy(state.policy_file(setup.out, 1), state.best_file(setup.out), 1)
    assert temps(setup.out) == [] and not (setup.out / "policy.npz").exists()


class LocalPool:
    """`sweep.engines.pool.EnginePool` on in-process simulated backends: a training without Ray."""

    def __init__(self, cfg: Any, models: Any, address: Any = None, console: Any = None, **_: Any) -> None:
        self.agents = local_agents(cfg, models)

    def __enter__(self) -> LocalPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def test_sweep_train_on_a_full_disk_is_one_line_then_a_rerun_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sweep.engines.pool

    monkeypatch.setattr(sweep.engines.pool, "EnginePool", LocalPool)
    monkeypatch.setattr(interrupt, "install", lambda: None)
    cfg, out = train_file(tmp_path), tmp_path / "out"
    real_save = torch.save

    def second_update_fails(obj: Any, f: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(obj, dict) and obj.get("update") == 2:
            f.write(b"partial")
            raise RuntimeError(ENFORCE)
        real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(state.torch, "save", second_update_fails)
    monkeypatch.setattr(state, "free_bytes", lambda path: 0)
    assert main(["train", str(cfg), "--no-tracking"]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (
        f"error: no space left on the device while writing {out / 'checkpoints' / 'trainer.pt'}; "
        "free space and rerun the same command to resume from update 1"
    )
    assert (
        temps(out) == [] and torch.load(out / "checkpoints" / "trainer.pt", weights_only=True)["update"] == 1
    )
    monkeypatch.setattr(state.torch, "save", real_save)
    assert main(["train", str(cfg), "--no-tracking"]) == 0
    assert "resumed from update 1" in capsys.readouterr().err
    assert ckpt.load(str(out / "policy.npz")).provenance["update"] == 2
