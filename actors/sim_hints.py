"""The facts a simulated agent reads from a request's `hints` (who it is, the round and phase, the
gold answer, what it saw), read defensively: any garbled field falls back to a neutral value."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

_KINDS = ("numeric", "choice", "math")  # a tuple: `in` compares, so an unhashable kind is no error


def as_int(x: object, default: int) -> int:
    if type(x) is int:  # the usual value, with no float conversion (a huge int is an int too)
        return x
    return int(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else default


def _pair(x: object) -> tuple[str | None, int] | None:  # one `[answer, confidence]`; None if garbled
    if not isinstance(x, (list, tuple)) or len(x) != 2:
        return None
    a, c = x
    answer = (a.strip() if type(a) is str else str(a).strip()) if a is not None else None
    return (answer or None), min(5, max(1, as_int(c, 3)))


class Hints(NamedTuple):
    """The request's hints, read defensively: garbled fields fall back to round 0 with no gold."""

    agent: int = 0
    round: int = 0
    phase: str = "initial"
    kind: str = "numeric"
    gold: str | None = None
    n_choices: int = 4
    item: str = ""
    own: tuple[str | None, int] | None = None
    peers: tuple[tuple[str, int], ...] = ()
    sources: tuple[tuple[int, str | None], ...] = ()  # (peer id, its answer), every peer shown
    adversary: bool = False  # an adversarial seat: argues for a wrong answer

    @classmethod
    def read(cls, raw: object) -> Hints:
        if not isinstance(raw, Mapping):
            return cls()
        get = raw.get
        gold, peers, ids, kind = get("gold"), get("peers"), get("sources"), get("kind")
        pairs = [_pair(p) for p in peers] if isinstance(peers, (list, tuple)) else []
        if not (isinstance(ids, (list, tuple)) and len(ids) == len(pairs)):
            ids = range(len(pairs))
        return cls(
            as_int(get("agent"), 0),
            as_int(get("round"), 0),
            str(get("phase", "initial")),
            str(kind) if kind in _KINDS else "numeric",
            (gold.strip() or None) if isinstance(gold, str) else None,
            min(26, max(2, as_int(get("n_choices"), 4))),
            str(get("item", "")),
            _pair(get("own")),
            tuple([(p[0], p[1]) for p in pairs if p is not None and p[0] is not None]),
            tuple(
                [(as_int(j, k), p[0] if p else None) for k, (j, p) in enumerate(zip(ids, pairs, strict=True))]
            ),
            get("adversary") is True,
        )
