"""`actors.frozen.quick_init` builds the very object `dataclasses`' own `__init__` builds, for every
class it decorates: the same fields in the same order, defaults and default factories applied (a new
object per instance), `__post_init__` run, keyword-only fields kept keyword-only."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
from typing import Any

import pytest

from actors.frozen import quick_init

MODULES = (
    "actors.base", "debate.state", "debate.parsing", "debate.lenient_json", "debate.diagnostics",
    "debate.phases", "debate.trajectory", "debate.decision", "sweep.store.repair",
)  # fmt: skip


def decorated() -> list[type]:
    out: dict[str, type] = {}  # by qualified name: a class re-exported by another module counts once
    for name in MODULES:
        for obj in vars(importlib.import_module(name)).values():
            if inspect.isclass(obj) and "__dataclass_init__" in obj.__dict__:
                out[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return list(out.values())


def test_the_hot_records_are_decorated() -> None:
    names = {c.__name__ for c in decorated()}
    assert {"ChatRequest", "Completion", "Message", "Turn", "Reply", "Str", "Num", "Call"} <= names


def original(cls: type, *args: Any, **kwargs: Any) -> Any:
    obj: Any = object.__new__(cls)
    cls.__dataclass_init__(obj, *args, **kwargs)  # type: ignore[attr-defined]
    return obj


def test_only_decision_validates_in_post_init() -> None:
    # The test below builds objects of arbitrary values; a class that checks them has its own test.
    assert [c.__name__ for c in decorated() if hasattr(c, "__post_init__")] == ["Decision"]


@pytest.mark.parametrize(
    "cls", [c for c in decorated() if not hasattr(c, "__post_init__")], ids=lambda c: c.__name__
)
def test_the_same_object_as_dataclasses_builds(cls: type) -> None:
    fields = [f for f in dataclasses.fields(cls) if f.init]
    required = [
        f for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    # Distinct sentinels: a field stored under another's name, or dropped, shows.
    given = {f.name: object() for f in fields}
    positional = [given[f.name] for f in fields if not f.kw_only]
    keywords = {f.name: given[f.name] for f in fields if f.kw_only}
    a, b = cls(*positional, **keywords), original(cls, *positional, **keywords)
    assert list(vars(a).items()) == list(vars(b).items())
    a, b = cls(**given), original(cls, **given)
    assert list(vars(a).items()) == list(vars(b).items())
    # Only what is required: defaults and factories as dataclasses applies them.
    least = {f.name: given[f.name] for f in required}
    a, b = cls(**least), original(cls, **least)
    assert list(vars(a).items()) == list(vars(b).items())
    for f in fields:
        if f.default_factory is not dataclasses.MISSING:  # a fresh object each time, never shared
            assert getattr(a, f.name) is not getattr(cls(**least), f.name) or getattr(a, f.name) == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.__setattr__(fields[0].name, 1)
    # Ray ships requests and completions by pickle; replace() builds through the new __init__.
    plain = cls(**{f.name: i for i, f in enumerate(fields)})
    assert pickle.loads(pickle.dumps(plain)) == plain
    assert dataclasses.replace(plain, **{fields[0].name: -1}) == original(
        cls, **{f.name: -1 if f is fields[0] else i for i, f in enumerate(fields)}
    )
    if required:
        with pytest.raises(TypeError):
            cls()
    with pytest.raises(TypeError):
        cls(**given, no_such_field=1)


def test_post_init_still_runs() -> None:
    from debate.decision import Decision
    from debate.graph import Graph

    assert "__dataclass_init__" in Decision.__dict__
    graph = Graph(3, [(0, 1), (1, 2)])
    ours, theirs = (
        Decision(graph, active=frozenset({2, 0})),
        original(Decision, graph, active=frozenset({2, 0})),
    )
    assert vars(ours) == vars(theirs) and ours.active == frozenset({0, 2})  # as __post_init__ left it
    with pytest.raises(ValueError) as bad:
        Decision(graph, active=frozenset({5}))
    with pytest.raises(ValueError) as bad_too:
        original(Decision, graph, active=frozenset({5}))
    assert str(bad.value) == str(bad_too.value)


def test_kw_only_and_init_false_fields() -> None:
    @quick_init
    @dataclasses.dataclass(frozen=True)
    class K:
        a: int
        b: list[int] = dataclasses.field(default_factory=list)
        c: int = dataclasses.field(default=3, init=False)
        d: int = dataclasses.field(default=4, kw_only=True)

    assert vars(K(1)) == vars(original(K, 1)) == {"a": 1, "b": [], "d": 4}  # c: the class attribute
    assert K(1).c == 3
    assert K(1).b is not K(1).b
    with pytest.raises(TypeError):
        K(1, [], 5)  # type: ignore[call-arg]  # d is keyword-only
    assert K(1, d=5) == original(K, 1, d=5)


def test_refuses_what_it_cannot_build() -> None:
    @dataclasses.dataclass
    class Mutable:
        a: int

    with pytest.raises(TypeError, match="not a frozen dataclass"):
        quick_init(Mutable)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    with pytest.raises(TypeError, match="not a frozen dataclass"):
        quick_init(Slotted)

    @dataclasses.dataclass(frozen=True)
    class OwnInit:
        a: int

        def __init__(self, a: int) -> None:
            object.__setattr__(self, "a", abs(a))

    with pytest.raises(TypeError, match="writes its own __init__"):
        quick_init(OwnInit)

    @dataclasses.dataclass(frozen=True)
    class WithInitVar:
        a: int
        scale: dataclasses.InitVar[int] = 1

    with pytest.raises(TypeError, match="not fields"):
        quick_init(WithInitVar)
