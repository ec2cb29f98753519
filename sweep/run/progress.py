"""Progress of `sweep run`: the same status as a live bar on a terminal, and as a plain line every
`every_s` seconds elsewhere (`make run > log`, `ray job logs --follow`, CI), where a bar draws nothing
until the end. Lines come on time from the first second, before any episode ends: on a CPU model an
episode takes minutes and its calls are the only sign of work.

The status counts model calls as they are answered and while they are in flight (`CallMeter`), beside
episodes; the time left is the calls still to make over the recent call rate (episodes end in bursts,
long after their first calls, so their rate misleads); accuracy appears once an episode has ended."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

from rich.console import Console
from rich.progress import Progress, ProgressColumn, Task
from rich.progress_bar import ProgressBar
from rich.text import Text

from sweep.run.scheduler import CallMeter, RunStats

# The call rate is measured over this many recent seconds: long enough to span a debate round's burst
# of calls on a slow engine, short enough to follow a machine that got busier.
RATE_WINDOW_S = 120.0
# ...and over at least this many answers: two calls that end a second apart are not a pace.
RATE_MIN_ANSWERS = 3


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


class CallRate:
    """Calls answered per second over the last `window_s`, from samples (time, calls answered so far)
    kept where the count moved: between two answers of a slow engine the rate holds, not decays (a
    CPU model answers a few calls every half minute). Sampling starts at the first answer: the
    engines' start-up is not their pace."""

    def __init__(self, window_s: float = RATE_WINDOW_S) -> None:
        self.window_s = window_s
        self._samples: deque[tuple[float, int]] = deque()
        self._lock = threading.Lock()  # sampled by the ticker, the scheduler and the bar's refresh

    def add(self, t: float, answered: int) -> None:
        if answered <= 0:
            return
        with self._lock:
            if self._samples and answered <= self._samples[-1][1]:
                return
            self._samples.append((t, answered))
            # Keep one sample at or before the window's start, so the window is always spanned, and
            # enough samples for `RATE_MIN_ANSWERS` answers.
            keep = RATE_MIN_ANSWERS + 1
            while len(self._samples) > keep and self._samples[1][0] <= t - self.window_s:
                self._samples.popleft()

    def per_s(self) -> float | None:
        """None until the samples span `RATE_MIN_ANSWERS` answers after the first."""
        with self._lock:
            if len(self._samples) < 2:
                return None
            (t0, n0), (t1, n1) = self._samples[0], self._samples[-1]
        return (n1 - n0) / (t1 - t0) if t1 > t0 and n1 - n0 >= RATE_MIN_ANSWERS else None


