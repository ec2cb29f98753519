"""What `sweep train` says while it works: a line before the first update (what it is collecting), a
line at least every `every_s` while rollouts run (episodes finished, model calls answered and in
flight), and after each update the time it took and an ETA — so piped output is never silent long,
even on an engine that takes minutes per episode."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from rich.console import Console

from debate.episode import Agent


def duration(seconds: float) -> str:
    """`42 s`, `7m05s`, `3h12m`: short enough for a progress line."""
    if seconds < 10:
        return f"{max(0.0, seconds):.1f} s"
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class CallMeter:
    """Counts model calls as episodes make them (an episode's own count comes only when it ends)."""

    def __init__(self) -> None:
        self.done = 0
        self.in_flight = 0

    def metered(self, agents: Mapping[str, Agent]) -> dict[str, Agent]:
        """`agents` with each backend wrapped to count its calls; seats that shared a backend still
        share one (an episode batches calls per backend)."""
        wrapped: dict[int, _Metered] = {}
        out = {}
        for name, agent in agents.items():
            key = id(agent.backend)
            wrapped.setdefault(key, _Metered(agent.backend, self))
            out[name] = dataclasses.replace(agent, backend=wrapped[key])
        return out


class _Metered:
    def __init__(self, backend: Any, meter: CallMeter) -> None:
        self.backend, self.meter = backend, meter

    async def generate(self, requests: Sequence[Any]) -> list[Any]:
        self.meter.in_flight += len(requests)
        try:
            return list(await self.backend.generate(requests))
        finally:
            self.meter.in_flight -= len(requests)
            self.meter.done += len(requests)

    def __getattr__(self, name: str) -> Any:  # anything else a backend offers, unchanged
        return getattr(self.backend, name)


class TrainProgress:
    """The progress lines of one training run (`clock` is replaceable for tests)."""

    def __init__(
        self, console: Console, updates: int, every_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.console, self.updates, self.every_s, self.clock = console, updates, every_s, clock
        self.meter = CallMeter()
        self.last = clock()  # when a line was last printed
        self.phase, self.total, self.finished, self.started = "", 0, 0, clock()
        self.calls_at_start = 0
        self.seconds: list[float] = []  # each update of this run, evaluations included

    def say(self, line: str) -> None:
        self.console.print(line, highlight=False)
        self.last = self.clock()

    def begin(self, first: int, episodes: int, rounds: int, seats: int) -> None:
        """The line before the first update of this run: what it is doing until that update ends."""
        if first <= self.updates:
            self.say(
                f"update {first}/{self.updates}: collecting rollouts ({episodes} debates of {rounds} rounds, "
                f"{seats} agents each); a progress line at least every {duration(self.every_s)}"
            )

    def phase_start(self, phase: str, total: int) -> None:
        """Rollouts (or an evaluation) of `total` episodes begin; `phase` names them in heartbeat lines."""
        self.phase, self.total, self.finished, self.started = phase, total, 0, self.clock()
        self.calls_at_start = self.meter.done

    def on_progress(self, stats: Any) -> None:
        """`sweep.run.scheduler.run_tasks`' callback: an episode finished."""
        self.finished = int(stats.done)

    def tick(self) -> None:
        """A heartbeat line when nothing was printed for `every_s`."""
        if self.phase and self.clock() - self.last >= self.every_s:
            calls = self.meter.done - self.calls_at_start
            episodes = f"{self.finished}/{self.total} episodes done, " if self.total else ""
            self.say(
                f"{self.phase}: {episodes}{calls} calls answered, {self.meter.in_flight} in flight, "
                f"{duration(self.clock() - self.started)} so far"
            )

    def updated(self, update: int, seconds: float) -> str:
        """After update `update` (which took `seconds`): its time and the ETA of the rest, from the
        mean time of this run's updates."""
        self.seconds.append(seconds)
        self.phase = ""
        mean = sum(self.seconds) / len(self.seconds)
        left = self.updates - update
        eta = f"ETA {duration(mean * left)}" if left > 0 else "done"
        return f"{duration(seconds)}/update, {eta}"

    @contextlib.asynccontextmanager
    async def beating(self) -> AsyncIterator[None]:
        """Heartbeat lines (`beat`) for as long as the block runs: a trainer's whole run."""
        task = asyncio.create_task(self.beat())
        try:
            yield
        finally:
            task.cancel()

    async def beat(self) -> None:
        """Heartbeat lines until cancelled: checked often, printed only after `every_s` of silence."""
        while True:
            await asyncio.sleep(min(1.0, self.every_s))
            self.tick()
