"""The method registry. A method's arguments are declared once: they are the fields of its params
dataclass — its router for methods that debate, a small dataclass for those that do not — with their
defaults, types (checked here) and range checks (the dataclass's `__post_init__`). Methods that debate
also take `protocol`; every method takes `prompt_style` and `reasoning_chars`.

Registering a router is one decorator on its class:

    @method("pear", protocol="critique_revise", check=needs_verdicts)
    @dataclass(frozen=True)
    class PearRouter: ...

Episode ids hash a method's resolved arguments, so renaming an argument or adding one would orphan
every stored episode of the method. A params class may declare `RENAMED = {new: old}` and
`ADDED = {name: default}`: the id-facing arguments (`Spec.identity()`) use the old names and leave an
added argument out while it holds its default. A params class whose argument names a file (a learned
router's checkpoint) may define `identity_of(args) -> args` (a staticmethod): what ids hash instead,
e.g. the file's content hash in place of its path, so two checkpoints never share episode ids.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from common.added import without_added
from common.registry import Registry
from debate.hooks import hook
from debate.prompt_views import MAX_PEER_REASONING_CHARS
from debate.spec import Spec, closest

# Every method's arguments. `reasoning_chars` (how much of each earlier reply's reasoning a prompt
# shows; 0: all of it) came later: at its default it stays out of ids, so earlier episodes keep theirs.
SHARED_DEFAULTS: dict[str, Any] = {"prompt_style": "pear", "reasoning_chars": MAX_PEER_REASONING_CHARS}
SHARED_ADDED = {"reasoning_chars": SHARED_DEFAULTS["reasoning_chars"]}  # out of ids at its default


@dataclass(frozen=True)
class MethodDef:
    """A registered method: its params class and, for methods that debate, the default protocol."""

    name: str
    params: type
    protocol: str | None  # None: no debate rounds (the method takes no `protocol` argument)
    check: Callable[[Mapping[str, Any]], None] | None = None  # cross-argument checks
    summary: str = ""  # one line for `sweep list methods`: what the method does

    @property
    def routed(self) -> bool:
        return self.protocol is not None

    def own_defaults(self) -> dict[str, Any]:
        """The params class's fields and their defaults (every field must have one)."""
        return {f.name: _default(f) for f in dataclasses.fields(self.params)}

    def defaults(self) -> dict[str, Any]:
        """Every argument the method takes, with its default."""
        shared = {"protocol": self.protocol} if self.routed else {}
        return {**self.own_defaults(), **shared, **SHARED_DEFAULTS}


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    raise TypeError(f"method argument '{f.name}' needs a default")


# The builtin methods register when debate.methods imports the routers and baselines: a lookup of
# `METHODS` from anywhere (report, study) sees every method without importing them itself.
METHODS: Registry[MethodDef] = Registry("method", builtins=("debate.methods",))


def method(
    name: str,
    protocol: str | None = "update",
    check: Callable[[Mapping[str, Any]], None] | None = None,
    summary: str = "",
) -> Callable[[type], type]:
    """Register the decorated params dataclass as method `name`; `summary` is the one line `sweep list
    methods` shows for it."""

    def deco(cls: type) -> type:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"method '{name}': {cls.__name__} must be a dataclass")
        METHODS[name] = MethodDef(name, cls, protocol, check, summary)
        return cls

    return deco


def method_def(name: str) -> MethodDef:
    """The definition of method `name` (`UnknownName`, a ValueError, with a did-you-mean)."""
    return METHODS[name]


_TYPES: dict[Any, tuple[type, ...]] = {bool: (bool,), int: (int,), float: (int, float), str: (str,)}


def check_type(where: str, key: str, value: Any, annotation: Any) -> None:
    """Refuse a value of the wrong type (`true` as a count, "0.5" as a weight); bools are not ints."""
    allowed = _TYPES.get(annotation)
    if allowed is None:
        return  # a composite type: the params class checks it itself
    ok = isinstance(value, allowed) and (annotation is bool or not isinstance(value, bool))
    if not ok:
        raise ValueError(f"{where}: argument '{key}' must be {annotation.__name__}, got {value!r}")


def resolve(name: str, args: Mapping[str, Any] | None = None) -> Spec:
    """The method's spec with every default filled in. Raises ValueError naming a bad name, argument
    (did-you-mean; a renamed one gets its new name) or type."""
    d = method_def(name)
    defaults = d.defaults()
    renamed = {old: new for new, old in hook(d.params, "RENAMED").items()}
    given = dict(args or {})
    for key in given:
        if key in renamed and renamed[key] not in given:
            raise ValueError(f"method '{name}': argument '{key}' is now called '{renamed[key]}'")
        if key not in defaults:
            raise ValueError(
                f"method '{name}' has no argument '{key}'{closest(key, list(defaults))}; "
                f"it takes: {', '.join(defaults)}"
            )
    hints = typing.get_type_hints(d.params)
    hints.update({"protocol": str, "prompt_style": str, "reasoning_chars": int})
    resolved = {k: given.get(k, v) for k, v in defaults.items()}
    for key, value in resolved.items():
        check_type(f"method '{name}'", key, value, hints.get(key))
    identity = _identity(d.params, resolved)
    return Spec(name, tuple(sorted(resolved.items())), tuple(sorted(identity.items())))


def _identity(params: type, resolved: Mapping[str, Any]) -> dict[str, Any]:
    """The id-facing arguments: former names, later arguments left out while at their default."""
    renamed: dict[str, str] = hook(params, "RENAMED")
    added: dict[str, Any] = {**SHARED_ADDED, **hook(params, "ADDED")}
    identity_of: Callable[[dict[str, Any]], dict[str, Any]] | None = hook(params, "identity_of")
    kept = without_added(resolved, added)
    return {renamed.get(k, k): v for k, v in (identity_of(kept) if identity_of else kept).items()}


def label(name: str, args: Mapping[str, Any]) -> str:
    """A readable method label: the name and the arguments that differ from their defaults, plus
    those the params class always shows (`LABEL`), e.g. `fixed(topology=ring)`, `pear(use_t=False)`."""
    d = METHODS.get(name)
    if d is None:
        return name
    defaults, shown = d.defaults(), hook(d.params, "LABEL")
    ordered = sorted(args.items(), key=lambda kv: (kv[0] not in shown, kv[0]))  # the naming ones first
    keep = [(k, v) for k, v in ordered if k in shown or defaults.get(k, v) != v]
    return f"{name}({', '.join(f'{k}={v}' for k, v in keep)})" if keep else name


def distinct_labels(labels: dict[str, str]) -> dict[str, str]:
    """Row key (a method identity as canonical JSON) -> label, with `[rounds=…, protocol=…]` appended
    to labels that two keys share: one label scheme for `sweep plan`, `sweep run` and `sweep report`."""
    by_label: dict[str, list[str]] = {}
    for key, text in labels.items():
        by_label.setdefault(text, []).append(key)
    out = dict(labels)
    for text, keys in by_label.items():
        if len(keys) > 1:
            for key in keys:
                ident = json.loads(key)
                out[key] = f"{text} [rounds={ident.get('rounds')}, protocol={ident.get('protocol')}]"
    return out
