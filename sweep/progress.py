"""Progress for logs: when the console is not a terminal (`make run > log`, `ray job logs --follow`,
CI) a progress bar draws nothing until the end, so a plain line is printed every `every_s` seconds."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from sweep.scheduler import RunStats


def per_second(count: float, seconds: float) -> str:
    """A rate for people: '2,463', '12', '0.47' (a slow engine's calls/s is not '0')."""
    rate = count / seconds if seconds > 0 else 0.0
    return f"{rate:,.0f}" if rate >= 10 else f"{rate:.2g}"


def duration(seconds: float) -> str:
    """'1h02m', '3m05s', '42s'."""
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class ProgressLines:
    """Call with the running totals as often as they change; prints at most one line per `every_s`
    (and the first once an episode is done): episodes done/total (those other drivers claimed
    included, and named), calls, tokens/s, cache hits, accuracy so far and the time left at the
    current pace."""

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
        self.stats: RunStats | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def line(self, s: RunStats) -> str:
        # Episodes other drivers claimed (`--join`, `--drivers`) count as handled: without them an
        # owner's count ends short of the total and its ETA runs for the whole sweep.
        elapsed, handled = max(1e-9, self.clock() - self.started), s.done + s.skipped
        left = duration(elapsed / handled * (self.total - handled)) if s.done else "?"
        pct = 100.0 * handled / self.total if self.total else 100.0
        others = f" ({s.skipped} by other drivers)" if s.skipped else ""
        return (
            f"progress: {handled}/{self.total} episodes ({pct:.0f} %){others}, {s.calls:,} calls, "
            f"{per_second(s.tokens, elapsed)} tokens/s, {self.cache_hits():,} cache hits, acc {s.accuracy:.3f}, "
            f"{duration(elapsed)} elapsed, ETA {left}"
        )

    def __call__(self, s: RunStats) -> None:
        self.stats = s
        now = self.clock()
        if s.done == 0 or (self.last is not None and now - self.last < self.every_s):
            return
        self.last = now
        self.console.print(self.line(s), highlight=False, soft_wrap=True)

    def tick(self) -> None:
        """A line when none was printed for `every_s` (episodes can take minutes on a CPU model)."""
        now = self.clock()
        if self.stats is not None and now - (self.last if self.last is not None else self.started) >= self.every_s:
            self.last = now
            self.console.print(self.line(self.stats), highlight=False, soft_wrap=True)

    def __enter__(self) -> ProgressLines:
        def run() -> None:
            while not self._stop.wait(min(self.every_s, 5.0)):
                self.tick()

        self._thread = threading.Thread(target=run, name="progress-lines", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


def seconds_since_start() -> float | None:
    """Seconds since this process started (Linux /proc; None elsewhere)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return uptime - ticks / os.sysconf("SC_CLK_TCK")
