"""Where a router that reads content gets its sentence encoder (`actors.encoders`), by name.

By default the encoder runs in this process (built once per name, content-cached). A higher floor
may install a provider that serves the names from elsewhere: `sweep` hosts each encoder in one Ray
actor next to the engines while an engine pool is open, so every episode's embeddings are batched
and cached in one place. Routers only ever call `encoder_for(name).embed(texts)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actors.encoders import build_encoder

Provider = Callable[[str], Any]
_provider: Provider | None = None
_local: dict[str, Any] = {}


def encoder_for(name: str) -> Any:
    """The encoder serving `name` (an `actors.encoders.Encoder`)."""
    if _provider is not None:
        return _provider(name)
    if name not in _local:
        _local[name] = build_encoder(name)
    return _local[name]


def set_provider(provider: Provider | None) -> Provider | None:
    """Serve encoders from `provider` (None: in this process again); returns the previous one."""
    global _provider
    previous, _provider = _provider, provider
    return previous
