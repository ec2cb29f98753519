"""`Hints.read` is the simulated engine's defensive reader of a request's hints; rewritten for speed
(it ran on every simulated call), it must read every input, garbled or not, exactly as the plain
version below did — that version is the reference."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.sim_hints import Hints


def _as_int(x: object, default: int) -> int:
    return int(x) if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) else default


def _pair(x: Any) -> tuple[str | None, int] | None:
    if not isinstance(x, list | tuple) or len(x) != 2:
        return None
    answer = str(x[0]).strip() if x[0] is not None else None
    return (answer or None), min(5, max(1, _as_int(x[1], 3)))


def reference(raw: object) -> tuple[Any, ...]:
    """The reader as it was before (a frozen dataclass's fields, in order)."""
    if not isinstance(raw, Mapping):
        return tuple(Hints())
    gold = raw.get("gold")
    peers = raw.get("peers")
    pairs = [_pair(p) for p in peers] if isinstance(peers, list | tuple) else []
    ids = raw.get("sources")
    ids = list(ids) if isinstance(ids, list | tuple) and len(ids) == len(pairs) else range(len(pairs))
    return (
        _as_int(raw.get("agent"), 0),
        _as_int(raw.get("round"), 0),
        str(raw.get("phase", "initial")),
        str(raw.get("kind")) if raw.get("kind") in ("numeric", "choice", "math") else "numeric",
        gold.strip() if isinstance(gold, str) and gold.strip() else None,
        min(26, max(2, _as_int(raw.get("n_choices"), 4))),
        str(raw.get("item", "")),
        _pair(raw.get("own")),
        tuple((p[0], p[1]) for p in pairs if p is not None and p[0] is not None),
        tuple((_as_int(j, k), p[0] if p else None) for k, (j, p) in enumerate(zip(ids, pairs, strict=True))),
        raw.get("adversary") is True,
    )


# Ints within float range: the old reader raised OverflowError on a larger one (see the last test).
scalar = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=6)
    | st.sampled_from(["numeric", "choice", "math", " 42 ", "", "  "])
)  # fmt: skip
value = st.recursive(
    scalar, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner), max_leaves=8
)
field = st.sampled_from(
    ["agent", "round", "phase", "kind", "gold", "n_choices", "item", "own", "peers", "sources", "adversary"]
)
pair = st.lists(scalar, min_size=2, max_size=2) | value
well_formed = st.fixed_dictionaries(
    {
        "agent": st.integers(0, 9), "round": st.integers(0, 5), "phase": st.sampled_from(["initial", "update", "revise", "critique"]),
        "kind": st.sampled_from(["numeric", "choice", "math"]), "gold": st.text(max_size=4), "n_choices": st.integers(0, 30),
        "item": st.text(max_size=6), "own": st.none() | pair, "peers": st.lists(pair, max_size=5),
        "sources": st.lists(st.integers(0, 9) | scalar, max_size=5), "adversary": st.booleans() | scalar,
    }
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(raw=well_formed | st.dictionaries(field, value, max_size=11) | value)
def test_the_reader_reads_everything_as_the_reference_did(raw: Any) -> None:
    assert tuple(Hints.read(raw)) == reference(raw)


def test_the_usual_hints_and_a_huge_int() -> None:
    raw = {"agent": 2, "round": 1, "phase": "update", "kind": "numeric", "gold": " 42 ", "n_choices": 0,
           "item": "arith-17", "own": ["41", 3], "peers": [["42", 4], [None, 2], ["40", 9]], "sources": [0, 1, 3]}  # fmt: skip
    h = Hints.read(raw)
    assert (h.agent, h.round, h.gold, h.n_choices, h.own) == (2, 1, "42", 2, ("41", 3))
    assert h.peers == (("42", 4), ("40", 5)) and h.sources == ((0, "42"), (1, None), (3, "40"))
    assert (
        Hints.read({"agent": 10**400}).agent == 10**400
    )  # a garbled field never raises (it did: OverflowError)
