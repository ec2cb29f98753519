"""The embedded CPU engine: GGUF models through llama-cpp-python, no server and no GPU.

llama.cpp's high-level API is synchronous and one `Llama` instance must not be used by two threads at
once, so every call runs in a worker thread (`asyncio.to_thread`) on an instance it owns exclusively
until the thread returns. With `n_parallel > 1` the backend keeps that many instances (each holds
its own weights and KV cache, ~0.3 GB for SmolLM2-135M at n_ctx 4096) and a request takes whichever
is free: as many requests are in flight as the engine can take, the rest wait in FIFO order.

What the engine reports, and what it does not:
- `prompt_tokens` / `completion_tokens` are `usage` from `create_chat_completion`.
- `cached_tokens` is 0, truly: each call starts from an empty KV cache (`Llama.reset()`). llama.cpp
  would otherwise reuse the KV prefix of the instance's previous prompt, and that changes the sampled
  text (measured: one seeded request sent twice to one instance gave two different texts; after a
  reset, the same text) — and under a pool, which instance served what before is not deterministic.
  (llama-cpp-python 0.3.36 does not report the reused length anyway, except in a verbose log line.)
- `finish_reason` is `choices[0].finish_reason` ("stop" or "length").
- `latency_s` is the wall time of the `create_chat_completion` call alone (not the wait for a free
  instance).

Reproducibility: every call passes a seed to the engine. A request without one uses `DEFAULT_SEED`
(llama.cpp's own default, -1, draws a random seed, which would make reruns differ). Seeds are folded
into 31 bits because llama.cpp takes a uint32 whose all-ones value means "random".
The chat template is the GGUF's own unless `chat_format` names one of llama-cpp-python's.
With a `json_schema`, llama-cpp-python compiles the schema to a grammar that constrains decoding;
it does not enforce integer `minimum`/`maximum` (use `enum`), so callers still validate after parsing.
llama.cpp refuses grammars with too much repetition — a string `maxLength` above about 1000 (1000
compiles, 1100 does not) — and then crashes the process (a NULL sampler). So each distinct schema is
test-compiled once; if llama.cpp refuses it, string `maxLength`s are capped at 1000 (bounded strings
matter: the grammar then closes a looping string and the JSON still parses), failing that the string
length bounds are dropped (the JSON shape is still enforced, `max_tokens` still bounds the length),
each with a warning; a schema that still fails raises `ValueError` instead of crashing.

Threads: `n_threads` (default 1) is used for generation and prompt evaluation alike. llama.cpp's threads
meet at a spinning barrier in every layer, so when anything else wants the cores (Ray, the driver,
other engines) multi-threaded decoding collapses: measured on 2 busy cores, 128 tokens at 35 tok/s with
one thread and 2 tok/s with two. Scale with `n_parallel` single-threaded instances instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from actors.base import ChatRequest, Completion, Timer
from actors.models import resolve_gguf
from actors.registry import backend

DEFAULT_SEED = 0  # used when a request has no seed: a fixed value, so a rerun gives the same text
_SEED_MASK = 0x7FFFFFFF
_LENGTH_KEYS = frozenset({"maxLength", "minLength"})
# The longest string llama.cpp's grammar compiler took (measured: 1000 compiles, 1100 does not).
MAX_STRING_LENGTH = 1000
log = logging.getLogger(__name__)

T = TypeVar("T")


def capped_lengths(schema: Any, cap: int | None) -> Any:
    """`schema` with every string `maxLength` lowered to `cap`, or with `maxLength`/`minLength`
    removed when `cap` is None, at any depth."""
    if isinstance(schema, list):
        return [capped_lengths(v, cap) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: capped_lengths(v, cap) for k, v in schema.items() if cap is not None or k not in _LENGTH_KEYS}
    if cap is not None and isinstance(out.get("maxLength"), int) and out["maxLength"] > cap:
        out["maxLength"] = cap
        if isinstance(out.get("minLength"), int):
            out["minLength"] = min(out["minLength"], cap)
    return out


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 for a moment: llama.cpp `fprintf`s a refused grammar, whole (kilobytes),
    to stderr. Process-wide, so it is held only while one grammar is probed."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def grammar_compiles(llm: Any, schema: Mapping[str, Any]) -> bool:
    """Whether llama.cpp accepts the grammar llama-cpp-python makes from `schema`, tried on `llm`'s
    vocabulary without generating anything (a refused grammar would crash a real call)."""
    from llama_cpp import llama_cpp as lib
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(json.dumps(schema))
    # `_model` is private, but the pinned 0.3.36 offers no public handle to the vocabulary.
    with _quiet_stderr():
        sampler = lib.llama_sampler_init_grammar(llm._model.vocab, gbnf.encode(), b"root")
    if not sampler:
        return False
    lib.llama_sampler_free(sampler)
    return True


def usable_schema(llm: Any, schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` if llama.cpp compiles it; else with string `maxLength` capped at `MAX_STRING_LENGTH`;
    else without string length bounds; else ValueError."""
    plain = dict(schema)
    if grammar_compiles(llm, plain):
        return plain
    for cap, what in (
        (MAX_STRING_LENGTH, f"string maxLength capped at {MAX_STRING_LENGTH}"),
        (None, "no string length bounds"),
    ):
        relaxed = capped_lengths(plain, cap)
        if relaxed != plain and grammar_compiles(llm, relaxed):
            log.warning("llama.cpp refused the grammar of a json_schema; using it with %s", what)
            return dict(relaxed)
    raise ValueError(f"llama.cpp cannot compile a grammar for json_schema {json.dumps(plain)[:300]}")