class ProgressLines:
    """The run's status (`text`), printed as a line at least every `every_s` seconds once entered
    (`with lines:` starts a ticker thread), when the first episode ends, and on an episode's end when
    one is due. Call it with the running totals as they change. Without a `meter` calls count as
    episodes report them."""

    def __init__(
        self,
        console: Console,
        total: int,
        every_s: float,
        cache_hits: Callable[[], int] = lambda: 0,
        clock: Callable[[], float] = time.monotonic,
        meter: CallMeter | None = None,
        window_s: float = RATE_WINDOW_S,
    ) -> None:
        self.console, self.total, self.every_s = console, total, every_s
        self.cache_hits, self.clock, self.meter = cache_hits, clock, meter
        self.rate = CallRate(window_s)
        self.started = clock()
        self.last: float | None = None
        self.stats: RunStats | None = None
        self._first_told = False  # a line has shown an ended episode
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _calls(self, s: RunStats) -> tuple[int, int, int]:
        """Calls answered, calls in flight, tokens so far."""
        m = self.meter
        return (m.done, m.in_flight, m.tokens) if m is not None else (s.calls, 0, s.tokens)

    def calls_left(self, s: RunStats, answered: int) -> tuple[float, bool]:
        """The calls still to make, and whether that is an upper bound: the plan's bound on the
        episodes not ended, less the calls those made already; once episodes have ended, their bound
        is scaled by the share of it they used (a critique round or a pruned seat makes fewer)."""
        made = max(0, answered - s.calls)  # by the episodes still running (and failed ones)
        if s.finished_bound:
            return max(0.0, s.calls_bound * s.calls / s.finished_bound - made), False
        return float(max(0, s.calls_bound - made)), True

    def eta(self, s: RunStats, answered: int, elapsed: float) -> str:
        handled = s.done + s.skipped
        if not s.calls_bound and not s.finished_bound:  # no call plan: the episodes' pace
            return duration(elapsed / handled * (self.total - handled)) if s.done else "?"
        left, bound = self.calls_left(s, answered)
        if left <= 0:
            return "0s"
        rate = self.rate.per_s()
        return f"{'≤ ' if bound else ''}{duration(left / rate)}" if rate else "?"

    def fraction(self) -> float:
        """How much of the run is done, for the bar: calls answered over calls answered and left."""
        s = self.stats or RunStats(total=self.total)
        answered = self._calls(s)[0]
        if s.calls_bound or s.finished_bound:
            left = self.calls_left(s, answered)[0]
            return answered / (answered + left) if answered + left > 0 else 1.0
        return (s.done + s.skipped) / self.total if self.total else 1.0

    def text(self, s: RunStats, short: bool = False) -> str:
        """The status, e.g. '3/12 episodes (25 %), 40 calls done, 6 in flight, 0.31 calls/s, ...';
        `short`: what fits beside a bar on an 80-column terminal."""
        now = self.clock()
        elapsed, handled = max(1e-9, now - self.started), s.done + s.skipped
        answered, in_flight, tokens = self._calls(s)
        self.rate.add(now, answered)
        rate = self.rate.per_s()
        pct = 100.0 * handled / self.total if self.total else 100.0
        others = f" ({s.skipped} by other drivers)" if s.skipped else ""
        acc = f"{s.accuracy:.3f}" if s.done else "—"  # no episode ended: no accuracy, not 0
        if short:
            return (
                f"{handled}/{self.total} episodes · {answered:,} calls, {in_flight:,} in flight · acc {acc} · "
                f"ETA {self.eta(s, answered, elapsed)}"
            )
        return (
            f"{handled}/{self.total} episodes ({pct:.0f} %){others}, {answered:,} call{'' if answered == 1 else 's'} done, "
            f"{in_flight:,} in flight, {per_second(rate, 1) if rate is not None else '?'} calls/s, "
            f"{per_second(tokens, elapsed)} tokens/s, {self.cache_hits():,} cache hits, acc {acc}, "
            f"{duration(elapsed)} elapsed, ETA {self.eta(s, answered, elapsed)}"
        )

    def line(self, s: RunStats) -> str:
        return f"progress: {self.text(s)}"

    def _print(self, now: float) -> None:
        assert self.stats is not None
        self.last = now
        self.console.print(self.line(self.stats), highlight=False, soft_wrap=True)

    def _due(self) -> float:
        return (self.last if self.last is not None else self.started) + self.every_s

    def __call__(self, s: RunStats) -> None:
        self.stats = s
        if s.done and not self._first_told:  # the first accuracy at once, not up to `every_s` later
            self._first_told = True
            self._print(self.clock())
        else:
            self.tick()

    def update(self, s: RunStats) -> None:
        """Take the totals without printing (the bar shows them)."""
        self.stats = s

    def tick(self) -> None:
        """A line when none came for `every_s` (episodes can take minutes on a CPU model); else
        only a sample of the call rate."""
        if self.stats is None:
            return
        now = self.clock()
        if now >= self._due():
            self._print(now)
        else:
            self.rate.add(now, self._calls(self.stats)[0])

    def __enter__(self) -> ProgressLines:
        def run() -> None:
            # Wake when the next line is due (not up to a poll later), and every 5 s for the rate.
            while not self._stop.wait(max(0.01, min(5.0, self._due() - self.clock()))):
                self.tick()

        self._thread = threading.Thread(target=run, name="progress-lines", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


class _Bar(ProgressColumn):
    def __init__(self, lines: ProgressLines) -> None:
        super().__init__()
        self.lines = lines

    def render(self, task: Task) -> ProgressBar:
        return ProgressBar(total=1.0, completed=self.lines.fraction(), width=12)


class _Status(ProgressColumn):
    def __init__(self, lines: ProgressLines) -> None:
        super().__init__()
        self.lines = lines

    def render(self, task: Task) -> Text:
        s = self.lines.stats or RunStats(total=self.lines.total)
        return Text(self.lines.text(s, short=True))


@contextlib.contextmanager
def shown(console: Console, lines: ProgressLines) -> Iterator[Callable[[RunStats], None]]:
    """While inside, the run's status on `console`: a live bar redrawn 4 times a second on a terminal
    (calls move it between episodes' ends), else `lines`. Yields the callback for the totals."""
    if lines.stats is None:
        lines.stats = RunStats(total=lines.total)  # a status even before the first episode ends
    if not console.is_terminal:
        with lines:
            yield lines
        return
    with Progress(_Bar(lines), _Status(lines), console=console, refresh_per_second=4) as bar:
        bar.add_task("episodes", total=None)
        yield lines.update


def seconds_since_start() -> float | None:
    """Seconds since this process started (Linux /proc; None elsewhere)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return uptime - ticks / os.sysconf("SC_CLK_TCK")
