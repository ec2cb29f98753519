"""Frozen `(name, args)` specs and name registries: one spec object feeds the episode id hash, the
`method_spec` column, MLflow params and Optuna — so they can never drift apart."""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from common.names import closest as closest  # re-exported: the project's one did-you-mean
from common.registry import Registry

T = TypeVar("T")


# One encoder for every call: `json.dumps` with options builds a new encoder each time, and ids,
# seeds and cache keys canonicalise on every model call.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
_encode_str = json.encoder.encode_basestring_ascii  # what the encoder does with a str


def canonical_json(value: Any) -> str:
    """Byte-stable JSON: sorted keys, no whitespace. The input of every id hash."""
    return _CANONICAL.encode(value)


def part_json(value: Any) -> str:
    """`canonical_json(value)`, with the common scalars done directly (same bytes)."""
    kind = type(value)
    if kind is int:
        return int.__repr__(value)
    if kind is str:
        return _encode_str(value)
    if kind is float and value - value == 0.0:  # finite (the encoder writes NaN and Infinity its own way)
        return float.__repr__(value)
    if value is None:
        return "null"
    return _CANONICAL.encode(value)


_GIL_FREE = 2048  # hashlib releases the GIL while it hashes this many bytes or more at once


def hash_text(text: str, length: int = 16) -> str:
    """The digest `stable_hash` takes of an already canonical JSON text."""
    data = text.encode()
    if len(data) < _GIL_FREE:
        return hashlib.blake2b(data, digest_size=32).hexdigest()[:length]
    # Fed in pieces that keep the GIL (the same digest): a cache key hashes a whole prompt (~2.5 KB)
    # on the event loop's thread, and each release there let a writer thread take the GIL, the loop
    # waiting to get it back (`bench/gil_release.py`).
    h, view = hashlib.blake2b(digest_size=32), memoryview(data)
    for i in range(0, len(data), _GIL_FREE - 1):
        h.update(view[i : i + _GIL_FREE - 1])
    return h.hexdigest()[:length]


def stable_hash(value: Any, length: int = 16) -> str:
    """A short hex digest of `canonical_json(value)`, stable across processes and machines."""
    return hash_text(canonical_json(value), length)


def derive_seed(*parts: Any) -> int:
    """A 31-bit seed from any parts (engines take int32 seeds)."""
    return SeedStream()(*parts)


class SeedStream:
    """`derive_seed(*fixed, *more)` for many `more`, canonicalising `fixed` once: an episode derives
    every call's seed from (sweep seed, dataset, item) plus (round, agent, phase)."""

    def __init__(self, *fixed: Any) -> None:
        self._head = "[" + ",".join(part_json(p) for p in fixed)
        self._sep = "," if fixed else ""

    def __call__(self, *more: Any) -> int:
        tail = ",".join(part_json(p) for p in more)
        text = self._head + (self._sep + tail if more else "") + "]"
        digest = hashlib.blake2b(text.encode(), digest_size=32).digest()
        return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


@dataclass(frozen=True)
class Spec:
    """A registered component's name and its fully resolved arguments (defaults filled in)."""

    name: str
    args: tuple[tuple[str, Any], ...] = ()
    # What ids and seeds hash, when it differs from `args` (a renamed or later-added argument; see
    # `debate.registry`). None: the same as `args`.
    identity_args: tuple[tuple[str, Any], ...] | None = None

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.args)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "args": self.kwargs}

    def identity(self) -> dict[str, Any]:
        """The spec as episode ids and seeds see it."""
        args = self.args if self.identity_args is None else self.identity_args
        return {"name": self.name, "args": dict(args)}

    def label(self) -> str:
        """A short human label, e.g. `fixed(topology=ring)`."""
        inner = ",".join(f"{k}={v}" for k, v in self.args)
        return f"{self.name}({inner})" if inner else self.name


class Factories(Generic[T]):
    """Factories registered by name in a `common.registry.Registry`. `build(name, args)` checks the
    argument names against the factory's signature (did-you-mean on typos) and returns the product
    with its resolved `Spec`."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._factories: Registry[Callable[..., T]] = Registry(kind)

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        return self._factories.register(name)

    def names(self) -> list[str]:
        return self._factories.names()

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def resolve(self, name: str, args: Mapping[str, Any] | None = None) -> Spec:
        """The spec with every default filled in; raises ValueError naming the bad name or argument."""
        params = inspect.signature(self._factories[name]).parameters  # UnknownName: a ValueError
        given = dict(args or {})
        for key in given:
            if key not in params:
                raise ValueError(
                    f"{self.kind} '{name}' has no argument '{key}'{closest(key, list(params))}; "
                    f"it takes: {', '.join(params) or 'no arguments'}"
                )
        resolved = {
            k: given.get(k, p.default) for k, p in params.items() if k in given or p.default is not p.empty
        }
        missing = [k for k, p in params.items() if k not in resolved]
        if missing:
            raise ValueError(f"{self.kind} '{name}' needs argument(s): {', '.join(missing)}")
        return Spec(name, tuple(sorted(resolved.items())))

    def build(self, name: str, args: Mapping[str, Any] | None = None) -> T:
        spec = self.resolve(name, args)
        return self._factories[name](**spec.kwargs)
