"""Progress of `sweep run`: a line every `every_s` seconds from the start (before any episode ends),
calls answered and in flight beside episodes, the time left from the call rate (an upper bound, marked
'≤', until episodes have ended), and no accuracy before an episode has ended. A fake clock throughout."""

from __future__ import annotations

import asyncio
import io
import logging
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from rich.console import Console

from actors.base import ChatRequest, Completion, Message
from sweep.engines import ray_runtime
from sweep.engines.pool import MeteredBackend
from sweep.run.progress import CallRate, ProgressLines, duration, per_second, shown
from sweep.run.scheduler import CallMeter, RunStats


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def progress(
    total: int, every_s: float = 30, meter: CallMeter | None = None
) -> tuple[ProgressLines, Clock, io.StringIO]:
    buf, clock = io.StringIO(), Clock()
    lines = ProgressLines(Console(file=buf, width=400), total, every_s, lambda: 7, clock, meter=meter)
    return lines, clock, buf


def test_a_line_comes_on_time_before_any_episode_ends_with_calls_in_flight() -> None:
    meter = CallMeter()
    lines, clock, buf = progress(12, meter=meter)
    lines.tick()  # nothing known yet: no line
    lines(RunStats(total=12, calls_bound=120))  # the scheduler's first call, at the start: not due
    meter.in_flight = 3  # the engine is still loading: three calls wait on it
    clock.t += 29
    lines.tick()
    assert buf.getvalue() == ""
    clock.t += 1  # 30 s without a line: one now, though no episode has ended
    lines.tick()
    clock.t += 10
    lines.tick()  # 10 s after it: none
    assert buf.getvalue().splitlines() == [
        "progress: 0/12 episodes (0 %), 0 calls done, 3 in flight, ? calls/s, 0 tokens/s, 7 cache hits, "
        "acc —, 30s elapsed, ETA ?"
    ]


def test_accuracy_waits_for_the_first_finished_episode() -> None:
    lines, _, _ = progress(4)
    assert "acc —" in lines.line(RunStats(total=4, calls=9))  # calls made, no episode ended: not 'acc 0.000'
    assert "acc 0.000" in lines.line(RunStats(total=4, done=1, correct=0, calls=9))
    assert "acc 0.500" in lines.line(RunStats(total=4, done=2, correct=1, calls=18))


def test_the_eta_is_the_calls_left_over_the_recent_call_rate() -> None:
    meter = CallMeter()
    lines, clock, _ = progress(10, meter=meter)
    stats = lines.stats = RunStats(total=10, calls_bound=100)  # 10 episodes of at most 10 calls
    meter.done, meter.in_flight = 0, 5
    assert lines.line(stats).endswith("ETA ?")  # no call answered yet: no pace to go by
    clock.t += 40  # the engine took 40 s to start: not part of the pace
    meter.done = 1
    lines.tick()
    clock.t += 20
    meter.done = 21  # 20 calls in 20 s: 1 call/s; 79 of the bound left, none of them finished
    line = lines.line(stats)
    assert "21 calls done, 5 in flight, 1 calls/s" in line and line.endswith("ETA ≤ 1m19s")
    # Two episodes end having used 8 of their 10 calls each: the rest is scaled by that share.
    stats.done, stats.calls, stats.calls_bound, stats.finished_bound = 2, 16, 80, 20
    clock.t += 10
    meter.done = 31  # 10 more calls in 10 s: still 1 call/s; 80 * 0.8 - (31 - 16) = 49 left
    line = lines.line(stats)
    assert "2/10 episodes (20 %), 31 calls done" in line and line.endswith("ETA 49s")


