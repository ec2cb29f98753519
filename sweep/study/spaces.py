"""A search space checked against the method it tunes: every parameter is an argument of the method
that the method accepts at each bound (or choice). The check lives here, above both `search_spaces`
(which knows no methods) and `debate` (which knows no spaces)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.names import closest
from debate.methods import build_method
from debate.registry import METHODS, method_def
from search_spaces import SearchSpace, SpaceError


def check_method(space: SearchSpace, method: str, fixed: Mapping[str, Any] | None = None) -> None:
    """SpaceError unless every parameter is an argument of `method` that it accepts at each bound (or
    choice), with the `fixed` arguments and the other defaults in place."""
    where = space.source
    if space.method != method:
        raise SpaceError(
            f"{where}: method: this space is for '{space.method}', but the study tunes '{method}'; use a {method} space"
        )
    if method not in METHODS:
        known = sorted(METHODS)
        raise SpaceError(
            f"{where}: method '{method}' is not registered{closest(method, known)}; known: {', '.join(known)}"
        )
    takes = list(method_def(method).defaults())
    overlap = sorted(set(fixed or {}) & set(space.names))
    if overlap:
        raise SpaceError(
            f"{where}: params.{overlap[0]} is also fixed in the study's method.args; remove it from one of them"
        )
    for p in space.params:
        if p.name not in takes:
            raise SpaceError(
                f"{where}: params.{p.name}: method '{method}' has no argument '{p.name}'{closest(p.name, takes)}; "
                f"it takes: {', '.join(takes)}"
            )
        for value in p.extremes():
            try:
                build_method(method, {**(fixed or {}), p.name: value})
            except (ValueError, TypeError) as e:
                raise SpaceError(
                    f"{where}: params.{p.name}: {method} refuses {value!r} ({e}); narrow the range"
                ) from None
