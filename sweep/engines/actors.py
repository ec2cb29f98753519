"""Engine actors: each model of the pool is served by `replicas` long-lived async Ray actors, built
once and shared by every episode; the driver talks to them through `RemoteBackend`.

What crosses the process boundary is compact: requests and completions travel as tuples of plain
values (no dataclasses for pickle to describe), and the simulated engine's `hints` only go to the
simulated engine (real engines never read them). For the simulated engine, whose batches return
together anyway, the requests of every episode sent in the same event-loop turn share one actor call."""

from __future__ import annotations

import asyncio
import os
import zlib
from collections.abc import Sequence
from typing import Any

import ray
from ray.util.placement_group import PlacementGroup, placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from actors.base import ChatRequest, Completion, Message
from actors.registry import build_backend
from sweep.config.sweep import ModelSpec

HINTED = {"simulated"}  # engines that read `ChatRequest.hints`
COALESCED = {"simulated"}  # engines whose batches return together: several episodes per actor call

Wire = tuple[Any, ...]


def pack(request: ChatRequest, hints: bool) -> Wire:
    """A request as plain values (`unpack` inverts it)."""
    messages = tuple((m.role, m.content) for m in request.messages)
    schema = None if request.json_schema is None else dict(request.json_schema)
    extra = dict(request.hints) if hints else None
    return (messages, request.max_tokens, request.temperature, request.top_p, request.seed, schema, extra)


def unpack(wire: Wire) -> ChatRequest:
    messages, max_tokens, temperature, top_p, seed, schema, hints = wire
    return ChatRequest(
        tuple(Message(r, c) for r, c in messages), max_tokens, temperature, top_p, seed, schema, hints or {}
    )


def pack_completion(c: Completion) -> Wire:
    return (
        c.text,
        c.prompt_tokens,
        c.completion_tokens,
        c.cached_tokens,
        c.finish_reason,
        c.latency_s,
        c.model,
        c.cache_hit,
    )


@ray.remote(max_restarts=2, max_task_retries=0)
class EngineActor:
    """Hosts one `Backend`. Async: up to `max_concurrency` batches are served at once."""

    def __init__(self, engine: str, model: str, args: dict[str, Any]) -> None:
        self.engine = engine
        self.backend = build_backend(engine, model, args)

    async def ready(self) -> dict[str, Any]:
        return {"engine": self.engine, "pid": os.getpid()}

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return await self.backend.generate(requests)

    async def generate_packed(self, batches: list[list[Wire]]) -> list[list[Wire]]:
        """Several callers' batches (packed), each served as its own `generate`, all at once."""
        done = await asyncio.gather(*(self.backend.generate([unpack(w) for w in b]) for b in batches))
        return [[pack_completion(c) for c in out] for out in done]

    async def close(self) -> None:
        """Let the engine release what it holds (vLLM's engine-core processes, HTTP sessions)."""
        for name in ("aclose", "close"):
            fn = getattr(self.backend, name, None)
            if fn is not None:
                result = fn()
                if hasattr(result, "__await__"):
                    await result
                return


class RemoteBackend:
    """A `Backend` on the driver over an engine's replicas. A batch goes to its item's replica while
    that one is not much busier than the least busy (an item's prompts share a prefix that the
    replica's prefix cache keeps), else to the least busy."""

    def __init__(
        self, name: str, actors: list[Any], groups: list[PlacementGroup] | None = None, engine: str = ""
    ) -> None:
        self.name = name
        self.actors = actors
        self.groups = groups or []  # placement groups of tensor-parallel replicas, removed on stop
        self.in_flight = [0] * len(actors)
        self.hints = engine in HINTED
        self.coalesce = engine in COALESCED
        self._queued: list[tuple[int, list[Wire], asyncio.Future[list[Completion]]]] = []
        self.actor_calls = 0  # actor calls made (coalescing makes fewer than batches)

    def _replica(self, requests: Sequence[ChatRequest]) -> int:
        least = min(range(len(self.actors)), key=self.in_flight.__getitem__)
        item = str(requests[0].hints.get("item", "")) if requests and requests[0].hints else ""
        if not item or len(self.actors) == 1:
            return least
        home = zlib.crc32(item.encode()) % len(self.actors)
        return home if self.in_flight[home] <= self.in_flight[least] + 2 else least

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if not requests:
            return []
        i = self._replica(requests)
        wire = [pack(r, self.hints) for r in requests]
        self.in_flight[i] += 1
        try:
            if not self.coalesce:
                self.actor_calls += 1
                (out,) = await self.actors[i].generate_packed.remote([wire])
                return [Completion(*c) for c in out]
            future: asyncio.Future[list[Completion]] = asyncio.get_running_loop().create_future()
            if not self._queued:
                asyncio.get_running_loop().call_soon(self._send)
            self._queued.append((i, wire, future))
            return await future
        finally:
            self.in_flight[i] -= 1

    def _send(self) -> None:
        """One actor call per replica for every batch queued in this event-loop turn."""
        queued, self._queued = self._queued, []
        for i in sorted({i for i, _, _ in queued}):
            mine = [(w, f) for j, w, f in queued if j == i]
            self.actor_calls += 1
            ref = self.actors[i].generate_packed.remote([w for w, _ in mine])
            asyncio.ensure_future(self._deliver(ref, [f for _, f in mine]))

    @staticmethod
    async def _deliver(ref: Any, futures: list[asyncio.Future[list[Completion]]]) -> None:
        try:
            outs = await ref
        except BaseException as e:  # every caller of the shared call sees its failure
            for f in futures:
                if not f.done():
                    f.set_exception(e)
            if not isinstance(e, Exception):
                raise
            return
        for f, out in zip(futures, outs, strict=True):
            if not f.done():
                f.set_result([Completion(*c) for c in out])


