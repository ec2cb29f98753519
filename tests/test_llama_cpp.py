"""The llama.cpp CPU engine with the real SmolLM2-135M model: seeds, token counts, JSON, concurrency."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from actors.base import Backend, ChatRequest, Completion, Message
from actors.llama_cpp import (
    DEFAULT_SEED,
    MAX_STRING_LENGTH,
    InstancePool,
    LlamaCppBackend,
    capped_lengths,
    chat_kwargs,
    grammar_compiles,
    usable_schema,
)
from actors.models import SMOLLM2_FIX, resolve_gguf, smollm2_gguf
from actors.registry import build_backend

pytestmark = pytest.mark.cpu_model

PROMPTS = (
    "Tell me a very short story about a cat.",
    "Describe the sea in one sentence.",
    "Name three things you might find in a kitchen.",
)
CONF = {"confidence": {"enum": [1, 2, 3, 4, 5]}}
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "number"}} | CONF,
    "required": ["answer", "confidence"],
}


def req(prompt: str = PROMPTS[0], seed: int | None = 0, **kw: Any) -> ChatRequest:
    messages = (Message("system", "You are a helpful assistant."), Message("user", prompt))
    return ChatRequest(messages=messages, seed=seed, **({"max_tokens": 32, "temperature": 0.8} | kw))


def run(b: Backend, requests: Sequence[ChatRequest]) -> list[Completion]:
    return asyncio.run(b.generate(requests))


@pytest.fixture(scope="module")
def smol() -> LlamaCppBackend:
    # One thread: on a small shared machine llama.cpp's spinning thread barrier makes 2 threads slower.
    return LlamaCppBackend(n_ctx=1024, n_threads=1)


def test_same_seed_same_text_on_one_instance_and_across_instances(smol: LlamaCppBackend) -> None:
    first = run(smol, [req(seed=7)])[0]
    again = run(smol, [req(seed=7)])[0]  # same instance, whose KV cache holds the first call
    fresh = run(LlamaCppBackend(n_ctx=1024, n_threads=1), [req(seed=7)])[0]
    assert first.text and first.text == again.text == fresh.text
    assert first.completion_tokens == again.completion_tokens == fresh.completion_tokens


def test_different_seeds_give_different_text(smol: LlamaCppBackend) -> None:
    for prompt in PROMPTS:
        texts = {c.text for c in run(smol, [req(prompt, seed=s, max_tokens=12) for s in (1, 2, 3)])}
        assert len(texts) >= 2, f"seeds 1..3 all gave the same text for {prompt!r}"


def test_missing_seed_uses_the_fixed_default(smol: LlamaCppBackend) -> None:
    unseeded = run(smol, [req(seed=None, max_tokens=16)])[0]
    assert unseeded.text == run(smol, [req(seed=DEFAULT_SEED, max_tokens=16)])[0].text
    assert chat_kwargs(req(seed=None))["seed"] == DEFAULT_SEED
    assert chat_kwargs(req(seed=-1))["seed"] >= 0  # never llama.cpp's "random" seed


def test_token_counts_are_the_engines_usage(smol: LlamaCppBackend) -> None:
    request = req(PROMPTS[1], seed=3, max_tokens=16)
    out = run(smol, [request])[0]
    llm = smol.pool.instances[0]
    llm.reset()
    direct = llm.create_chat_completion(**chat_kwargs(request))
    assert out.prompt_tokens == direct["usage"]["prompt_tokens"] > 0
    assert out.completion_tokens == direct["usage"]["completion_tokens"] > 0
    assert out.text == direct["choices"][0]["message"]["content"]
    assert out.completion_tokens <= 16 and out.cached_tokens == 0
    assert out.finish_reason in ("stop", "length") and out.latency_s > 0
    assert out.model == "smollm2-135m-instruct"


def test_max_tokens_bounds_the_output(smol: LlamaCppBackend) -> None:
    out = run(smol, [req("Write a long essay about the history of Rome.", seed=0, max_tokens=8)])[0]
    assert out.completion_tokens == 8 and out.finish_reason == "length"


def test_json_schema_gives_parseable_json_with_confidence_in_range(smol: LlamaCppBackend) -> None:
    question = "Tom has 3 apples and buys 5 more. How many apples does he have? Reply in JSON."
    outs = run(
        smol, [req(question, seed=s, max_tokens=48, temperature=1.0, json_schema=SCHEMA) for s in range(4)]
    )
    for out in outs:
        reply = json.loads(out.text)
        assert set(reply) >= {"answer", "confidence"}
        assert reply["confidence"] in (1, 2, 3, 4, 5)
        assert isinstance(reply["answer"], int | float)


def test_a_schema_llama_cpp_refuses_is_relaxed_not_fatal(smol: LlamaCppBackend) -> None:
    # maxLength 1200 makes llama.cpp refuse the grammar, and a refused grammar segfaults a real call.
    schema = {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "maxLength": 1200},
            "answer": {"type": "string", "maxLength": 8},
        }
        | CONF,
        "required": ["reasoning", "answer", "confidence"],
    }
    llm = smol.pool.instances[0]
    assert not grammar_compiles(llm, schema)
    assert grammar_compiles(llm, SCHEMA)
    assert usable_schema(llm, SCHEMA) == SCHEMA  # a compilable schema is sent as it is
    relaxed = usable_schema(llm, schema)
    assert relaxed["properties"]["reasoning"]["maxLength"] == MAX_STRING_LENGTH
    assert relaxed["properties"]["answer"] == {"type": "string", "maxLength": 8}
    out = run(smol, [req("What is 2 + 2?", seed=0, max_tokens=400, json_schema=schema)])[0]
    # The capped grammar closes every string, so the reply parses. strict=False: llama-cpp-python's
    # string grammar lets raw control characters (a newline) into strings, which strict JSON refuses.
    reply = json.loads(out.text, strict=False)
    assert len(reply["reasoning"]) <= MAX_STRING_LENGTH and len(reply["answer"]) <= 8


def test_a_schema_that_never_compiles_raises(smol: LlamaCppBackend) -> None:
    huge = {"type": "array", "items": {"type": "integer"}, "maxItems": 3000}
    schema = {"type": "object", "properties": {"xs": huge}, "required": ["xs"]}
    with pytest.raises(ValueError, match="cannot compile a grammar"):
        run(smol, [req(seed=0, json_schema=schema)])


def test_capped_lengths_reaches_every_depth() -> None:
    nested = {
        "a": {"maxLength": 3000, "minLength": 2000},
        "b": [{"minLength": 1, "maxLength": 5}],
        "maxLength": 9,
    }
    assert capped_lengths(nested, None) == {"a": {}, "b": [{}]}
    assert capped_lengths(nested, 100) == {
        "a": {"maxLength": 100, "minLength": 100},
        "b": [{"minLength": 1, "maxLength": 5}],
        "maxLength": 9,
    }


def test_concurrent_generate_calls_complete_on_a_pool_of_two() -> None:
    b = LlamaCppBackend(n_ctx=1024, n_parallel=2)
    assert len(b.pool.instances) == 2 and b.n_threads == 1
    requests = [req(PROMPTS[i % 3], seed=i, max_tokens=12) for i in range(4)]

    async def all_at_once() -> list[list[Completion]]:
        return await asyncio.gather(*(b.generate([r]) for r in requests))

    together = [outs[0] for outs in asyncio.run(all_at_once())]
    one_by_one = [run(b, [r])[0] for r in requests]
    assert all(c.completion_tokens > 0 for c in together)
    assert [c.text for c in together] == [c.text for c in one_by_one]


def test_registry_builds_it_by_name() -> None:
    b = build_backend("llama_cpp", "smollm2-135m-instruct", {"n_ctx": 512, "n_threads": 1})
    assert isinstance(b, LlamaCppBackend) and isinstance(b, Backend)
    assert b.n_threads == 1 and b.path == smollm2_gguf()


def test_a_path_to_a_gguf_file_works_too() -> None:
    b = build_backend("llama_cpp", str(smollm2_gguf()), {"n_ctx": 512})
    out = run(b, [req(seed=1, max_tokens=8)])[0]
    assert out.completion_tokens > 0 and out.model == str(smollm2_gguf())


def test_missing_model_path_gives_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    with pytest.raises(FileNotFoundError, match=r"nope\.gguf.*not found"):
        build_backend("llama_cpp", str(missing))
    with pytest.raises(FileNotFoundError, match="did you mean 'smollm2-135m-instruct'"):
        resolve_gguf("smollm2-135m")


def test_missing_smollm2_package_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match=SMOLLM2_FIX.replace(".", r"\.")):
        smollm2_gguf()


def test_bad_pool_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="n_parallel"):
        LlamaCppBackend(n_parallel=0)
    with pytest.raises(ValueError, match="n_threads"):
        LlamaCppBackend(n_threads=0)


class _Probe:
    """A stand-in instance that records how many threads use it at once."""

    def __init__(self, log: list[int], lock: threading.Lock) -> None:
        self.busy = 0
        self.log = log
        self.lock = lock

    def work(self, seconds: float, meet: threading.Barrier | None = None) -> int:
        with self.lock:
            self.busy += 1
            self.log.append(self.busy)
        if meet is not None:  # returns only once another call is running at the same time
            meet.wait(timeout=30)
        time.sleep(seconds)
        with self.lock:
            self.busy -= 1
        return id(self)


def test_pool_never_shares_an_instance_and_fills_both() -> None:
    log: list[int] = []
    lock = threading.Lock()
    probes = [_Probe(log, lock), _Probe(log, lock)]
    pool = InstancePool(probes)

    meet = threading.Barrier(2)  # calls pass it in pairs: a pool that never overlapped calls would break it

    async def main() -> list[int]:
        return await asyncio.gather(*(pool.run(lambda p: p.work(0.01, meet)) for _ in range(6)))

    used = asyncio.run(main())
    assert max(log) == 1  # no instance ever ran two calls at once
    assert set(used) == {id(p) for p in probes}  # both served, and (the barrier) always two at once


def test_a_cancelled_call_frees_its_instance_only_when_its_thread_ends() -> None:
    log: list[int] = []
    probe = _Probe(log, threading.Lock())
    pool = InstancePool([probe])

    async def main() -> None:
        slow = asyncio.ensure_future(pool.run(lambda p: p.work(0.2)))
        await asyncio.sleep(0.02)
        slow.cancel()
        await pool.run(lambda p: p.work(0.0))  # must wait for the slow thread, not run beside it

    asyncio.run(main())
    assert log == [1, 1]
