"""The engine boundary: whatever an engine returns — lone surrogates, NULs, a megabyte of text,
absurd counts — is stored: the call cache, Parquet and a rerun from that cache all take it."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from actors.base import ChatRequest, Completion, Message
from sweep.cache import CachedBackend, CallCache
from sweep.config import validate
from sweep.pool import build_agents
from sweep.results import BufferedWriter, ResultStore
from sweep.sanitize import MAX_TEXT_CHARS, SanitizingBackend, clean_completion, clean_text
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
    cache = CallCache(tmp_path / "llm_cache.sqlite")
    raw = CachedBackend(Poisoned(), cache, {"name": "m"})  # no sanitiser: what older versions stored
    asyncio.run(raw.generate([request(0)]))
    replay = SanitizingBackend(CachedBackend(Poisoned(), cache, {"name": "m"}))
    out = asyncio.run(replay.generate([request(0)]))[0]
    assert out.cache_hit and out.text == clean_text(POISON, 10**6)[0]


def test_an_unstorable_episode_fails_alone_and_says_why(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    writer = BufferedWriter(store, max_episodes=2)
    assert writer.add(episode("e1"), turns_for("e1"))
    assert not writer.add(episode("e2"), turns_for("e2", text=POISON))  # bypassed the boundary
    assert writer.add(episode("e3"), turns_for("e3"))
    writer.close()
    assert store.done_ids() == {"e1", "e3"}
    assert len(writer.failed) == 1 and writer.failed[0].startswith("e2: not stored: UnicodeEncodeError")
