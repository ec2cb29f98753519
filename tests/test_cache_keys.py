"""The call cache's key sees every field that decides a completion — the model's identity with its
engine args, every sampling field, the messages, the seed and the output schema — and nothing else:
changing any decisive field misses, changing hints or where results go hits. `model_identity` keeps
what decides a model's outputs and drops what does not (replicas, resources, prices)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.base import ChatRequest, Completion, Message
from debate.spec import canonical_json, hash_text, part_json
from sweep.config.sweep import ModelSpec, model_identity
from sweep.store.cache import CachedBackend, CallCache
from sweep.store.cache_keys import request_key

BASE = ChatRequest(
    messages=(Message("system", "be brief"), Message("user", "What is 6 * 7?")),
    max_tokens=64,
    temperature=0.7,
    top_p=0.9,
    seed=5,
    json_schema={"type": "object", "properties": {"answer": {"type": "string"}}},
    hints={"agent": 1, "round": 0},
)
IDENTITY = {"name": "m", "engine": "simulated", "model": "m", "args": {"skill": 0.5}}
PINNED = (
    "c67bf780b59cd6e5d2d94d52795bd69e"  # BASE's key, computed by the version before the hand-written JSON
)

# One change per field that decides a completion.
DECISIVE: dict[str, Any] = {
    "max_tokens": lambda r: replace(r, max_tokens=65),
    "temperature": lambda r: replace(r, temperature=0.0),
    "top_p": lambda r: replace(r, top_p=1.0),
    "seed": lambda r: replace(r, seed=6),
    "seed None": lambda r: replace(r, seed=None),
    "schema": lambda r: replace(r, json_schema=None),
    "schema body": lambda r: replace(r, json_schema={"type": "object"}),
    "message text": lambda r: replace(r, messages=(r.messages[0], Message("user", "What is 6 * 8?"))),
    "message role": lambda r: replace(r, messages=(Message("user", "be brief"), r.messages[1])),
    "message count": lambda r: replace(r, messages=r.messages[1:]),
}


def test_each_decisive_field_changes_the_key() -> None:
    base = request_key(IDENTITY, BASE)
    keys = {name: request_key(IDENTITY, change(BASE)) for name, change in DECISIVE.items()}
    assert all(k != base for k in keys.values()), [n for n, k in keys.items() if k == base]
    assert len(set(keys.values())) == len(keys)


def test_the_model_identity_is_part_of_the_key() -> None:
    base = request_key(IDENTITY, BASE)
    for changed in (
        {**IDENTITY, "args": {"skill": 0.6}},
        {**IDENTITY, "args": {}},
        {**IDENTITY, "model": "other"},
        {**IDENTITY, "engine": "vllm"},
        {**IDENTITY, "name": "m2"},
    ):
        assert request_key(changed, BASE) != base, changed


@settings(max_examples=60, deadline=None)
@given(hints=st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8), max_size=4))
def test_hints_never_change_the_key(hints: dict[str, Any]) -> None:
    assert request_key(IDENTITY, replace(BASE, hints=hints)) == request_key(IDENTITY, BASE)


@settings(max_examples=60, deadline=None)
@given(
    max_tokens=st.integers(1, 4096),
    temperature=st.floats(0, 2, allow_nan=False),
    top_p=st.floats(0.01, 1, allow_nan=False),
    seed=st.none() | st.integers(0, 2**31 - 1),
    text=st.text(max_size=40),
)
def test_any_two_requests_differing_in_a_decisive_field_get_different_keys(
    max_tokens: int, temperature: float, top_p: float, seed: int | None, text: str
) -> None:
    req = ChatRequest((Message("user", text),), max_tokens, temperature, top_p, seed)
    other = ChatRequest((Message("user", text + "."),), max_tokens, temperature, top_p, seed)
    assert request_key(IDENTITY, req) != request_key(IDENTITY, other)
    assert request_key(IDENTITY, req) == request_key(IDENTITY, replace(req, hints={"x": 1}))


@settings(max_examples=100, deadline=None)
@given(
    max_tokens=st.integers(-5, 2**40) | st.booleans(),
    temperature=st.floats() | st.integers(-3, 3),
    top_p=st.floats(0, 1) | st.none(),
    seed=st.none() | st.integers(-(2**63), 2**63),
    turns=st.lists(
        st.tuples(st.sampled_from(["system", "user", "assistant", "é"]), st.text(max_size=30)), max_size=4
    ),
    schema=st.none() | st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3),
)
def test_the_key_is_the_hash_of_the_canonical_json_of_what_decides(
    max_tokens: int, temperature: float, top_p: float | None, seed: int | None,
    turns: list[tuple[str, str]], schema: dict[str, Any] | None,
) -> None:  # fmt: skip
    """Written out by hand for speed, the key keeps the bytes of the plain formula: a cache from an
    earlier version still answers."""
    req = ChatRequest(tuple(Message(r, c) for r, c in turns), max_tokens, temperature, top_p, seed, schema)  # type: ignore[arg-type]
    whole = {"messages": [[m.role, m.content] for m in req.messages], "model": IDENTITY,
             "sampling": req.sampling_params(), "schema": req.json_schema}  # fmt: skip
    assert request_key(IDENTITY, req) == hash_text(canonical_json(whole), 32)


def test_a_known_key_is_unchanged() -> None:
    assert request_key(IDENTITY, BASE) == PINNED


def spec(**kw: Any) -> ModelSpec:
    return ModelSpec(**({"engine": "simulated", "args": {"skill": 0.5}} | kw))


def test_model_identity_keeps_what_decides_outputs_only() -> None:
    base = model_identity("m", spec())
    assert base == {"name": "m", "engine": "simulated", "model": None, "args": {"skill": 0.5}}
    for same in (
        spec(replicas=3),
        spec(num_cpus=2),
        spec(max_concurrency=8),
        spec(price_in=1.0, price_out=2.0),
    ):
        assert model_identity("m", same) == base
    assert model_identity("m", spec(args={"skill": 0.6})) != base
    assert model_identity("m", spec(model="other")) != base


class Counting:
    def __init__(self) -> None:
        self.requests = 0

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.requests += len(requests)
        return [Completion("42", 10, 2) for _ in requests]


def test_a_rerun_with_changed_model_args_runs_the_engine_again(tmp_path: Path) -> None:
    cache = tmp_path / "out" / "llm_cache.sqlite"
    engine = Counting()
    for args, expected in (({"skill": 0.5}, 1), ({"skill": 0.5}, 1), ({"skill": 0.9}, 2)):
        backend = CachedBackend(engine, CallCache(cache), model_identity("m", spec(args=args)))
        asyncio.run(backend.generate([BASE]))
        backend.cache.close()
        assert engine.requests == expected, args
    # where results go is not part of the key: the same cache file under another output dir hits
    moved = tmp_path / "elsewhere" / "llm_cache.sqlite"
    moved.parent.mkdir()
    cache.rename(moved)
    backend = CachedBackend(engine, CallCache(moved), model_identity("m", spec(args={"skill": 0.9})))
    asyncio.run(backend.generate([BASE]))
    assert engine.requests == 2


@settings(max_examples=300, deadline=None)
@given(value=st.floats() | st.none() | st.integers() | st.text(max_size=8) | st.booleans())
def test_part_json_writes_every_scalar_as_the_canonical_encoder_does(value: Any) -> None:
    """Keys and seeds write sampling values and seed parts through `part_json`'s shortcuts; NaN,
    infinities, -0.0 and bools included, the bytes are `canonical_json`'s."""
    assert part_json(value) == canonical_json(value)
    for special in (math.nan, math.inf, -math.inf, -0.0, 5e-324, 1e300, True, False, None):
        assert part_json(special) == canonical_json(special)


@settings(max_examples=200, deadline=None)
@given(
    head=st.text(max_size=40),
    size=st.sampled_from([0, 1, 2046, 2047, 2048, 2049, 4093, 4094, 4095, 4096, 9000]),
)
def test_hash_text_fed_in_pieces_is_the_one_shot_digest(head: str, size: int) -> None:
    """Long texts are hashed in pieces that keep the GIL; the digest is BLAKE2b-256 of the whole
    UTF-8 text, whatever the length around the piece size (multi-byte characters included)."""
    import hashlib

    text = head + "é" * (size // 2) + "x" * (size - size // 2)
    for length in (16, 32, 64):
        assert hash_text(text, length) == hashlib.blake2b(text.encode(), digest_size=32).hexdigest()[:length]
