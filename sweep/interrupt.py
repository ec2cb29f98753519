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
import signal
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_running: list[asyncio.Task[Any]] = []  # the task `run` is running now (at most one: runs don't nest)
_cancelled: list[asyncio.Task[Any]] = []  # tasks SIGTERM cancelled: their CancelledError means "stop"


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`; a SIGTERM while it runs cancels `main` and raises `KeyboardInterrupt`."""

    async def tracked() -> T:
        task = asyncio.current_task()
        assert task is not None
        _running.append(task)
        try:
            return await main
        finally:
            _running.remove(task)

    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(main)  # signals reach the main thread only
    try:
        result = asyncio.run(tracked())
    except asyncio.CancelledError:
        if _cancelled:
            raise KeyboardInterrupt from None
        raise
    finally:
        stopped = bool(_cancelled)
        _cancelled.clear()
    if stopped:  # the task finished anyway (the signal came as it ended): SIGTERM still means stop
        raise KeyboardInterrupt
    return result


def on_sigterm(signum: int, frame: Any) -> None:
    """The SIGTERM handler: inside `run`, cancel its task (first signal); else raise `KeyboardInterrupt`."""
    if _running and not _cancelled and not _running[-1].done():
        task = _running[-1]
        _cancelled.append(task)
        task.cancel()
        task.get_loop().call_soon_threadsafe(lambda: None)  # wake a loop asleep in select()
        return
    raise KeyboardInterrupt


def install() -> None:
    """Make SIGTERM stop this process as described above (main thread only)."""
    signal.signal(signal.SIGTERM, on_sigterm)
