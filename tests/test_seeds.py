"""Every call's seed is the documented derivation (docs/concepts.md) of (sweep seed, dataset, item, round, agent, phase):
checked on every request of real episodes against an independent implementation of the documented
rule, pinned to a constant, distinct wherever one of its parts differs, and the same in a fresh
process (a salted `hash()` would differ)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from actors.base import ChatRequest, Completion
from actors.registry import build_backend
from data.grading.graders import NumericGrader
from data.types import Sample
from debate.episode import Agent, run_episode
from debate.methods import build_method
from debate.spec import derive_seed

ROOT = Path(__file__).resolve().parents[1]
PINNED = ((0, "gsm8k", "gsm8k-test-0", 1, 2, "update"), 2_105_337_013)


def documented(*parts: Any) -> int:
    """The documented rule (docs/concepts.md), written out: the first 8 hex digits of the BLAKE2b-256 digest of the parts
    as compact, key-sorted JSON, as an integer, masked to 31 bits (engines take int32 seeds)."""
    text = json.dumps(list(parts), sort_keys=True, separators=(",", ":"), default=str)
    return int(hashlib.blake2b(text.encode(), digest_size=32).hexdigest()[:8], 16) & 0x7FFFFFFF


class Recording:
    def __init__(self, inner: Any) -> None:
        self.inner, self.seen = inner, []  # type: ignore[var-annotated]

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.seen += list(requests)
        return await self.inner.generate(requests)


def requests_of(method: str, args: dict[str, Any], item: str, seed: int, dataset: str) -> list[ChatRequest]:
    backend = Recording(build_backend("simulated", "sim", {"skill": 0.6}))
    sample = Sample(id=item, question="What is 6 * 7?", gold="42", kind="numeric")
    m = build_method(method, args)
    asyncio.run(run_episode(m, [Agent("sim", backend)] * 4, sample, NumericGrader(), seed, 2, dataset))
    return backend.seen


def test_the_derivation_is_pinned() -> None:
    parts, value = PINNED
    assert derive_seed(*parts) == documented(*parts) == value


@pytest.mark.parametrize(
    "method, args", [("fixed", {"topology": "clique"}), ("pear", {"mc_permutations": 8})]
)
def test_every_call_of_an_episode_gets_the_documented_seed(method: str, args: dict[str, Any]) -> None:
    seen = requests_of(method, args, "item-7", 11, "arith")
    phases = {q.hints["phase"] for q in seen}
    assert {"initial"} < phases and {q.hints["round"] for q in seen} == {0, 1, 2}
    for q in seen:
        h = q.hints
        assert q.seed == documented(11, "arith", "item-7", h["round"], h["agent"], h["phase"])
    # one seed per (round, agent, phase): distinct across rounds, agents and phases
    assert len({q.seed for q in seen}) == len(
        {(q.hints["round"], q.hints["agent"], q.hints["phase"]) for q in seen}
    )


def test_seeds_differ_across_items_sweep_seeds_and_datasets_but_not_methods() -> None:
    base = requests_of("fixed", {"topology": "ring"}, "item-1", 3, "arith")
    key = lambda qs: {(q.hints["round"], q.hints["agent"], q.hints["phase"]): q.seed for q in qs}  # noqa: E731
    for other in (
        requests_of("fixed", {"topology": "ring"}, "item-2", 3, "arith"),
        requests_of("fixed", {"topology": "ring"}, "item-1", 4, "arith"),
        requests_of("fixed", {"topology": "ring"}, "item-1", 3, "gsm8k"),
    ):
        assert set(key(other).values()).isdisjoint(key(base).values())
    # the method is not part of a call's seed: every method shares round 0 under a sweep seed
    clique = requests_of("fixed", {"topology": "clique"}, "item-1", 3, "arith")
    assert key(clique) == key(base)


def test_a_fresh_process_derives_the_same_seed() -> None:
    parts, value = PINNED
    code = f"from debate.spec import derive_seed; print(derive_seed(*{parts!r}))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert int(out.stdout) == value