def test_the_call_rate_follows_the_recent_window() -> None:
    rate = CallRate(window_s=60)
    rate.add(0, 0)  # nothing answered: the engine's start is not its pace
    rate.add(10, 10)
    rate.add(11, 12)  # two answers a second apart: not yet a pace
    assert rate.per_s() is None
    for t in range(20, 71, 10):  # 10 calls/s for a minute
        rate.add(t, 10 + 10 * (t - 10))
    assert rate.per_s() == pytest.approx(10)
    for t in range(80, 131, 10):  # then 1 call/s: the first minute leaves the window
        rate.add(t, 610 + (t - 70))
    assert rate.per_s() == pytest.approx(1)
    rate.add(150, 670)  # 20 s without an answer (a slow engine's calls end in bursts): the rate holds
    assert rate.per_s() == pytest.approx(1)


def test_a_slow_engines_rate_spans_enough_answers_past_the_window() -> None:
    rate = CallRate(window_s=60)
    for i in range(1, 6):  # one answer every 50 s: the window alone would hold one or two
        rate.add(50.0 * i, i)
    assert rate.per_s() == pytest.approx(0.02)


def test_without_a_call_plan_the_eta_goes_by_episodes() -> None:  # the totals callers give without a meter
    lines, clock, buf = progress(100)
    clock.t += 10
    lines(RunStats(total=100, done=10, correct=5, tokens=20_000, calls=50))  # the first ended: a line now
    clock.t += 20  # 20 s after that line: none
    lines(RunStats(total=100, done=30, correct=15, tokens=60_000, calls=150))
    clock.t += 10  # 30 s after it: a line
    lines(RunStats(total=100, done=30, correct=15, tokens=60_000, calls=150))
    clock.t += 20
    later = RunStats(total=100, done=40, skipped=10, correct=20, tokens=105_000, calls=200)
    lines(later)
    clock.t += 10
    lines(later)
    assert buf.getvalue().splitlines() == [
        "progress: 10/100 episodes (10 %), 50 calls done, 0 in flight, ? calls/s, 2,000 tokens/s, "
        "7 cache hits, acc 0.500, 10s elapsed, ETA 1m30s",
        "progress: 30/100 episodes (30 %), 150 calls done, 0 in flight, 5 calls/s, 1,500 tokens/s, "
        "7 cache hits, acc 0.500, 40s elapsed, ETA 1m33s",
        "progress: 50/100 episodes (50 %) (10 by other drivers), 200 calls done, 0 in flight, 3 calls/s, "
        "1,500 tokens/s, 7 cache hits, acc 0.500, 1m10s elapsed, ETA 1m10s",
    ]


def test_the_ticker_wakes_when_a_line_is_due_and_stops_with_its_block() -> None:
    lines = ProgressLines(Console(file=io.StringIO()), total=1, every_s=0.01)
    lines.stats = RunStats(total=1)
    with lines:
        assert lines._thread is not None and lines._thread.is_alive()
        deadline = time.monotonic() + 60  # a bound for a stuck ticker, not a speed check
        while lines.last is None and time.monotonic() < deadline:
            time.sleep(0.01)
    assert not lines._thread.is_alive() and lines.last is not None


def test_the_terminal_bar_moves_with_calls_before_episodes_end() -> None:
    meter = CallMeter(done=30, in_flight=4)
    buf = io.StringIO()
    console = Console(file=buf, width=300, force_terminal=True)
    lines = ProgressLines(console, 10, 30, meter=meter)
    lines.stats = RunStats(total=10, calls_bound=100)
    with shown(console, lines) as show:
        show(RunStats(total=10, calls_bound=100))
    assert lines.fraction() == pytest.approx(0.3)
    assert "0/10 episodes · 30 calls, 4 in flight · acc —" in buf.getvalue()


def test_durations_read_as_people_write_them() -> None:
    assert [duration(s) for s in (5, 65, 3725)] == ["5s", "1m05s", "1h02m"]


def test_rates_below_ten_keep_two_digits() -> None:  # a CPU engine's 0.47 calls/s printed as "0" before
    got = [per_second(n, s) for n, s in ((264, 560.4), (53, 10), (13_200, 5.36), (1, 0))]
    assert got == ["0.47", "5.3", "2,463", "0"]