def placement_bundles(spec: ModelSpec) -> list[dict[str, float]] | None:
    """One `{"GPU": 1, "CPU": 1}` bundle per shard when the model is tensor-parallel
    (`args.tensor_parallel_size` > 1), else None: the replica is a plain actor."""
    tp = int(spec.args.get("tensor_parallel_size", 1))
    return [{"GPU": 1.0, "CPU": 1.0} for _ in range(tp)] if tp > 1 else None


def actor_options(spec: ModelSpec, group: PlacementGroup | None = None) -> dict[str, Any]:
    """Ray options for one replica's `EngineActor`.

    In a placement group (tensor parallel) the actor itself asks for nothing and sits on bundle 0;
    capturing child tasks puts the engine's own Ray workers (vLLM starts one per GPU, each taking
    one bundle) into the same group, as in vLLM's RLHF example. `num_gpus`/`num_cpus` then do not apply.
    """
    options: dict[str, Any] = {
        "name": None,
        "num_gpus": spec.num_gpus,
        "num_cpus": spec.num_cpus,
        "max_concurrency": spec.max_concurrency,
    }
    if group is None:
        return options
    strategy = PlacementGroupSchedulingStrategy(
        placement_group=group,
        placement_group_bundle_index=0,
        placement_group_capture_child_tasks=True,
    )
    return options | {"num_gpus": 0, "num_cpus": 0, "scheduling_strategy": strategy}


def _placement_group(spec: ModelSpec) -> PlacementGroup | None:
    bundles = placement_bundles(spec)
    # STRICT_PACK: tensor-parallel shards exchange activations every layer, so they share one node.
    return placement_group(bundles, strategy="STRICT_PACK") if bundles else None


def start_engines(models: dict[str, ModelSpec], ready_timeout_s: float = 600.0) -> dict[str, RemoteBackend]:
    """Start every replica of every named model and wait until each answers `ready`.
    Each tensor-parallel replica gets its own placement group."""
    backends: dict[str, RemoteBackend] = {}
    for name, spec in models.items():
        actors, groups = [], []
        for _ in range(spec.replicas):
            group = _placement_group(spec)
            actor = EngineActor.options(**actor_options(spec, group))  # type: ignore[attr-defined]
            actors.append(actor.remote(spec.engine, spec.model or name, dict(spec.args)))
            groups += [group] if group is not None else []
        backends[name] = RemoteBackend(name, actors, groups, spec.engine)
    refs = [a.ready.remote() for b in backends.values() for a in b.actors]
    try:
        ray.get(refs, timeout=ready_timeout_s)
    except ray.exceptions.GetTimeoutError:
        stop_engines(backends)
        raise RuntimeError(
            f"engine actors not ready after {ready_timeout_s:.0f} s (not enough GPUs/CPUs for the pool?)"
        ) from None
    return backends


def stop_engines(backends: dict[str, RemoteBackend], close_timeout_s: float = 30.0) -> None:
    """Close every engine cleanly (bounded wait), then kill its actor and free its GPUs."""
    closing = [a.close.remote() for b in backends.values() for a in b.actors]
    if closing:
        ray.wait(closing, num_returns=len(closing), timeout=close_timeout_s)
    for b in backends.values():
        for a in b.actors:
            ray.kill(a)
        for g in b.groups:
            remove_placement_group(g)
