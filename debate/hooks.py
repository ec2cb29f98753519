"""The optional hooks a method's params class (a router, or a small dataclass for methods that do
not debate) may declare, in one table with their defaults: code reads a hook with `hook(obj, name)`,
never with a bare `getattr`, so every hook a method can have is listed here and a misspelt name is an
error rather than a silent default.

Class attributes (data):
- `RENAMED = {new: old}`, `ADDED = {name: default}`: what episode ids hash (`debate.registry`);
- `LABEL = (arg, ...)`: arguments a method's label always shows;
- `ENGINE_NEEDS = (trait, why)`: an engine trait the method needs (the oracle: `reads_gold`).

Methods (behaviour):
- `identity_of(args) -> args` (a staticmethod): what ids hash for an argument naming a file;
- `seats(keys) -> [member index]`: who answers, for methods that pick their seats (vote, consistency);
- `team_size`: how many agents answer (methods that do not debate);
- `for_item(sample, grader) -> router`: a router bound to its item in the driver (the oracle);
- `opening(state) -> Decision | None`: a router's decision before round 0's answers (CPP)."""

from __future__ import annotations

from typing import Any

HOOKS: dict[str, Any] = {
    "RENAMED": {},
    "ADDED": {},
    "LABEL": (),
    "ENGINE_NEEDS": ("", ""),
    "identity_of": None,
    "seats": None,
    "team_size": None,
    "for_item": None,
    "opening": None,
}


def hook(obj: Any, name: str) -> Any:
    """`obj`'s hook `name`, or the hook's default when `obj` does not declare it."""
    if name not in HOOKS:
        raise KeyError(f"no hook '{name}'; the hooks are: {', '.join(HOOKS)}")
    return getattr(obj, name, HOOKS[name])
