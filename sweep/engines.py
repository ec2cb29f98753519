"""Engine actors: each model of the pool is served by `replicas` long-lived async Ray actors, built
once and shared by every episode; the driver talks to them through `RemoteBackend`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import ray
from ray.util.placement_group import PlacementGroup, placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from actors.base import ChatRequest, Completion
from actors.registry import build_backend
from sweep.config import ModelSpec


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
    """A `Backend` on the driver that balances batches over an engine's replicas (least in flight)."""

    def __init__(self, name: str, actors: list[Any], groups: list[PlacementGroup] | None = None) -> None:
        self.name = name
        self.actors = actors
        self.groups = groups or []  # placement groups of tensor-parallel replicas, removed on stop
        self.in_flight = [0] * len(actors)

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        i = min(range(len(self.actors)), key=self.in_flight.__getitem__)
        self.in_flight[i] += 1
        try:
            return await self.actors[i].generate.remote(list(requests))
        finally:
            self.in_flight[i] -= 1


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
        backends[name] = RemoteBackend(name, actors, groups)
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
