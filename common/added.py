"""Keys added after something was hashed from them — episode ids (a method's arguments), checkpoint
digests (a network's architecture), training fingerprints (a config section): the class declares
`ADDED = {key: the value that keeps the old behaviour}`, and the hashed mapping leaves each such key
out while it holds that value, so whatever was hashed before the key existed keeps its hash."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def without_added(d: Mapping[str, Any], added: Mapping[str, Any]) -> dict[str, Any]:
    """`d` less the keys of `added` that hold their old-behaviour value there."""
    return {k: v for k, v in d.items() if not (k in added and added[k] == v)}
