"""Engines registered by name; `build_backend(engine, model, args)` makes one inside its host process."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from actors.arguments import ArgsCheck, check_args, declared
from actors.base import Backend
from common.registry import Registry

BackendFactory = Callable[..., Backend]


@dataclass(frozen=True)
class Traits:
    """What the sweep may ask of an engine without knowing its name: `simulated` — its agents are
    simulated (results are labelled so; its time is its own, so no throughput profile); `reads_gold`
    — its requests' hints reach the agent whole, gold included (a method that reads the gold runs only
    on such an engine); `in_process` — cheap enough to run in the driver unless a cluster is named;
    `population_arg` — the argument naming the population its model plays (none: population v1)."""

    simulated: bool = False
    reads_gold: bool = False
    in_process: bool = False
    population_arg: str | None = None


@dataclass(frozen=True)
class Engine:
    """A registered engine: its factory (`model=` and the engine's args), the range check its
    arguments get (None: types only) and its traits."""

    factory: BackendFactory
    check: ArgsCheck | None = None
    traits: Traits = Traits()


# The builtin engines register when their modules are imported, on the first lookup; none of them
# imports a heavy engine at module level (llama_cpp, vllm, aiohttp are imported inside the classes).
BUILTIN_ENGINE_MODULES = ("actors.simulated", "actors.llama_cpp", "actors.vllm_engine", "actors.http")
ENGINES: Registry[Engine] = Registry("engine", builtins=BUILTIN_ENGINE_MODULES)


def backend(
    name: str, check: ArgsCheck | None = None, traits: Traits = Traits()
) -> Callable[[BackendFactory], BackendFactory]:
    """Register an engine factory under `name`, with its `traits`; the factory takes `model=` and the
    engine's args. `check`, called with every argument (defaults filled in), raises ValueError on a
    bad range."""

    def deco(factory: BackendFactory) -> BackendFactory:
        ENGINES[name] = Engine(factory, check, traits)
        return factory

    return deco


def engine_traits(engine: str) -> Traits:
    """The traits engine `engine` registered with (`UnknownName`, a KeyError, naming the known engines)."""
    return ENGINES[engine].traits


def check_engine_args(engine: str, model: str, args: dict[str, Any]) -> None:
    """ValueError (naming `args.<name>`) unless `args` are arguments `engine` declares, of the
    declared types and within the engine's ranges; nothing is built or imported heavily."""
    e = ENGINES[engine]
    check_args(engine, e.factory, e.check, model, args)


def engine_names() -> list[str]:
    return ENGINES.names()


def engine_arguments(engine: str) -> dict[str, Any]:
    """The arguments a config may give engine `engine`, with their defaults (`inspect.Parameter.empty`
    when required)."""
    return {n: p.default for n, p in declared(ENGINES[engine].factory).items()}


def build_backend(engine: str, model: str, args: dict[str, Any] | None = None) -> Backend:
    """Instantiate engine `engine` serving `model`. Heavy engines import their libraries here, lazily."""
    return ENGINES[engine].factory(model=model, **(args or {}))
