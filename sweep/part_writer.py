"""A thread that appends result parts to a store, so that compressing and fsyncing Parquet files
happens off the event loop (`BufferedWriter(background=True)`)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence
from typing import Any, Protocol


class Appender(Protocol):
    def append(self, episodes: list[Any], turns: list[Any], rounds: Sequence[Any] = ()) -> None: ...

class PartWriter:
    """One thread appending parts to a store, one part queued at most (backpressure on the caller)."""

    def __init__(self, store: Appender) -> None:
        self.store = store
        self._queue: queue.Queue[tuple[list[Any], list[Any], Sequence[Any]] | None] = queue.Queue(maxsize=1)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="parquet-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            try:
                if self._error is None:
                    self.store.append(*item)
            except BaseException as e:  # noqa: BLE001 - raised on the caller's thread by `_raise`
                self._error = e
            finally:
                self._queue.task_done()
        self._queue.task_done()

    def _raise(self) -> None:
        if self._error is not None:
            raise RuntimeError(f"writing results failed: {self._error}") from self._error

    def submit(self, episodes: list[Any], turns: list[Any], rounds: Sequence[Any]) -> None:
        self._raise()
        self._queue.put((episodes, turns, rounds))

    def wait(self) -> None:
        self._queue.join()
        self._raise()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._raise()
