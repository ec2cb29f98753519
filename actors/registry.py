"""Engines registered by name; `build_backend(engine, model, args)` makes one inside its host process."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from actors.arguments import ArgsCheck, check_args, declared
from actors.base import Backend
from common.names import unknown_name

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


_ENGINES: dict[str, BackendFactory] = {}
_CHECKS: dict[str, ArgsCheck] = {}
_TRAITS: dict[str, Traits] = {}


def backend(
    name: str, check: ArgsCheck | None = None, traits: Traits = Traits()
) -> Callable[[BackendFactory], BackendFactory]:
    """Register an engine factory under `name`, with its `traits`; the factory takes `model=` and the
    engine's args. `check`, called with every argument (defaults filled in), raises ValueError on a
    bad range."""

    def deco(factory: BackendFactory) -> BackendFactory:
        _ENGINES[name] = factory
        _TRAITS[name] = traits
        if check is not None:
            _CHECKS[name] = check
        return factory

    return deco


def engine_traits(engine: str) -> Traits:
    """The traits engine `engine` registered with (KeyError naming the known engines)."""
    _load_builtins()
    if engine not in _TRAITS:
        raise KeyError(unknown_name("engine", engine, sorted(_ENGINES)))
    return _TRAITS[engine]


def check_engine_args(engine: str, model: str, args: dict[str, Any]) -> None:
    """ValueError (naming `args.<name>`) unless `args` are arguments `engine` declares, of the
    declared types and within the engine's ranges; nothing is built or imported heavily."""
    _load_builtins()
    if engine not in _ENGINES:
        raise ValueError(unknown_name("engine", engine, sorted(_ENGINES)))
    check_args(engine, _ENGINES[engine], _CHECKS.get(engine), model, args)


def engine_names() -> list[str]:
    _load_builtins()
    return sorted(_ENGINES)


def engine_arguments(engine: str) -> dict[str, Any]:
    """The arguments a config may give engine `engine`, with their defaults (`inspect.Parameter.empty`
    when required)."""
    _load_builtins()
    return {n: p.default for n, p in declared(_ENGINES[engine]).items()}


def build_backend(engine: str, model: str, args: dict[str, Any] | None = None) -> Backend:
    """Instantiate engine `engine` serving `model`. Heavy engines import their libraries here, lazily."""
    _load_builtins()
    if engine not in _ENGINES:
        raise KeyError(unknown_name("engine", engine, sorted(_ENGINES)))
    return _ENGINES[engine](model=model, **(args or {}))


BUILTIN_ENGINE_MODULES = ("actors.simulated", "actors.llama_cpp", "actors.vllm_engine", "actors.http")


def _load_builtins() -> None:
    # Importing the modules registers them; none of them imports a heavy engine at module level
    # (llama_cpp, vllm, aiohttp are imported inside the engine classes).
    import importlib
    import importlib.util

    for name in BUILTIN_ENGINE_MODULES:
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)
