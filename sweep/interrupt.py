"""SIGTERM stops a driver the way Ctrl-C stops `asyncio.run`: the running task is cancelled (a
`CancelledError` at its next `await`) and `KeyboardInterrupt` is raised once it has unwound.

Why not simply raise `KeyboardInterrupt` from the handler: Python runs a handler between any two
bytecodes of the main thread, so the exception can land inside `queue.Queue.put`, between a
`Condition.notify` releasing a waiter and removing it. The stale waiter then takes the next
wake-up, the writer thread (call cache, Parquet parts) sleeps on with its item queued, and the
cleanup's `join` waits forever. Seen once in 33 SIGTERMs to a simulated driver with both cores
busy (`tests/chaos/test_chaos_driver_kills.py::test_sigterm_stops_a_driver_like_ctrl_c`).

Drivers run their event loops through `run` and install `on_sigterm` for SIGTERM. Outside `run`
(start-up, the final flush, MLflow logging) the handler raises at once, as Ctrl-C does there; a
second SIGTERM always raises at once."""

from __future__ import annotations

import asyncio
import queue
import signal
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
Q = TypeVar("Q")
POLL_S = 0.5  # a writer thread's longest sleep on an empty queue


class _Now:
    task: asyncio.Task[Any] | None = None  # the task `run` runs now (runs don't nest)
    stopping = False  # SIGTERM cancelled it: its CancelledError means "stop"


_now = _Now()


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`; a SIGTERM while it runs cancels `main` and raises `KeyboardInterrupt`."""

    async def tracked() -> T:
        _now.task = asyncio.current_task()
        try:
            return await main
        finally:
            _now.task = None

    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(main)  # signals reach the main thread only
    try:
        result = asyncio.run(tracked())
    except asyncio.CancelledError:
        if not _now.stopping:
            raise
    finally:
        stopping, _now.stopping = _now.stopping, False
    if stopping:  # cancelled, or it finished anyway as the signal came: SIGTERM still means stop
        raise KeyboardInterrupt
    return result


def on_sigterm(signum: int, frame: Any) -> None:
    """The SIGTERM handler: inside `run`, cancel its task (first signal); else raise `KeyboardInterrupt`."""
    task = _now.task
    if task is not None and not _now.stopping and not task.done():
        _now.stopping = True
        task.cancel()
        task.get_loop().call_soon_threadsafe(lambda: None)  # wake a loop asleep in select()
        return
    raise KeyboardInterrupt


def next_item(q: queue.Queue[Q]) -> Q:
    """`q.get()` for a writer thread, polled: a wake-up lost to an exception raised inside `put` on
    the main thread (see above) costs `POLL_S`, not the run."""
    while True:
        try:
            return q.get(timeout=POLL_S)
        except queue.Empty:
            continue


def install() -> None:
    """Make SIGTERM stop this process as described above (main thread only)."""
    signal.signal(signal.SIGTERM, on_sigterm)
