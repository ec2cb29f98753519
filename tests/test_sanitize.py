"""The engine boundary: whatever an engine returns — lone surrogates, NULs, a megabyte of text,
absurd counts — is stored: the call cache, Parquet and a rerun from that cache all take it."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from actors.base import ChatRequest, Completion, Message
from sweep.config.sweep import model_identity, validate
from sweep.engines.pool import build_agents
from sweep.store.cache import CachedBackend, CallCache
from sweep.store.results import BufferedWriter, ResultStore
from sweep.store.sanitize import (
    MAX_TEXT_CHARS,
    SanitizingBackend,
    clean_completion,
    clean_text,
    full_clean,
    is_clean,
)
from tests.test_results import episode, turns_for

POISON = "answer \ud800 then \udfff and \x00 nul"


class Poisoned:
    """An engine that answers every request with `text` (a server may legally send any of it)."""

    def __init__(self, text: str = POISON, **counts: object) -> None:
        self.text, self.counts, self.calls = text, counts, 0

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.calls += len(requests)
        fields = {"prompt_tokens": 3, "completion_tokens": 4, **self.counts}
        return [Completion(self.text, model="m\ud83d", **fields) for _ in requests]  # type: ignore[arg-type]


def request(i: int = 0) -> ChatRequest:
    return ChatRequest((Message("user", f"q{i}"),), seed=i)


def test_clean_text_makes_valid_bounded_utf8() -> None:
    text, cut = clean_text(POISON, 1000)
    assert not cut and text == "answer \ufffd then \ufffd and  nul"
    text.encode("utf-8")  # no UnicodeEncodeError
    assert clean_text("ok ☃", 10) == ("ok ☃", False)
    assert clean_text("x" * 50, 10) == ("x" * 10, True)
    assert clean_text(None, 5) == ("", False)


def test_clean_completion_bounds_text_and_numbers_and_keeps_clean_ones() -> None:
    good = Completion("fine", 1, 2, latency_s=0.5, model="m")
    assert clean_completion(good) is good
    bad = Completion("y" * (MAX_TEXT_CHARS + 5), -1, 2**50, cached_tokens=True, latency_s=math.nan)  # type: ignore[arg-type]
    out = clean_completion(bad)
    assert len(out.text) == MAX_TEXT_CHARS and out.finish_reason == "stop;truncated"
    assert (out.prompt_tokens, out.completion_tokens, out.cached_tokens, out.latency_s) == (0, 0, 0, 0.0)


def test_a_wrong_number_of_completions_is_an_error() -> None:
    class Short:
        async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
            return []

    with pytest.raises(RuntimeError, match="0 completions for 2"):
        asyncio.run(SanitizingBackend(Short()).generate([request(0), request(1)]))


def test_the_cache_stores_and_replays_only_clean_text(tmp_path: Path) -> None:
    cfg = validate({"models": {"m": {"engine": "simulated"}}, "agents": ["m"], "datasets": [{"name": "arith"}],
                    "methods": ["cot"]})  # fmt: skip
    engine = Poisoned()
    cache = CallCache(tmp_path / "llm_cache.sqlite")
    agent = build_agents(cfg.models, {"m": engine}, cache)["m"]
    first = asyncio.run(agent.backend.generate([request(0)]))[0]
    assert "\ufffd" in first.text and first.model == "m\ufffd"
    cache.flush()  # rows are committed by a background writer
    stored = cache._db.execute("SELECT completion FROM calls").fetchone()[0]
    assert "\\ud800" not in stored and json.loads(stored)["text"] == first.text
    again = asyncio.run(agent.backend.generate([request(0)]))[0]
    assert again.cache_hit and again.text == first.text and engine.calls == 1


def test_a_cache_poisoned_by_an_older_version_is_cleaned_on_replay(tmp_path: Path) -> None:
    cfg = validate({"models": {"m": {"engine": "simulated"}}, "agents": ["m"], "datasets": [{"name": "arith"}],
                    "methods": ["cot"]})  # fmt: skip
    with CallCache(tmp_path / "llm_cache.sqlite") as cache:  # no sanitiser: what older versions stored
        asyncio.run(
            CachedBackend(Poisoned(), cache, model_identity("m", cfg.models["m"])).generate([request(0)])
        )
    engine = Poisoned()
    with CallCache(tmp_path / "llm_cache.sqlite") as cache:  # the pool's agent, as a rerun builds it
        out = asyncio.run(build_agents(cfg.models, {"m": engine}, cache)["m"].backend.generate([request(0)]))[
            0
        ]
    assert out.cache_hit and engine.calls == 0
    assert out.text == clean_text(POISON, 10**6)[0] and out.model == "m\ufffd"


@pytest.mark.parametrize("seed", range(20))
def test_the_quick_clean_check_agrees_with_the_full_one(seed: int) -> None:
    rng, clean = random.Random(seed), 0
    texts = [
        "fine",
        "",
        "ok ☃",
        POISON,
        "lone \udc80",
        "x\x00",
        "z" * 191,
        "y" * (MAX_TEXT_CHARS + 1),
        None,
        7,
        "s" * 250,
    ]
    numbers = [0, 5, -1, 2**40, 2**40 - 1, 3.0, math.nan, True, None, "4"]
    odd = {"text": texts, "finish_reason": texts, "model": texts, "prompt_tokens": numbers,
           "completion_tokens": numbers, "cached_tokens": numbers, "cache_hit": [True, False, 1, None],
           "latency_s": [0.0, -0.0, 1.5, -1.0, math.inf, math.nan, 0, None]}  # fmt: skip
    for _ in range(300):  # a usual reply with 0-2 fields made odd
        fields = {f: rng.choice(odd[f]) for f in rng.sample(sorted(odd), rng.choice([0, 1, 1, 2]))}
        c = dataclasses.replace(Completion("fine", 1, 2, latency_s=0.5, model="m"), **fields)
        if is_clean(c):  # the quick check only passes what the full one leaves alone
            assert full_clean(c) is c
            clean += 1
        else:
            assert clean_completion(c) == full_clean(c)
    assert 0 < clean < 300


def test_an_unstorable_episode_fails_alone_and_says_why(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    writer = BufferedWriter(store, max_episodes=2)
    assert writer.add(episode("e1"), turns_for("e1"))
    assert not writer.add(episode("e2"), turns_for("e2", text=POISON))  # bypassed the boundary
    assert writer.add(episode("e3"), turns_for("e3"))
    writer.close()
    assert store.done_ids() == {"e1", "e3"}
    assert len(writer.failed) == 1 and writer.failed[0].startswith("e2: not stored: UnicodeEncodeError")
