"""The one registry of the project: entries by name, filled lazily, read as a mapping.

Methods, engines, benchmarks, study samplers and pruners each keep one `Registry`. An entry is
whatever its floor stores (a method's definition, an engine's factory with its traits, a
benchmark's loader); the registry only knows names. `builtins` names the modules whose import
registers the built-in entries: they are imported on the first read, not when the registry is
made, so that naming a registry costs no import. An unknown name is one line with a did-you-mean
(`UnknownName`, a `KeyError` and a `ValueError` at once, so either `except` reads it).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from typing import TypeVar

from common.names import unknown_name

T = TypeVar("T")
E = TypeVar("E")


class UnknownName(KeyError, ValueError):
    """A name no entry has; `str()` is the one-line message (a bare KeyError would quote it)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Registry(MutableMapping[str, T]):
    """Entries of one `kind` ("method", "engine", ...) by name; `builtins` are imported on first read."""

    def __init__(self, kind: str, builtins: Sequence[str] = ()) -> None:
        self.kind = kind
        self._builtins = tuple(builtins)
        self._loaded = not self._builtins
        self._entries: dict[str, T] = {}

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True  # first: a builtin module that reads the registry while registering is fine
        for module in self._builtins:
            importlib.import_module(module)

    def register(self, name: str) -> Callable[[E], E]:
        """A decorator storing the decorated object itself as entry `name` (a factory, a class)."""

        def deco(obj: E) -> E:
            self[name] = obj  # type: ignore[assignment]
            return obj

        return deco

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted(self)

    def unknown(self, name: str) -> UnknownName:
        """The error for `name`: "unknown engine 'simulatd' (did you mean 'simulated'?); known: ..."."""
        return UnknownName(unknown_name(self.kind, name, self.names()))

    def __getitem__(self, name: str) -> T:
        self._load()
        try:
            return self._entries[name]
        except KeyError:
            raise self.unknown(name) from None

    def __setitem__(self, name: str, entry: T) -> None:
        self._entries[name] = entry

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(self._entries)

    def __len__(self) -> int:
        self._load()
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {sorted(self._entries)})"