def chat_kwargs(request: ChatRequest, schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The `create_chat_completion` arguments for `request`: seed always set, and `schema` (default:
    the request's own) as the response format."""
    seed = DEFAULT_SEED if request.seed is None else request.seed & _SEED_MASK
    kwargs: dict[str, Any] = {
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "seed": seed,
    }
    schema = request.json_schema if schema is None else schema
    if schema is not None:
        kwargs["response_format"] = {"type": "json_object", "schema": dict(schema)}
    return kwargs


def to_completion(response: dict[str, Any], latency_s: float, model: str) -> Completion:
    """A `Completion` from a `create_chat_completion` response, counts exactly as the engine gave them."""
    choice = response["choices"][0]
    usage = response["usage"]
    return Completion(
        text=choice["message"]["content"] or "",
        prompt_tokens=int(usage["prompt_tokens"]),
        completion_tokens=int(usage["completion_tokens"]),
        cached_tokens=0,  # every call starts from an empty KV cache (see the module docstring)
        finish_reason=choice.get("finish_reason") or "stop",
        latency_s=latency_s,
        model=model,
    )


class InstancePool:
    """Hands each call an instance no other call is using; the instance is free again only once the
    worker thread using it has returned (even if the awaiting task was cancelled meanwhile)."""

    def __init__(self, instances: Sequence[Any]) -> None:
        self.instances = list(instances)
        self._free: asyncio.Queue[int] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _queue(self) -> asyncio.Queue[int]:
        # asyncio queues belong to one event loop; a backend reused under a new loop (tests calling
        # asyncio.run twice) gets a fresh queue. Under one loop the queue lives as long as the pool.
        loop = asyncio.get_running_loop()
        if self._free is None or self._loop is not loop:
            self._free, self._loop = asyncio.Queue(), loop
            for i in range(len(self.instances)):
                self._free.put_nowait(i)
        return self._free

    async def run(self, fn: Callable[[Any], T]) -> T:
        """Run `fn(instance)` in a worker thread on a free instance."""
        free = self._queue()
        i = await free.get()
        task = asyncio.ensure_future(asyncio.to_thread(fn, self.instances[i]))

        def release(t: asyncio.Future[T]) -> None:
            free.put_nowait(i)
            if not t.cancelled():
                t.exception()  # mark it retrieved: the caller may have been cancelled and never see it

        task.add_done_callback(release)
        return await asyncio.shield(task)


def check_args(
    model: str, n_ctx: int, n_threads: int | None, n_parallel: int, chat_format: str | None, verbose: bool
) -> None:
    """The ranges of the engine's arguments (ValueError naming the argument); the model file is
    looked for where the engine runs."""
    for name, value, low, high in (
        ("n_ctx", n_ctx, 16, 1 << 20),
        ("n_threads", n_threads, 1, 1024),
        ("n_parallel", n_parallel, 1, 256),
    ):
        if value is not None and not low <= value <= high:
            raise ValueError(f"args.{name}: must be in [{low}, {high}], got {value}")
    if not isinstance(model, str) or not model.strip():
        raise ValueError("model must be a non-empty string (a .gguf path or an alias)")


@backend("llama_cpp", check=check_args)
class LlamaCppBackend:
    """A GGUF model served in-process by llama.cpp on the CPU; `n_parallel` instances serve requests."""

    def __init__(
        self,
        model: str = "smollm2-135m-instruct",
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_parallel: int = 1,
        chat_format: str | None = None,
        verbose: bool = False,
    ) -> None:
        if n_parallel < 1:
            raise ValueError(f"n_parallel must be >= 1, got {n_parallel}")
        if n_threads is not None and n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads}")
        path = resolve_gguf(model)  # before the heavy import: a bad path fails fast and clearly
        from llama_cpp import Llama  # lazy: the registry imports this module without llama.cpp

        self.model = model
        self.path = path
        self.n_threads = n_threads or 1
        self._schemas: dict[str, dict[str, Any]] = {}  # a request schema (as JSON) -> what is sent
        self.pool = InstancePool(
            [
                Llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=self.n_threads,
                    # Prompt evaluation too: its default is every core, and on a busy machine the
                    # spinning barrier made one 261-token prompt take anywhere from 3 s to 90 s.
                    n_threads_batch=self.n_threads,
                    chat_format=chat_format,
                    verbose=verbose,
                )
                for _ in range(n_parallel)
            ]
        )

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """One completion per request, in order; requests run concurrently on the free instances."""
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    def schema_for(self, request: ChatRequest) -> dict[str, Any] | None:
        """The schema actually sent for `request` (see `usable_schema`), checked once per schema."""
        if request.json_schema is None:
            return None
        key = json.dumps(dict(request.json_schema), sort_keys=True)
        if key not in self._schemas:
            # Reads only the shared, read-only vocabulary, so it is safe beside a running call.
            self._schemas[key] = usable_schema(self.pool.instances[0], request.json_schema)
        return self._schemas[key]

    async def _one(self, request: ChatRequest) -> Completion:
        kwargs = chat_kwargs(request, self.schema_for(request))

        def call(llm: Any) -> tuple[dict[str, Any], float]:
            llm.reset()  # no KV prefix reuse: the text must not depend on the instance's history
            with Timer() as t:
                response = llm.create_chat_completion(**kwargs)
            return response, t.elapsed

        response, latency = await self.pool.run(call)
        return to_completion(response, latency, self.model)
