"""Engines registered by name; `build_backend(engine, model, args)` makes one inside its host process."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from actors.arguments import ArgsCheck, check_args
from actors.base import Backend

BackendFactory = Callable[..., Backend]
_ENGINES: dict[str, BackendFactory] = {}
_CHECKS: dict[str, ArgsCheck] = {}


def backend(name: str, check: ArgsCheck | None = None) -> Callable[[BackendFactory], BackendFactory]:
    """Register an engine factory under `name`; the factory takes `model=` and the engine's args.
    `check`, called with every argument (defaults filled in), raises ValueError on a bad range."""

    def deco(factory: BackendFactory) -> BackendFactory:
        _ENGINES[name] = factory
        if check is not None:
            _CHECKS[name] = check
        return factory

    return deco


def check_engine_args(engine: str, model: str, args: dict[str, Any]) -> None:
    """ValueError (naming `args.<name>`) unless `args` are arguments `engine` declares, of the
    declared types and within the engine's ranges; nothing is built or imported heavily."""
    _load_builtins()
    if engine not in _ENGINES:
        raise ValueError(unknown_name_message("engine", engine, sorted(_ENGINES)))
    check_args(engine, _ENGINES[engine], _CHECKS.get(engine), model, args)


def engine_names() -> list[str]:
    _load_builtins()
    return sorted(_ENGINES)


def unknown_name_message(kind: str, name: str, known: list[str]) -> str:
    """'unknown engine 'simulatd' (did you mean 'simulated'?; known: ...)' — shared by every registry."""
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"unknown {kind} '{name}'{hint}; known: {', '.join(known)}"


def build_backend(engine: str, model: str, args: dict[str, Any] | None = None) -> Backend:
    """Instantiate engine `engine` serving `model`. Heavy engines import their libraries here, lazily."""
    _load_builtins()
    if engine not in _ENGINES:
        raise KeyError(unknown_name_message("engine", engine, sorted(_ENGINES)))
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
