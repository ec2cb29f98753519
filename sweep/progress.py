"""Progress for logs: when the console is not a terminal (`make run > log`, `ray job logs --follow`,
CI) a progress bar draws nothing until the end, so a plain line is printed every `every_s` seconds."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console

from sweep.scheduler import RunStats


def duration(seconds: float) -> str:
    """'1h02m', '3m05s', '42s'."""
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class ProgressLines:
    """Call with the running totals as often as they change; prints at most one line per `every_s`
    (and the first once an episode is done): episodes done/total, calls, tokens/s, cache hits,
    accuracy so far and the time left at the current pace."""

    def __init__(
        self,
        console: Console,
        total: int,
        every_s: float,
        cache_hits: Callable[[], int] = lambda: 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console, self.total, self.every_s = console, total, every_s
        self.cache_hits, self.clock = cache_hits, clock
        self.started = clock()
        self.last: float | None = None

    def line(self, s: RunStats) -> str:
        elapsed = max(1e-9, self.clock() - self.started)
        left = duration(elapsed / s.done * (self.total - s.done)) if s.done else "?"
        pct = 100.0 * s.done / self.total if self.total else 100.0
        return (
            f"progress: {s.done}/{self.total} episodes ({pct:.0f} %), {s.calls:,} calls, "
            f"{s.tokens / elapsed:,.0f} tokens/s, {self.cache_hits():,} cache hits, acc {s.accuracy:.3f}, "
            f"{duration(elapsed)} elapsed, ETA {left}"
        )

    def __call__(self, s: RunStats) -> None:
        now = self.clock()
        if s.done == 0 or (self.last is not None and now - self.last < self.every_s):
            return
        self.last = now
        self.console.print(self.line(s), highlight=False, soft_wrap=True)
