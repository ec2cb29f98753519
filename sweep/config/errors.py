"""The error every bad config or command line becomes: one line naming the field and the fix."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from common.names import closest


class ConfigError(ValueError):
    """A bad config or command line: one line, naming the field and the fix. Exit code 2."""


M = TypeVar("M", bound=BaseModel)


def model_or_error(cls: type[M], raw: Any, line: Callable[[ValidationError], str]) -> M:
    """`cls` validated from `raw`; any failure is a one-line ConfigError (`line` words it)."""
    try:
        return cls.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(line(e)) from None
    except (TypeError, RecursionError, OverflowError) as e:  # a shape no validator expected
        raise ConfigError(f"config: {type(e).__name__}: {str(e)[:200]}; check the values' types") from None


# A fix for the errors whose pydantic message only states the problem.
FIXES = {
    "int_type": "; give a whole number such as 3 (not true/false, not quoted)",
    "int_from_float": "; give a whole number such as 3",
    "float_type": "; give a number such as 0.5",
    "float_parsing": "; give a number such as 0.5",
    "finite_number": "; give a finite number",
    "bool_type": "; give true or false",
    "string_type": "; give text (quote it if YAML reads it as something else)",
    "dict_type": "; give a mapping of key: value",
    "list_type": "; give a list such as [a, b]",
    "model_type": "; give a mapping of key: value",
    "model_attributes_type": "; give a mapping of key: value",
    "greater_than": "; raise it",
    "greater_than_equal": "; raise it",
    "less_than": "; lower it",
    "less_than_equal": "; lower it",
    "too_short": "; add at least one entry",
    "too_long": "; remove entries",
    "string_too_short": "; give a non-empty name",
    "string_too_long": "; shorten it",
}


def field_path(loc: Sequence[Any]) -> str:
    """A validation error's location as a config path: `datasets[0].name`."""
    out = ""
    for x in loc:
        out += f"[{x}]" if isinstance(x, int) else (f".{x}" if out else str(x))
    return out


def validation_line(
    e: ValidationError,
    keys_at: Callable[[Sequence[Any]], Iterable[str]],
    noun: str = "key",
    docs: str = "the README's config reference",
    fixes: Mapping[str, str] = FIXES,
) -> str:
    """The first validation error as `field.path: problem; fix`, the one wording of every config
    file's errors: an unknown key gets a did-you-mean from `keys_at(loc)` (the keys known where it
    stands) and is called an unknown `noun`; a missing one points to `docs`; any other gets its fix
    from `fixes` by the error's type."""
    err = e.errors()[0]
    kind, loc = str(err["type"]), field_path(err["loc"])
    if kind == "extra_forbidden":
        hint = closest(str(err["loc"][-1]), sorted(keys_at(err["loc"])))
        return f"{loc}: unknown {noun}{hint}; remove it or fix its spelling"
    if kind == "missing":
        return f"{loc}: required key is missing; add it (see {docs})"
    msg = str(err["msg"]).removeprefix("Value error, ") + fixes.get(kind, "")
    return f"{loc}: {msg}" if loc else msg