class Gated:
    """A backend whose calls wait until `gate` opens."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        await self.gate.wait()
        return [Completion(text="{}", prompt_tokens=10, completion_tokens=5) for _ in requests]


def test_calls_count_in_flight_while_awaited_then_answered() -> None:
    meter, inner = CallMeter(), Gated()
    backend = MeteredBackend(inner, meter)
    request = ChatRequest(messages=(Message("user", "2+2?"),), max_tokens=8)

    async def go() -> tuple[int, int]:
        calls = asyncio.gather(backend.generate([request, request]), backend.generate([request]))
        await asyncio.sleep(0)
        seen = (meter.in_flight, meter.done)
        inner.gate.set()
        await calls
        return seen

    assert asyncio.run(go()) == (3, 0)
    assert (meter.in_flight, meter.done, meter.tokens) == (0, 3, 45)


def test_the_scheduler_lowers_the_call_bound_as_episodes_end(tmp_path: Path) -> None:
    import yaml

    from sweep.config.sweep import load_config
    from sweep.engines.pool import EnginePool
    from sweep.run.plan import build_plan
    from sweep.run.scheduler import run_tasks

    path = tmp_path / "bound.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "bound",
                "output_dir": str(tmp_path / "out"),
                "models": {"sim": {"engine": "simulated"}},
                "agents": [{"model": "sim", "count": 3}],
                "datasets": [{"name": "arith", "split": "test", "limit": 3}],
                "methods": ["cot", {"name": "fixed", "args": {"topology": "clique"}}],
                "rounds": 2,
                "cache": False,
            }
        )
    )
    cfg = load_config(path)
    plan = build_plan(cfg)
    seen: list[tuple[int, int]] = []
    with EnginePool(cfg, ["sim"]) as pool:
        run = run_tasks(
            plan.tasks,
            pool.agents,
            lambda *a: None,
            2,
            lambda s: seen.append((s.done, s.calls_bound)),
            calls_bound=plan.calls(),
        )
        stats = asyncio.run(run)
        answered = pool.meter.done
    assert seen[0] == (0, plan.calls()) == (0, 3 * 1 + 3 * 9)  # told at the start, before any episode ends
    assert stats.calls_bound == 0 and stats.finished_bound == plan.calls() == stats.calls == answered


@pytest.fixture
def ray_logger() -> Iterator[logging.Logger]:
    """The "ray" logger with a console handler of its own, restored afterwards."""
    log = logging.getLogger("ray")
    saved = (list(log.handlers), log.level, log.propagate)
    log.handlers = [logging.StreamHandler(io.StringIO())]
    log.setLevel(logging.INFO)
    log.propagate = False
    yield log
    for h in log.handlers:
        if h not in saved[0]:
            h.close()
    log.handlers, log.level, log.propagate = saved


def test_rays_lines_go_to_the_log_file_and_its_errors_stay_on_the_terminal(
    tmp_path: Path, ray_logger: logging.Logger
) -> None:
    console = ray_logger.handlers[0]
    assert isinstance(console, logging.StreamHandler)
    where = ray_runtime.log_to_file(tmp_path / "out" / "logs" / "ray.log")
    logging.getLogger("ray.worker").info("Started a local Ray instance.")
    logging.getLogger("ray.autoscaler").warning("Not enough CPUs")
    logging.getLogger("ray.actor").error("The actor died unexpectedly")
    again = ray_runtime.log_to_file(tmp_path / "other.log")  # a second sweep in this process moves it
    logging.getLogger("ray").info("to the second file")
    assert where == str(tmp_path / "out" / "logs" / "ray.log") and again == str(tmp_path / "other.log")
    text = (tmp_path / "out" / "logs" / "ray.log").read_text()
    assert (
        "Started a local Ray instance" in text and "Not enough CPUs" in text and "to the second" not in text
    )
    assert (tmp_path / "other.log").read_text().count("\n") == 1
    assert console.stream.getvalue() == "The actor died unexpectedly\n"
