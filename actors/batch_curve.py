"""A GPU engine's timing without a GPU: continuous batching (as vLLM schedules it) over a step-time
curve, for throughput models of a cluster (`bench/cluster_sim.py`) and GPU-hour estimates
(`sweep plan --estimate`).

Each engine step runs every admitted sequence one token forward; sequences join at a step boundary
(their prefill runs in that step and yields their first token) and leave when their completion is
done. A step takes

    base_ms + per_seq_ms * batch + per_prefill_token_ms * prefill_tokens + per_context_token_ms * context

where `context` is the tokens every sequence in the batch holds (its KV cache read). At most
`max_num_seqs` sequences run at once and one step prefills at most `max_prefill_tokens`.

`BatchingEngine` wraps the simulated population (which writes the replies) and answers each request
when its modelled generation is done; its completion lengths follow the curve's `completion_tokens`
(a real model's reply length, not the simulated text's)."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import zlib
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from actors.base import ChatRequest, Completion


@dataclass(frozen=True)
class BatchCurve:
    """Step time and limits of one engine replica (one GPU, or one tensor-parallel group)."""

    name: str = "8B-bf16-H100-model"
    base_ms: float = 5.5  # weights read once per step: ~16 GB at ~3 TB/s
    per_seq_ms: float = 0.02  # sampling and bookkeeping per sequence
    per_prefill_token_ms: float = 0.015  # prompt tokens are compute-bound: ~65k tokens/s
    per_context_token_ms: float = 0.00004  # KV read: ~0.13 MB per token at ~3 TB/s
    max_num_seqs: int = 256
    max_prefill_tokens: int = 8192
    completion_tokens: int = 300  # mean reply length of the modelled LLM
    tokens_per_char: float = 0.25

    def step_s(self, batch: int, prefill: int, context: int) -> float:
        ms = self.base_ms + self.per_seq_ms * batch + self.per_prefill_token_ms * prefill
        return (ms + self.per_context_token_ms * context) / 1000.0

    def saturated(self, prompt_tokens: float, completion_tokens: float) -> dict[str, float]:
        """Steady state with every slot busy on requests of this size: requests/s and output
        tokens/s of one replica (each step admits batch / completion new sequences on average)."""
        b, d = self.max_num_seqs, max(1.0, completion_tokens)
        step = self.step_s(b, int(prompt_tokens * b / d), int(b * (prompt_tokens + d / 2)))
        return {"requests_per_s": b / (d * step), "output_tokens_per_s": b / step, "step_s": step}

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> BatchCurve:
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ValueError(f"batch curve: unknown key(s) {unknown}; known: {', '.join(sorted(known))}")
        return cls(**dict(raw))


@dataclass
class _Seq:
    tokens: int  # completion tokens to generate
    prompt: int  # prompt tokens (prefilled in the step that admits it)
    arrival: float  # loop time it was sent at: it joins the first step starting after
    done: asyncio.Future[None]


@dataclass
class Meter:
    """What an engine did: output tokens per whole second of loop time, busy time, steps."""

    tokens: dict[int, int] = field(default_factory=dict)
    finished: dict[int, int] = field(default_factory=dict)  # requests done, per second
    busy_s: float = 0.0
    steps: int = 0
    ends: list[int] = field(default_factory=list)  # the step each finished sequence ended after, in order


class BatchingEngine:
    """One replica: requests are timed by continuous batching on `curve` (`serve`)."""

    def __init__(self, curve: BatchCurve) -> None:
        self.curve = curve
        self.waiting: deque[_Seq] = deque()
        self.running: list[tuple[int, int, _Seq]] = []  # a heap of (the step it ends after, id, seq)
        self.step = 0  # steps run so far
        self.context = 0  # tokens in the KV cache of the running sequences
        self.meter = Meter()
        self._ids = itertools.count()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def load(self) -> int:
        return len(self.waiting) + len(self.running)

    def _length(self, c: Completion, max_tokens: int) -> int:
        # A reply's length: the curve's mean, varied by the simulated reply (x0.5..x1.5), within max_tokens.
        spread = 0.5 + (zlib.crc32(c.text.encode()) % 1000) / 1000.0
        return max(1, min(max_tokens, round(self.curve.completion_tokens * spread)))

    async def serve(self, requests: Sequence[ChatRequest], replies: Sequence[Completion]) -> list[Completion]:
        """`replies` (the content) once their modelled generation on this replica is done."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._steps())
        out, seqs = [], []
        for r, c in zip(requests, replies, strict=True):
            n = self._length(c, r.max_tokens)
            prompt = math.ceil(sum(len(m.content) for m in r.messages) * self.curve.tokens_per_char)
            loop = asyncio.get_running_loop()
            seqs.append(_Seq(n, prompt, loop.time(), loop.create_future()))
            out.append(replace(c, prompt_tokens=prompt, completion_tokens=n))
        self.waiting.extend(seqs)
        self._wake.set()
        await asyncio.gather(*(s.done for s in seqs))
        return out

    def _admit(self, at: float) -> int:
        """Move what arrived by `at` into the batch (within the slots and the prefill budget)."""
        budget, prefill = self.curve.max_prefill_tokens, 0
        while self.waiting and len(self.running) < self.curve.max_num_seqs and self.waiting[0].arrival <= at:
            seq = self.waiting[0]
            if prefill and prefill + seq.prompt > budget:
                break
            prefill += seq.prompt
            self.context += seq.prompt
            # Its prefill step yields its first token: it ends after `tokens` steps, this one included.
            heapq.heappush(self.running, (self.step + seq.tokens, next(self._ids), self.waiting.popleft()))
        return prefill

    async def _steps(self) -> None:
        # The engine keeps its own clock `t`: a step ends at t + dt whenever the loop gets round to
        # it, so a busy driver delays what it sees, never the engine (as with a real GPU). O(1) per
        # step plus O(log n) per finished sequence: a cluster of many replicas stays cheap.
        loop = asyncio.get_running_loop()
        t = loop.time()
        while True:
            if not self.running and not self.waiting:
                self._wake.clear()
                await self._wake.wait()
            if not self.running:
                t = max(t, self.waiting[0].arrival)  # idle until the first request came
            prefill = self._admit(t)
            batch = len(self.running)
            dt = self.curve.step_s(batch, prefill, self.context)
            t += dt
            await asyncio.sleep(max(0.0, t - loop.time()))
            self.step += 1
            self.context += batch
            second = int(t)
            self.meter.tokens[second] = self.meter.tokens.get(second, 0) + batch
            self.meter.busy_s += dt
            self.meter.steps += 1
            while self.running and self.running[0][0] <= self.step:
                _, _, seq = heapq.heappop(self.running)
                self.context -= seq.prompt + seq.tokens
                self.meter.finished[second] = self.meter.finished.get(second, 0) + 1
                self.meter.ends.append(self.step)
                if not seq.done.done():
                    seq.done.set_result(None)

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()


class Cluster:
    """`replicas` engines shared by every model served through `backend(inner)`: a batch goes to the
    least loaded replica."""

    def __init__(self, curve: BatchCurve, replicas: int) -> None:
        self.engines = [BatchingEngine(curve) for _ in range(replicas)]

    def backend(self, inner: Any) -> TimedBackend:
        return TimedBackend(inner, self)

    def close(self) -> None:
        for e in self.engines:
            e.close()


class TimedBackend:
    """A `Backend`: `inner` (the simulated population) writes the replies, the cluster times them."""

    def __init__(self, inner: Any, cluster: Cluster) -> None:
        self.inner, self.cluster = inner, cluster

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        replies = await self.inner.generate(requests)
        engine = min(self.cluster.engines, key=lambda e: e.load)
        return await engine.serve(requests, replies)
