"""A training's checkpoints on disk, and resuming from them.

    <output_dir>/checkpoints/policy-u000012.npz   the policy after update 12 (`debate.policies.checkpoint`:
                                                  weights, architecture, the config that made it, hash)
    <output_dir>/checkpoints/trainer.pt           what resuming needs: the update count, the optimizer,
                                                  the rng, every update's metrics, the policy file's name
                                                  and hash
    <output_dir>/checkpoints/best.npz             the policy of the best evaluation so far (by eval.return)
    <output_dir>/policy.npz                       the final policy

After every update the policy file is written, then `trainer.pt` (each atomically: temp file, then
rename), so a training killed at any moment (SIGKILL included) resumes from the last update whose
`trainer.pt` landed, with the exact policy, optimizer and rng it had. Policy files of updates that are
neither the latest nor a multiple of `checkpoint_every` are removed once a later one is recorded.

What cannot be trusted is refused in one line (`ConfigError`) before a training starts: a `trainer.pt`
that is no regular file, is damaged, holds another config's state, or names a policy file that is
missing or does not match. A write that fails (a full disk) is one line too (`SaveFailed`), leaves no
temp file, and leaves the last recorded update as it was.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import re
import shutil
import stat
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch

from debate.policies import checkpoint as ckpt
from sweep.config.sweep import ConfigError
from sweep.store.repair import free_bytes, is_disk_full
from sweep.train.config import TrainSetup

TRAINER_STATE = "trainer.pt"
_POLICY = re.compile(r"policy-u(\d{6})\.npz")
FULL_BYTES = 1 << 20  # less free space than this after a failed write: the disk was full


class SaveFailed(RuntimeError):
    """A checkpoint that could not be written: one line naming the file, why, and how to go on (exit 1).
    The last recorded update stays on disk, so rerunning the same command resumes from it."""


@dataclass
class Resume:
    """What `trainer.pt` holds."""

    update: int  # updates done
    optimizer: dict[str, Any]
    rng: dict[str, Any]
    history: list[dict[str, float]]
    policy_file: str
    policy_hash: str


def checkpoint_dir(out: Path) -> Path:
    return out / "checkpoints"


def policy_file(out: Path, update: int) -> Path:
    return checkpoint_dir(out) / f"policy-u{update:06d}.npz"


def provenance(setup: TrainSetup, update: int) -> dict[str, Any]:
    """The config that made a checkpoint: the training config, the resolved base sweep, the update."""
    return {
        "train_config": setup.cfg.model_dump(mode="json"),
        "base_sweep": setup.base.model_dump(mode="json", exclude={"tracking", "ray"}),
        "fingerprint": setup.fingerprint(),
        "method": {"name": setup.cfg.method.name, "args": dict(setup.cfg.method.args)},
        "update": update,
    }


def save(
    setup: TrainSetup,
    update: int,
    module: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    rng: np.random.Generator,
    history: list[dict[str, float]],
) -> tuple[Path, str]:
    """Record the state after `update` updates; returns the policy file and its content hash."""
    out = setup.out
    path = policy_file(out, update)
    weights = {k: v.detach().cpu().numpy().copy() for k, v in module.state_dict().items()}
    arch: Any = module.arch
    with _saving(path, update - 1):  # save_checkpoint removes its own temp file when it fails
        digest = ckpt.save_checkpoint(path, arch.to_dict(), weights, provenance(setup, update))
    evals = [h["eval.return"] for h in history if "eval.return" in h]
    if evals and "eval.return" in history[-1] and history[-1]["eval.return"] >= max(evals):
        _copy(path, best_file(out), update - 1)  # before trainer.pt: a resumed training never lacks its best
    state = {
        "fingerprint": setup.fingerprint(),
        "update": update,
        "optimizer": optimizer.state_dict(),
        "rng": rng.bit_generator.state,
        "history": history,
        "policy_file": path.name,
        "policy_hash": digest,
    }
    _atomic(checkpoint_dir(out) / TRAINER_STATE, lambda f: torch.save(state, f), update - 1)
    _prune(out, update, setup.cfg.checkpoint_every)
    return path, digest


def _prune(out: Path, latest: int, every: int) -> None:
    for p in checkpoint_dir(out).glob("policy-u*.npz"):
        m = _POLICY.fullmatch(p.name)
        if m and int(m.group(1)) != latest and int(m.group(1)) % every != 0:
            with contextlib.suppress(OSError):  # a file left over costs space, never correctness
                p.unlink(missing_ok=True)


def _atomic(target: Path, write: Callable[[IO[bytes]], object], recorded: int) -> None:
    """Write `target` whole or not at all: a temp file beside it, synced, then renamed over it. A write
    that fails removes the temp file and is one `SaveFailed` line (`recorded`: the updates on disk)."""
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        with _saving(target, recorded), open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
            tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)  # gone already after the rename; a failed write's leftovers


@contextlib.contextmanager
def _saving(target: Path, recorded: int) -> Iterator[None]:
    """Turn a failed write of `target` into one `SaveFailed` line. torch writing to a path reports a
    failed write as a `RuntimeError` ("[enforce fail at inline_container.cc] ... file write failed")
    without an errno, so a full disk is also told by its free space (read before any temp file goes)."""
    try:
        yield
    except (OSError, RuntimeError) as e:
        code = e.errno if isinstance(e, OSError) else None
        free = free_bytes(target.parent) if code is None else None
        if is_disk_full(e) or (free is not None and free < FULL_BYTES):
            code = errno.ENOSPC
        raise SaveFailed(_save_failure(target, e, code, recorded)) from None


def _save_failure(target: Path, error: BaseException, code: int | None, recorded: int) -> str:
    resume = f"resume from update {recorded}" if recorded > 0 else "start again"
    then = f"rerun the same command to {resume}"
    if code in (errno.ENOSPC, errno.EDQUOT):
        return f"no space left on the device while writing {target}; free space and {then}"
    if code == errno.EROFS:
        return f"read-only file system while writing {target}; make it writable and {then}"
    why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    return f"cannot write {target} ({' '.join(why.split())[:160]}); fix that and {then}"


def load(setup: TrainSetup) -> Resume | None:
    """The recorded state of this training, or None when it has not recorded one yet. A state that is
    not a regular file, is damaged, or was left by a training of another config is refused (ConfigError)."""
    path = checkpoint_dir(setup.out) / TRAINER_STATE
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return None
    except OSError as e:  # e.g. checkpoints/ is a file
        raise not_a_state(path, f"cannot be read: {e.strerror}") from None
    if not stat.S_ISREG(mode):  # a directory would pass for "no state": train from scratch, then die
        what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        what = "a symlink" if stat.S_ISLNK(mode) else what
        raise not_a_state(path, f"is {what}, not a training state")
    state = _read(path)
    check_state(path, state)
    if state["fingerprint"] != setup.fingerprint():
        raise ConfigError(
            f"{path}: a training of another config (base sweep, method, reward or {' or '.join(setup.trainer.sections)}); "
            f"use a new output_dir, or move {checkpoint_dir(setup.out)} aside to start over"
        )
    return Resume(**{f.name: state[f.name] for f in dataclasses.fields(Resume)})


def not_a_state(path: Path, what: str) -> ConfigError:
    """The one-line error for a `trainer.pt` that cannot be trusted: the file, what is wrong, the fix."""
    return ConfigError(f"{path}: {what}; move it aside to start over, or restore it from a backup")


_FIELDS: dict[str, type] = {"fingerprint": str, "update": int, "optimizer": dict, "rng": dict}
_FIELDS |= {"history": list, "policy_file": str, "policy_hash": str}


def check_state(path: Path, state: Any) -> None:
    """ConfigError unless `state` is what `save` writes: every field, of its type, consistent."""
    if not isinstance(state, dict):
        raise not_a_state(path, f"holds a {type(state).__name__}, not a training state")
    missing = [k for k in _FIELDS if k not in state]
    if missing:
        raise not_a_state(path, f"not a training state (it lacks {', '.join(missing)})")
    for key, kind in _FIELDS.items():
        if not isinstance(state[key], kind) or isinstance(state[key], bool):
            raise not_a_state(
                path, f"its '{key}' is of type {type(state[key]).__name__}, not {kind.__name__}"
            )
    wrong = _inconsistency(state)
    if wrong:
        raise not_a_state(path, wrong)


def _inconsistency(state: dict[str, Any]) -> str | None:
    """What in a well-typed state contradicts itself, or None."""
    update, history, optimizer = state["update"], state["history"], state["optimizer"]
    if update != len(history):
        return f"its update count {update} disagrees with its {len(history)} recorded updates"
    number = (int, float)
    if not all(isinstance(h, dict) and all(isinstance(v, number) for v in h.values()) for h in history):
        return "its 'history' holds something other than each update's metrics"
    if state["policy_file"] != policy_file(Path(), update).name:
        return f"its 'policy_file' {state['policy_file']!r} is not the policy of update {update}"
    if not isinstance(optimizer.get("state"), dict) or not isinstance(optimizer.get("param_groups"), list):
        return "its 'optimizer' is not an optimizer's state"
    try:
        np.random.PCG64().state = state["rng"]  # the generator `save` recorded: a foreign one is refused
    except (TypeError, ValueError, KeyError, OverflowError):
        return "its 'rng' is not a random generator's state"
    return None


def _read(path: Path) -> Any:
    """What `trainer.pt` holds, read without following a link and without unpickling anything."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # swapped for a link or fifo since
    except OSError as e:
        raise not_a_state(path, f"cannot be read: {e.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise not_a_state(path, "is not a regular file")
        if os.fstat(fd).st_size == 0:
            raise not_a_state(path, "is empty, not a training state (a write cut short)")
        try:
            with warnings.catch_warnings():  # torch warns about a foreign pickle on stderr
                warnings.simplefilter("ignore")
                return torch.load(f, weights_only=True)  # never unpickles code
        except Exception as e:  # noqa: BLE001 - a damaged file makes torch raise any of a dozen types
            why = " ".join(f"{type(e).__name__}: {e}".split())[:120]
            raise not_a_state(path, f"not a training state (truncated or foreign file; {why})") from None


def restore(resume: Resume, out: Path) -> ckpt.Checkpoint:
    """The policy checkpoint a state names, checked against the hash the state recorded."""
    state_file, policy = checkpoint_dir(out) / TRAINER_STATE, checkpoint_dir(out) / resume.policy_file
    fix = f"restore {policy} from a backup, or move {checkpoint_dir(out)} aside to start over"
    try:
        loaded = ckpt.load(str(policy))
    except ckpt.CheckpointError as e:
        why = str(e).removesuffix(f"; {ckpt.FIX}")  # the fix for a policy a config names: not this one
        raise ConfigError(f"{state_file} names {resume.policy_file}: unusable ({why}); {fix}") from None
    if loaded.digest != resume.policy_hash:
        raise ConfigError(f"{policy} does not match the hash {state_file} recorded for it; {fix}")
    return loaded


def clean_temps(out: Path) -> None:
    """Remove the temp files a killed training left (call it only while holding the output dir)."""
    for tmp in [*checkpoint_dir(out).glob(".*.tmp"), out / ".policy.npz.tmp"]:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def best_file(out: Path) -> Path:
    return checkpoint_dir(out) / "best.npz"


def _copy(src: Path, dest: Path, recorded: int) -> None:
    with open(src, "rb") as source:
        _atomic(dest, lambda f: shutil.copyfileobj(source, f), recorded)


def finish(out: Path, latest: Path) -> Path:
    """Copy the latest policy to `<output_dir>/policy.npz` (the training's result)."""
    m = _POLICY.fullmatch(latest.name)
    _copy(latest, out / "policy.npz", int(m.group(1)) if m else 0)  # every update is recorded by now
    return out / "policy.npz"
