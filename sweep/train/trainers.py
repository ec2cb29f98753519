"""The trainers in one table: one `Trainer` per learned method, registered once, in the trainer's own
torch-free file (`sweep/train/ppo_config.py`: RUMAD's PPO; `sweep/train/pg_config.py`: CPP's policy
gradient). An entry holds everything the code around a training reads of it: the method it trains,
its algorithm's name (also the key of its own section, which holds its `updates` and `seed`), its
reward coefficients' class (the `reward:` keys), its config sections and their classes, the keys of
its own section a study may tune beside the reward, a check across its sections, and the module with
its program (`run(setup, agents, tracker, console, on_update, progress)`, awaited by `sweep.train.run`
and imported when a training starts: torch stays unloaded until then). Nothing switches on a name.

A training config holds the sections of every registered trainer (each validated by its own class,
defaults when absent); the chosen trainer's alone enter the training's fingerprint."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from common.registry import Registry


class OwnSection(Protocol):
    """What every trainer's own section holds (checked when a `Trainer` is made)."""

    @property
    def updates(self) -> int: ...
    @property
    def seed(self) -> int: ...


@dataclass(frozen=True)
class Trainer:
    """One learned method's trainer (see the module docstring)."""

    method: str  # the learned router it trains (a registered method)
    name: str  # its algorithm, and the key of its own section (`ppo:`, `pg:`): `updates`, `seed`
    reward: type  # a dataclass: its fields are the `reward:` keys, its __post_init__ their ranges
    sections: Mapping[str, type[BaseModel]]  # every config section it reads, its own among them
    module: str  # the module with its program `run`
    tuned: tuple[str, ...] = ()  # keys of its own section a study may tune
    check: Callable[[Any], None] | None = None  # (TrainConfig) -> None: ValueError across sections
    fingerprinted: tuple[str, ...] = ()  # keys of the config's own its fingerprint keeps (`algorithm`)

    def __post_init__(self) -> None:
        own = self.sections.get(self.name)
        if own is None:
            raise TypeError(f"trainer '{self.name}': its own section '{self.name}' is not among its sections")
        lacking = [k for k in ("updates", "seed", *self.tuned) if k not in own.model_fields]
        if lacking:
            raise TypeError(f"trainer '{self.name}': section '{self.name}' lacks {', '.join(lacking)}")
        if not dataclasses.is_dataclass(self.reward):
            raise TypeError(f"trainer '{self.name}': its reward class must be a dataclass")

    @property
    def own(self) -> type[BaseModel]:
        """The class of its own section."""
        return self.sections[self.name]

    def reward_keys(self) -> list[str]:
        """The reward coefficients a config's `reward:` may set."""
        return [f.name for f in dataclasses.fields(self.reward)]

    def programs(self) -> Any:
        """The module with its `run` (imported now: it may import torch)."""
        return importlib.import_module(self.module)


# By the method each trains; the builtins are the trainers' own files, imported on the first read.
TRAINERS: Registry[Trainer] = Registry(
    "trainable method", builtins=("sweep.train.ppo_config", "sweep.train.pg_config")
)


def register(trainer: Trainer) -> Trainer:
    """Enter `trainer` in the table under its method; a section key another trainer reads with
    another class is refused (a config's `ppo:` is validated by one class)."""
    for other in TRAINERS.values():
        for key, cls in trainer.sections.items():
            if other.method != trainer.method and other.sections.get(key, cls) is not cls:
                raise TypeError(
                    f"trainer '{trainer.name}': section '{key}' is {other.name}'s, of another class"
                )
    TRAINERS[trainer.method] = trainer
    return trainer


def all_sections() -> dict[str, type[BaseModel]]:
    """Every registered trainer's sections (by method, then as it lists them): the keys a training
    config may hold beside its own. Import order never changes them."""
    return {key: cls for m in TRAINERS.names() for key, cls in TRAINERS[m].sections.items()}
