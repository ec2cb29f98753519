"""Engine actors: each model of the pool is served by `replicas` long-lived async Ray actors, built
once and shared by every episode; the driver talks to them through `RemoteBackend`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import ray

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


class RemoteBackend:
    """A `Backend` on the driver that balances batches over an engine's replicas (least in flight)."""

    def __init__(self, name: str, actors: list[Any]) -> None:
        self.name = name
        self.actors = actors
        self.in_flight = [0] * len(actors)

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        i = min(range(len(self.actors)), key=self.in_flight.__getitem__)
        self.in_flight[i] += 1
        try:
            return await self.actors[i].generate.remote(list(requests))
        finally:
            self.in_flight[i] -= 1


def start_engines(models: dict[str, ModelSpec], ready_timeout_s: float = 600.0) -> dict[str, RemoteBackend]:
    """Start every replica of every named model and wait until each answers `ready`."""
    backends: dict[str, RemoteBackend] = {}
    for name, spec in models.items():
        actors = [
            EngineActor.options(  # type: ignore[attr-defined]
                name=None,
                num_gpus=spec.num_gpus,
                num_cpus=spec.num_cpus,
                max_concurrency=spec.max_concurrency,
            ).remote(spec.engine, spec.model or name, dict(spec.args))
            for _ in range(spec.replicas)
        ]
        backends[name] = RemoteBackend(name, actors)
    refs = [a.ready.remote() for b in backends.values() for a in b.actors]
    try:
        ray.get(refs, timeout=ready_timeout_s)
    except ray.exceptions.GetTimeoutError:
        raise RuntimeError(
            f"engine actors not ready after {ready_timeout_s:.0f} s (not enough GPUs/CPUs for the pool?)"
        ) from None
    return backends


def stop_engines(backends: dict[str, RemoteBackend]) -> None:
    for b in backends.values():
        for a in b.actors:
            ray.kill(a)

