"""What a training config may hold, beyond its shape: every count a strict whole number within a bound
a machine can run, every float finite (`true`, `.inf`, NaN and `1e12` as a count are refused), seeds
as the sweep's (`sweep.config.fields.Seed`), a run name that is a plain path component, and an output dir
that is a place of its own (`sweep.config.paths`) holding nothing but a training (`sweep.store.targets`)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from sweep.config import paths
from sweep.config.errors import ConfigError
from sweep.config.fields import NoBool, PlainName
from sweep.config.fields import (
    Offset as Offset,  # re-exported: the bounds of a training's fields are read here
)
from sweep.config.fields import Seed as Seed
from sweep.store.targets import dir_kind, refuse_other_kind

HIDDEN_MAX = 65_536  # units of a hidden layer: a RUMAD layer is hidden x hidden, 17 GB of float32 at this
EPISODES_MAX = 100_000  # episodes of one update or evaluation: each is a whole debate
UPDATES_MAX = 1_000_000
EPOCHS_MAX = 1000
ITEMS_MAX = 10_000  # validation questions each seat answers for its behaviour embedding
EVERY_MAX = 1_000_000  # checkpoint_every, eval_every: more than any training's updates
COEF_MAX = 1e6  # loss coefficients, clip, grad norm, KL target: far past any useful value, never overflowing
REWARD_MAX = 1e9  # |a reward coefficient| (token_scale included)


def _number(v: Any) -> Any:
    # PyYAML (YAML 1.1) reads 1e-4 as text; a learning rate is often written so: read it as the number
    if isinstance(v, str) and _EXPONENT.fullmatch(v.strip()):
        v = float(v)
    # checked before the field's range, which would call NaN too high or too low
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"{v} is not a finite number; give a finite number such as 0.5")
    return NoBool.func(v)  # type: ignore[call-arg]  # a bool or other text: refused as in sweep configs


_EXPONENT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")
Number = BeforeValidator(_number)


def _count(low: int, high: int) -> Any:
    return Field(ge=low, le=high, strict=True)


# Counts: strict whole numbers (no true, no "3", no 3.0 or 1e12), each with its bound.
Hidden = Annotated[int, _count(1, HIDDEN_MAX)]
Updates = Annotated[int, _count(1, UPDATES_MAX)]
Stage = Annotated[int, _count(0, UPDATES_MAX)]  # pg.first_stage_updates (0: one stage)
Episodes = Annotated[int, _count(1, EPISODES_MAX)]  # episodes_per_update, eval_episodes, minibatches
Epochs = Annotated[int, _count(1, EPOCHS_MAX)]
Items = Annotated[int, _count(1, ITEMS_MAX)]
Every = Annotated[int, _count(1, EVERY_MAX)]
EveryOrNever = Annotated[int, _count(0, EVERY_MAX)]  # 0: never
# Floats: finite; a field adds its own range with Field(gt=..., le=...).
Finite = Annotated[float, Number, Field(allow_inf_nan=False)]
Coef = Annotated[float, Number, Field(ge=0.0, le=COEF_MAX, allow_inf_nan=False)]
PositiveCoef = Annotated[float, Number, Field(gt=0.0, le=COEF_MAX, allow_inf_nan=False)]
RewardValue = Annotated[float, Number, Field(ge=-REWARD_MAX, le=REWARD_MAX, allow_inf_nan=False)]
StrictBool = Annotated[bool, Field(strict=True)]


# The training's name: 1-100 characters, usable as one path component.
RunName = PlainName

# A checkpoints/ of a training killed before its first trainer.pt landed (a study trial's, resumed).
_CHECKPOINT = re.compile(r"policy-u\d{6}\.npz|best\.npz|trainer\.pt|\..+\.tmp")


def _begun_training(path: Path) -> bool:
    ckpts = path / "checkpoints"
    return ckpts.is_dir() and all(_CHECKPOINT.fullmatch(p.name) for p in ckpts.iterdir())


def training_dir(value: str, field: str = "output_dir") -> str:
    """`value` checked as a training's output dir, before anything is written: not empty, a system
    place, the current or home dir, a file, a dir of unrelated files (`sweep.config.paths.output_dir`), nor
    a sweep's, a study's or a report's dir; a training's own dir (a study trial's included) is fine.
    Returns it, with `~` expanded; ConfigError otherwise."""
    path = paths.place(value, field, "a directory such as runs/my-training")
    try:
        ours = dir_kind(path) == "train" or _begun_training(path)
        refuse_other_kind(path, "train", field)
    except OSError as e:
        raise ConfigError(f"{field}: {path} cannot be read ({e.strerror}); check its permissions") from None
    if not ours:
        paths.output_dir(value, field)
    return str(path) if value.strip().startswith("~") else value
