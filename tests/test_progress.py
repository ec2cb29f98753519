"""Progress lines for logs: one every `every_s` seconds, with done/total, calls, tokens/s, cache hits
and the time left; nothing before the first episode."""

from __future__ import annotations

import io

from rich.console import Console

from sweep.progress import ProgressLines, duration, per_second
from sweep.scheduler import RunStats


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_a_line_every_interval_with_rate_and_eta() -> None:
    buf, clock = io.StringIO(), Clock()
    lines = ProgressLines(Console(file=buf, width=300), total=100, every_s=30, cache_hits=lambda: 7, clock=clock)
    lines(RunStats(total=100))  # nothing done yet: no line
    clock.t += 10
    lines(RunStats(total=100, done=10, correct=5, tokens=20_000, calls=50))
    clock.t += 20  # 20 s later: within the interval, no line
    lines(RunStats(total=100, done=30, correct=15, tokens=60_000, calls=150))
    clock.t += 10  # 30 s after the first line
    lines(RunStats(total=100, done=40, correct=20, tokens=80_000, calls=200))
    printed = buf.getvalue().splitlines()
    assert printed == [
        "progress: 10/100 episodes (10 %), 50 calls, 2,000 tokens/s, 7 cache hits, acc 0.500, 10s elapsed, ETA 1m30s",
        "progress: 40/100 episodes (40 %), 200 calls, 2,000 tokens/s, 7 cache hits, acc 0.500, 40s elapsed, ETA 1m00s",
    ]


def test_episodes_other_drivers_claimed_count_as_handled_and_are_named() -> None:
    buf, clock = io.StringIO(), Clock()
    lines = ProgressLines(Console(file=buf, width=300), total=100, every_s=30, clock=clock)
    clock.t += 20
    lines(RunStats(total=100, done=30, skipped=20, correct=15, tokens=20_000, calls=150))
    assert buf.getvalue().splitlines() == [
        "progress: 50/100 episodes (50 %) (20 by other drivers), 150 calls, 1,000 tokens/s, 0 cache hits, "
        "acc 0.500, 20s elapsed, ETA 20s"
    ]


def test_durations_read_as_people_write_them() -> None:
    assert [duration(s) for s in (5, 65, 3725)] == ["5s", "1m05s", "1h02m"]


def test_rates_below_ten_keep_two_digits() -> None:  # a CPU engine's 0.47 calls/s printed as "0" before
    got = [per_second(n, s) for n, s in ((264, 560.4), (53, 10), (13_200, 5.36), (1, 0))]
    assert got == ["0.47", "5.3", "2,463", "0"]


def test_a_line_comes_on_time_even_while_no_episode_finishes() -> None:
    buf, clock = io.StringIO(), Clock()
    lines = ProgressLines(Console(file=buf, width=300), total=12, every_s=30, clock=clock)
    lines.tick()  # nothing known yet
    lines.stats = RunStats(total=12)
    clock.t += 29
    lines.tick()
    assert buf.getvalue() == ""
    clock.t += 1  # 30 s without a line: one now, episodes or not
    lines.tick()
    clock.t += 10
    lines.tick()  # 10 s after it: none
    assert buf.getvalue().splitlines() == [
        "progress: 0/12 episodes (0 %), 0 calls, 0 tokens/s, 0 cache hits, acc 0.000, 30s elapsed, ETA ?"
    ]


def test_the_ticker_thread_stops_with_its_block() -> None:
    lines = ProgressLines(Console(file=io.StringIO()), total=1, every_s=0.01)
    with lines:
        assert lines._thread is not None and lines._thread.is_alive()
    assert not lines._thread.is_alive()
