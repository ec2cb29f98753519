"""The facts a simulated agent reads from a request's `hints` (who it is, the round and phase, the
gold answer, what it saw), read defensively: any garbled field falls back to a neutral value."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


def as_int(x: object, default: int) -> int:
    return int(x) if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) else default


def _pair(x: object) -> tuple[str | None, int] | None:  # one `[answer, confidence]`; None if garbled
    if not isinstance(x, list | tuple) or len(x) != 2:
        return None
    answer = str(x[0]).strip() if x[0] is not None else None
    return (answer or None), min(5, max(1, as_int(x[1], 3)))


@dataclass(frozen=True)
class Hints:
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
        gold = raw.get("gold")
        peers = raw.get("peers")
        pairs = [_pair(p) for p in peers] if isinstance(peers, list | tuple) else []
        ids = raw.get("sources")
        ids = list(ids) if isinstance(ids, list | tuple) and len(ids) == len(pairs) else range(len(pairs))
        return cls(
            agent=as_int(raw.get("agent"), 0),
            round=as_int(raw.get("round"), 0),
            phase=str(raw.get("phase", "initial")),
            kind=str(raw.get("kind")) if raw.get("kind") in ("numeric", "choice", "math") else "numeric",
            gold=gold.strip() if isinstance(gold, str) and gold.strip() else None,
            n_choices=min(26, max(2, as_int(raw.get("n_choices"), 4))),
            item=str(raw.get("item", "")),
            own=_pair(raw.get("own")),
            peers=tuple((p[0], p[1]) for p in pairs if p is not None and p[0] is not None),
            sources=tuple(
                (as_int(j, k), p[0] if p else None) for k, (j, p) in enumerate(zip(ids, pairs, strict=True))
            ),
            adversary=raw.get("adversary") is True,
        )
