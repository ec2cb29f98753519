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
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from debate.policies import checkpoint as ckpt
from sweep.config import ConfigError
from sweep.train.config import TrainSetup

TRAINER_STATE = "trainer.pt"
_POLICY = re.compile(r"policy-u(\d{6})\.npz")


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
    digest = ckpt.save_checkpoint(path, arch.to_dict(), weights, provenance(setup, update))
    evals = [h["eval.return"] for h in history if "eval.return" in h]
    if evals and "eval.return" in history[-1] and history[-1]["eval.return"] >= max(evals):
        _copy(path, best_file(out))  # before trainer.pt: a resumed training never lacks its best
    state = {
        "fingerprint": setup.fingerprint(),
        "update": update,
        "optimizer": optimizer.state_dict(),
        "rng": rng.bit_generator.state,
        "history": history,
        "policy_file": path.name,
        "policy_hash": digest,
    }
    target = checkpoint_dir(out) / TRAINER_STATE
    tmp = target.with_name(f".{TRAINER_STATE}.tmp")
    torch.save(state, tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    tmp.replace(target)
    _prune(out, update, setup.cfg.checkpoint_every)
    return path, digest


def _prune(out: Path, latest: int, every: int) -> None:
    for p in checkpoint_dir(out).glob("policy-u*.npz"):
        m = _POLICY.fullmatch(p.name)
        if m and int(m.group(1)) != latest and int(m.group(1)) % every != 0:
            p.unlink(missing_ok=True)


def load(setup: TrainSetup) -> Resume | None:
    """The recorded state of this training, or None when it has not recorded one yet. A state left by
    a training of another config is refused (ConfigError)."""
    path = checkpoint_dir(setup.out) / TRAINER_STATE
    if not path.is_file():
        return None
    state = torch.load(path, weights_only=True)
    if state["fingerprint"] != setup.fingerprint():
        raise ConfigError(
            f"output_dir: {setup.out} holds a training of another config (base sweep, method, policy, reward "
            "or ppo); use a new output_dir, or remove its checkpoints/ to start over"
        )
    return Resume(
        int(state["update"]), state["optimizer"], state["rng"], list(state["history"]),
        str(state["policy_file"]), str(state["policy_hash"]),
    )  # fmt: skip


def restore(resume: Resume, out: Path) -> ckpt.Checkpoint:
    """The policy checkpoint a state names, checked against the hash the state recorded."""
    loaded = ckpt.load(str(checkpoint_dir(out) / resume.policy_file))
    if loaded.digest != resume.policy_hash:
        raise ConfigError(f"checkpoints/{resume.policy_file} does not match {TRAINER_STATE}; remove checkpoints/ to start over")
    return loaded


def best_file(out: Path) -> Path:
    return checkpoint_dir(out) / "best.npz"


def _copy(src: Path, dest: Path) -> None:
    tmp = dest.with_name(f".{dest.name}.tmp")
    shutil.copyfile(src, tmp)
    tmp.replace(dest)


def finish(out: Path, latest: Path) -> Path:
    """Copy the latest policy to `<output_dir>/policy.npz` (the training's result)."""
    _copy(latest, out / "policy.npz")
    return out / "policy.npz"
