"""Names a user typed against the names a registry knows: one did-you-mean hint and one line of
error text, shared by every registry and argument check (engines, methods, benchmarks, splits,
search-space parameters, model aliases, config keys)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(name: str, known: Iterable[str]) -> str:
    """ " (did you mean 'x'?)" for the known name nearest `name`, or "" when none is near."""
    close = difflib.get_close_matches(str(name), list(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def unknown_name(kind: str, name: str, known: Iterable[str]) -> str:
    """ "unknown engine 'simulatd' (did you mean 'simulated'?); known: a, b" — one line."""
    names = list(known)
    return f"unknown {kind} '{name}'{closest(name, names)}; known: {', '.join(names)}"
