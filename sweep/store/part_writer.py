"""`BufferedWriter`: finished episodes buffered and written to a `ResultStore` in parts; and
`PartWriter`, the thread that writes them for a `BufferedWriter(background=True)`, so that
compressing and fsyncing Parquet files happens off the event loop."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Protocol

from sweep.interrupt import next_item
from sweep.store.repair import Entry, PartStore, Tables, commit_entries, part_tables


class Store(PartStore, Protocol):
    """What a `BufferedWriter` needs of a `sweep.store.results.ResultStore` (named here: results imports us)."""

    def check(
        self,
        episodes: list[dict[str, Any]],
        turns: list[dict[str, Any]],
        rounds: Sequence[dict[str, Any]] = (),
    ) -> None: ...


Job = Callable[[], None]


class PartWriter:
    """One thread running part-writing jobs in order, one job queued at most (backpressure on the
    caller). An error a job raises (a full disk: the writer records the other failures itself) is
    raised again, as it is, on the caller's thread by the next `submit`, `wait` or `stop`; the jobs
    after it are dropped, as a foreground writer would have stopped there too."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Job | None] = queue.Queue(maxsize=1)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="parquet-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (job := next_item(self._queue)) is not None:  # polled: see sweep.interrupt
            try:
                if self._error is None:
                    job()
            except BaseException as e:  # noqa: BLE001 - raised on the caller's thread by `_raise`
                self._error = e
            finally:
                self._queue.task_done()
        self._queue.task_done()

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def submit(self, job: Job) -> None:
        self._raise()
        self._queue.put(job)

    def wait(self) -> None:
        self._queue.join()
        self._raise()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._raise()


class BufferedWriter:
    """Buffers finished episodes and appends them to a `ResultStore` as one part once `max_episodes`
    are waiting, or `max_turns` turn rows (None: no such bound), or the oldest has waited `max_seconds`
    (checked on `add` and `flush_if_due`).

    Each episode's rows are checked when added (`sweep.store.rowcheck`): a bad episode is not buffered; it lands in `failed`
    (id and reason) and `add` returns False. A part that fails to write is retried one episode per
    part, so a write failure costs only the episode that causes it; a full disk raises
    `sweep.store.repair.DiskFull` once whatever fits is written.

    `background=True`: parts are written by one worker thread (compression and fsync off the
    caller's thread), at most one part queued behind the one being written; `flush` and `close`
    wait for them, and a full disk is raised by the next `add`, `flush` or `close`."""

    def __init__(
        self,
        store: Store,
        max_episodes: int = 64,
        max_seconds: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        background: bool = False,
        max_turns: int | None = None,
    ) -> None:
        if max_episodes < 1 or (max_turns is not None and max_turns < 1):
            raise ValueError("max_episodes and max_turns must be >= 1")
        self._worker = PartWriter() if background else None
        self.store = store
        self.max_episodes = max_episodes
        self.max_seconds = max_seconds
        self.max_turns = max_turns
        self._turns = 0  # turn rows buffered
        self._clock = clock
        self._entries: list[Entry] = []
        self.failed: list[str] = []  # "episode_id: reason" of every episode that could not be stored
        self.written = 0  # episodes committed by this writer
        self._since: float | None = None
        self._closed = False
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def add(
        self,
        episode_row: dict[str, Any],
        turn_rows: list[dict[str, Any]],
        round_rows: Sequence[dict[str, Any]] = (),
    ) -> bool:
        """Buffer one finished episode with its turns and rounds; flush if a bound is hit. False when
        its rows cannot be stored (the reason is in `failed`)."""
        eid = str(episode_row.get("episode_id"))
        try:
            turns, rounds = list(turn_rows), list(round_rows)
            self.store.check([episode_row], turns, rounds)
        except Exception as e:  # noqa: BLE001 - any bad row: this episode fails, the others go on
            self.failed.append(f"{eid}: not stored: {type(e).__name__}: {str(e)[:300]}")
            return False
        with self._lock:
            if self._closed:
                raise RuntimeError("BufferedWriter is closed")
            if self._since is None:
                self._since = self._clock()
            self._entries.append(Entry(eid, episode_row, turns, rounds))
            self._turns += len(turns)
            full = self.max_turns is not None and self._turns >= self.max_turns
            if full or len(self._entries) >= self.max_episodes or self._due():
                self._flush()
        return True

    def _due(self) -> bool:
        return self._since is not None and self._clock() - self._since >= self.max_seconds

    def flush_if_due(self) -> bool:
        """Flush when the oldest buffered episode has waited `max_seconds`; True if it flushed."""
        with self._lock:
            if self._entries and self._due():
                self._flush()
                return True
            return False

    def flush(self) -> None:
        """Write everything buffered as one part (and wait for the parts being written)."""
        with self._lock:
            self._flush()
            if self._worker is not None:
                self._worker.wait()

    def _flush(self) -> None:
        entries, self._entries, self._since, self._turns = self._entries, [], None, 0
        if entries:
            # Cleared first: whatever happens below, no episode is written twice by a later flush.
            if self._worker is not None:
                # Rows become Arrow tables here, on the caller's thread: converting holds the GIL
                # throughout, and in the thread it fought the event loop for it (measured: slower
                # than writing in the foreground). The thread compresses and writes, GIL released.
                tables = part_tables(self.store, entries)
                self._worker.submit(lambda: self._commit(entries, tables))
            else:
                self._commit(entries)

    def _commit(self, entries: list[Entry], tables: Tables | None = None) -> None:
        self.written += commit_entries(self.store, entries, self.failed, tables)

    def close(self) -> None:
        """Flush and refuse further rows."""
        with self._lock:
            if not self._closed:
                self._closed = True
                try:
                    self._flush()
                finally:
                    if self._worker is not None:
                        self._worker.stop()

    def __enter__(self) -> BufferedWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # Buffered rows are whole finished episodes, so they are worth keeping even when the body raised.
        self.close()
