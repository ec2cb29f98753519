"""SIGTERM stops a driver without landing in the middle of its code: inside `sweep.interrupt.run`
the task is cancelled at an `await` and `KeyboardInterrupt` follows; the writer threads (call cache,
Parquet parts) survive a wake-up lost to an exception raised inside `Queue.put`."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.base import Completion
from sweep import interrupt
from sweep.store.cache import CallCache
from sweep.store.part_writer import PartWriter


@pytest.fixture
def sigterm() -> Iterator[None]:
    """`interrupt.on_sigterm` for SIGTERM, and SIGINT ignored as in a background job: the handler
    must not lean on asyncio's Ctrl-C handling, which is not installed then."""
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    interrupt.install()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before[0])
        signal.signal(signal.SIGINT, before[1])


def test_sigterm_inside_run_cancels_at_an_await_not_in_plain_code(sigterm: None) -> None:
    seen: list[str] = []

    async def main() -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # handled at the next bytecode boundary
        total = 0
        for i in range(300_000):  # plain code, as `Queue.put` is: an exception raised here breaks it
            total += i
        seen.append(f"plain code ran to its end ({total})")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled at the await")
            raise

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        interrupt.run(main())
    assert seen == [f"plain code ran to its end ({sum(range(300_000))})", "cancelled at the await"]
    assert time.monotonic() - started < 20  # not the 30 s sleep


def test_a_task_that_ends_anyway_still_stops(sigterm: None) -> None:
    async def main() -> str:
        os.kill(os.getpid(), signal.SIGTERM)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return "swallowed"  # a task may end normally once cancelled: SIGTERM still means stop
        return "slept"

    with pytest.raises(KeyboardInterrupt):
        interrupt.run(main())
    assert interrupt.run(asyncio.sleep(0, result="next run")) == "next run"  # nothing left behind


def test_a_second_sigterm_raises_at_once(sigterm: None) -> None:
    seen: list[str] = []

    async def main() -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("first: cancelled")
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # a cleanup that hangs: the second signal must not wait for an await
        finally:
            seen.append("second: raised in plain code")

    with pytest.raises(KeyboardInterrupt):
        interrupt.run(main())
    assert seen == ["first: cancelled", "second: raised in plain code"]


def test_sigterm_outside_run_raises_at_once(sigterm: None) -> None:
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)


def test_a_run_off_the_main_thread_is_plain_asyncio_run() -> None:
    box: list[Any] = []
    t = threading.Thread(target=lambda: box.append(interrupt.run(asyncio.sleep(0, result=7))))
    t.start()
    t.join(30)
    assert box == [7]


def lose_next_wakeup(q: Any, waiting: threading.Thread) -> None:
    """Leave `q.not_empty` as `Condition.notify` leaves it when an exception lands between its
    releasing a waiter and removing it: a stale (held) waiter first in line, which takes the next
    `notify` while the thread actually waiting sleeps on. CPython's own structures: a test of the
    failure `sweep.interrupt` describes, made deterministic."""
    deadline = time.monotonic() + 30
    while not q.not_empty._waiters and time.monotonic() < deadline:  # the thread waits in `get`
        time.sleep(0.01)
    assert q.not_empty._waiters and waiting.is_alive()
    stale = threading.Lock()
    stale.acquire()
    q.not_empty._waiters.appendleft(stale)


def finishes(fn: Any, timeout: float = 30) -> bool:
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    t.join(timeout)
    return not t.is_alive()


def test_the_cache_writer_survives_a_lost_wakeup(tmp_path: Path) -> None:
    cache = CallCache(tmp_path / "c.sqlite")
    cache.put_many([("k", Completion("text", 3, 1))])
    cache.flush()
    lose_next_wakeup(cache._queue, cache._writer)  # the wake-up lost is close()'s: its stop
    assert finishes(cache.close), "the writer slept on: close() waits forever"
    again = CallCache(tmp_path / "c.sqlite")
    assert again.get_many(["k"])["k"].text == "text"
    again.close()


def test_the_part_writer_survives_a_lost_wakeup() -> None:
    writer = PartWriter()
    ran: list[int] = []
    lose_next_wakeup(writer._queue, writer._thread)
    writer.submit(lambda: ran.append(1))
    assert finishes(writer.stop), "the writer slept on: stop() waits forever"
    assert ran == [1]
