"""The one async `Backend` protocol every engine implements, and its request/response types."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from actors.frozen import quick_init


@quick_init
@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: str  # "system" | "user" | "assistant"
    content: str


@quick_init
@dataclass(frozen=True)
class ChatRequest:
    """One chat completion request.

    `hints` carries structured facts about the debate (agent index, round, gold answer, what the agent
    saw) that only the simulated backend reads; real engines ignore it and never send it anywhere.
    """

    messages: tuple[Message, ...]
    max_tokens: int = 512
    temperature: float = 0.7
    top_p: float = 1.0
    seed: int | None = None
    json_schema: Mapping[str, Any] | None = None
    hints: Mapping[str, Any] = field(default_factory=dict)

    def sampling_params(self) -> dict[str, Any]:
        """The sampling parameters as a plain dict (what an engine receives)."""
        return {
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
        }


@quick_init
@dataclass(frozen=True)
class Completion:
    """One completion, every count as the engine reported it."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0
    finish_reason: str = "stop"
    latency_s: float = 0.0
    model: str = ""
    cache_hit: bool = False  # served from the LLM-call cache: counts are the original call's


@runtime_checkable
class Backend(Protocol):
    """An LLM engine: a batch of chat requests in, one completion per request out, in order."""

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]: ...


class Timer:
    """Wall-clock latency of a block, for `Completion.latency_s`."""

    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        self.elapsed = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.elapsed = time.perf_counter() - self.start
