"""Which engine plays each member of a targets file's team: the population model of a population
(`population_backends`), or v1's simulated engine with the targets' `v1` arguments (`v1_backends`).
Both are picklable values, so a sharded run's workers (`sweep.calibrate.workers`) rebuild the same
engines from them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from actors.base import Backend
from actors.population import PopulationBackend
from actors.populations import Population
from actors.simulated import SimulatedBackend
from sweep.calibrate.targets import Targets
from sweep.config.errors import ConfigError

MakeBackend = Callable[[str], Backend]  # member name -> the engine that plays it


@dataclass(frozen=True)
class PopulationBackends:
    """Member name -> the population model playing that member of `population` (picklable: a
    sharded run's workers rebuild the engines from it)."""

    population: Population

    def __call__(self, member: str) -> Backend:
        return PopulationBackend(model=member, population=self.population, member=member)


@dataclass(frozen=True)
class V1Backends:
    """Member name -> the v1 engine with the targets' `v1` arguments for it (picklable)."""

    v1: Mapping[str, Mapping[str, Any]]

    def __call__(self, member: str) -> Backend:
        if member not in self.v1:
            raise ConfigError(
                f"v1.{member}: no v1 engine arguments for member '{member}'; add them, or pass --no-v1"
            )
        try:
            return SimulatedBackend(model=member, **self.v1[member])
        except (TypeError, ValueError) as e:
            raise ConfigError(f"v1.{member}: {e}; fix the member's v1 engine arguments") from None


def population_backends(population: Population) -> MakeBackend:
    """Member name -> the population model playing that member of `population`."""
    return PopulationBackends(population)


def v1_backends(targets: Targets) -> MakeBackend:
    """Member name -> the v1 engine with the targets' `v1` arguments for it."""
    return V1Backends(targets.v1)
