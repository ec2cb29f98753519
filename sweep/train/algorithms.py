"""The training algorithms in one table: the config sections each reads, its own hyperparameter
section (named as the algorithm: `ppo:` or `pg:`, which holds its `updates` and `seed`), the keys of
that section a study may tune beside the reward, and the module holding its program
(`run(setup, agents, tracker, console, on_update, progress)`, awaited by `sweep.train.run` and
imported when a training starts: torch stays unloaded until then). Code that depends on the algorithm reads this table; nothing
switches on its name."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from pydantic import BaseModel

from sweep.train.hparams import PGConfig, PPOConfig

SECTIONS = frozenset({"ppo", "policy", "pg", "cpp", "algorithm"})  # the keys some algorithm reads


@dataclass(frozen=True)
class Algorithm:
    """One algorithm (see the module docstring)."""

    name: str
    reads: frozenset[str]  # its config sections; the others stay out of a training's fingerprint
    hparams: type[BaseModel]  # the class of its own section
    tuned: tuple[str, ...]  # keys of its own section a study may tune
    module: str

    def programs(self) -> ModuleType:
        """The module with its `run`."""
        return importlib.import_module(self.module)


ALGORITHMS = {
    "ppo": Algorithm("ppo", frozenset({"ppo", "policy"}), PPOConfig, (), "sweep.train.ppo"),
    "pg": Algorithm(
        "pg",
        frozenset({"pg", "cpp", "algorithm"}),
        PGConfig,
        ("lr", "entropy_coef", "entropy_decay"),
        "sweep.train.pg",
    ),
}
TUNED = frozenset(k for a in ALGORITHMS.values() for k in a.tuned)  # what any algorithm lets a study tune
