"""Sentence encoders hosted next to the engines: while an engine pool is open, every encoder a router
asks for by name (`debate.encoders.encoder_for`) runs in one long-lived async Ray actor, created on
first use, with its content cache, so every episode's embeddings are computed and cached in one
place (MiniLM loads once, not once per process)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import ray

from actors.encoders import DIMS, build_encoder
from debate import encoders


@ray.remote(max_restarts=2, max_task_retries=0)
class EncoderActor:
    """Hosts one content-cached encoder."""

    def __init__(self, name: str) -> None:
        self.encoder = build_encoder(name)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await self.encoder.embed(texts)

    async def stats(self) -> dict[str, int]:
        return {"hits": self.encoder.hits, "misses": self.encoder.misses}


class RemoteEncoder:
    """An encoder on the driver that forwards to its actor."""

    def __init__(self, name: str, actor: Any) -> None:
        self.name, self.dim, self.actor = name, DIMS[name], actor

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await self.actor.embed.remote(list(texts))


class HostedEncoders:
    """Serves `debate.encoders` from Ray actors between `start()` and `stop()`."""

    def __init__(self, ensure_ray: Callable[[], object] | None = None) -> None:
        self.served: dict[str, RemoteEncoder] = {}
        self._previous: Any = None
        # Ray may not be up yet (engines start on the first uncached call): our own start, never
        # Ray's implicit one with its default (non-loopback) settings.
        self._ensure_ray = ensure_ray

    def __call__(self, name: str) -> RemoteEncoder:
        if name not in self.served:
            if name not in DIMS:
                raise ValueError(f"unknown encoder '{name}'; known: {', '.join(sorted(DIMS))}")
            if self._ensure_ray is not None:
                self._ensure_ray()
            actor = EncoderActor.options(num_cpus=0, max_concurrency=64).remote(name)  # type: ignore[attr-defined]
            self.served[name] = RemoteEncoder(name, actor)
        return self.served[name]

    def start(self) -> HostedEncoders:
        self._previous = encoders.set_provider(self)
        return self

    def stop(self) -> None:
        encoders.set_provider(self._previous)
        for remote in self.served.values():
            ray.kill(remote.actor)
        self.served.clear()
