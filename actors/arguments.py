"""Engine arguments checked before anything starts: names against the arguments the engine's factory
declares (with a did-you-mean), values against their annotations (`true` is not a count, a number is
finite), then the engine's own ranges. Every failure is a ValueError naming `args.<name>`."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from typing import Any

from common.names import closest

ArgsCheck = Callable[..., None]  # called with every argument (defaults filled in), `model` included

_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "str": (str,),
    "dict": (dict,),
    "list": (list,),
}


def declared(factory: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    """The arguments a config may give: the factory's named parameters except `model` and
    keyword-only ones (those are for code, e.g. a test double of the engine's library)."""
    params = inspect.signature(factory).parameters
    return {
        n: p
        for n, p in params.items()
        if n not in ("self", "model") and p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)
    }


def _type_names(annotation: Any) -> list[str] | None:
    """['int', 'None'] for the annotation 'int | None'; None when it is not a simple one."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", None)
    if not isinstance(text, str):
        return None
    names = [part.strip().split("[")[0] for part in text.split("|")]
    return names if all(n in _TYPES or n == "None" for n in names) else None


def check_type(name: str, value: Any, annotation: Any) -> None:
    """ValueError unless `value` fits the simple annotation (unknown annotations pass)."""
    names = _type_names(annotation)
    if names is None or (value is None and "None" in names):
        return
    ok = any(
        isinstance(value, _TYPES[n]) and (n == "bool" or not isinstance(value, bool))
        for n in names
        if n != "None"
    )
    if not ok:
        want = " or ".join("null" if n == "None" else f"a {n}" for n in names)
        raise ValueError(
            f"args.{name}: expected {want}, got {type(value).__name__} {str(value)[:60]!r}; give {want}"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"args.{name}: must be a finite number, got {value}")


def check_args(
    engine: str, factory: Callable[..., Any], check: ArgsCheck | None, model: str, args: Mapping[str, Any]
) -> None:
    """Names, types and the engine's ranges of `args` for `engine` (see the module docstring)."""
    if not isinstance(args, Mapping):
        raise ValueError(f"args: expected a mapping of argument: value, got {type(args).__name__}")
    params = declared(factory)
    for key, value in args.items():
        if key not in params:
            raise ValueError(
                f"args.{key}: engine '{engine}' has no argument '{key}'{closest(str(key), params)}; "
                f"it takes: {', '.join(params)}"
            )
        check_type(str(key), value, params[key].annotation)
    if check is not None:
        full = {n: p.default for n, p in params.items() if p.default is not p.empty}
        try:
            check(model=model, **{**full, **args})
        except (ValueError, TypeError) as e:
            text = str(e)
            raise ValueError(text if text.startswith("args.") else f"args: {text}") from None


def in_range(name: str, value: Any, low: float, high: float, *, low_open: bool = False) -> None:
    """ValueError naming `args.<name>` unless low <= value <= high (low < value with `low_open`)."""
    if value is None:
        return
    above = value > low if low_open else value >= low
    if not (above and value <= high):
        bracket = "(" if low_open else "["
        raise ValueError(f"args.{name}: must be in {bracket}{low:g}, {high:g}], got {value!r}")
