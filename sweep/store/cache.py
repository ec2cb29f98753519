"""The LLM-call cache: content-addressed by (model, rendered messages, sampling params, seed, output
schema), stored in the output dir, so a rerun — and methods that share round 0 under the same seed —
never pay twice. Lives on the driver, which is its only writer.

Writes leave the event loop: a writer thread commits them in batches (one transaction each,
`synchronous=NORMAL` in WAL mode: durable against a crash of the process, and at worst the last
batches lost on a power cut — a cache, so they are just asked again), its WAL checkpointed every
`WAL_PAGES` (22.9 against 23.8-25.8 us of writer CPU a row over 130k puts; the WAL grows to ~40 MB).
Until a row is committed it is answered from memory, so it is never asked twice.

Reads skip sqlite for keys it cannot hold: a bit set of every key put here or committed by anyone (read
from the table at least every `SYNC_S` while lookups come), so a fresh sweep's misses — most of its
lookups — cost no query. Another driver's row committed less than `SYNC_S` ago may be missed, and the
call asked again: the same race as a row not yet committed, at worst a second engine call."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import math
import queue
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from actors.base import Backend, ChatRequest, Completion
from sweep.interrupt import next_item
from sweep.store.cache_keys import KeyMaker
from sweep.store.sanitize import clean_completion

_FIELDS = [f.name for f in dataclasses.fields(Completion)]
LOCK_TIMEOUT_S = 30.0  # how long sqlite waits for another connection's lock before it gives up
_SEEN_BITS = 1 << 26  # 8 MiB: ~2 % of lookups still query at a million keys
SYNC_S = 1.0  # how often lookups read the keys others committed
WAL_PAGES = 10_000  # the writer's WAL checkpoint in 4 KiB pages (sqlite's: 1,000); see the docstring


_ROWS_PER_INSERT = 128  # rows per INSERT statement: 256 parameters, under every sqlite's limit (999)


@functools.lru_cache(maxsize=_ROWS_PER_INSERT)
def _insert_sql(rows: int) -> str:
    return "INSERT OR IGNORE INTO calls VALUES " + ",".join(["(?, ?)"] * rows)


def _insert(db: sqlite3.Connection, rows: Sequence[tuple[str, str]]) -> None:
    """INSERT OR IGNORE `rows`, many per statement. `executemany` steps once per row and releases
    the GIL at every step: beside a busy event loop each row then waited for the GIL to come back;
    one statement per 128 rows releases it once per statement (`bench/gil_release.py`)."""
    for i in range(0, len(rows), _ROWS_PER_INSERT):
        chunk = rows[i : i + _ROWS_PER_INSERT]
        db.execute(_insert_sql(len(chunk)), [v for row in chunk for v in row])


def _dump(c: Completion) -> str:
    return json.dumps({n: getattr(c, n) for n in _FIELDS})  # `asdict` without its deep copy


def _load(text: str) -> Completion:
    return Completion(**json.loads(text))


class CacheBusy(RuntimeError):
    """Another process held the cache file's lock for longer than `LOCK_TIMEOUT_S`."""


@contextlib.contextmanager
def _named(path: Path) -> Iterator[None]:
    """sqlite's bare "database is locked" raised as `CacheBusy`, naming the file, who may hold it, the fix."""
    try:
        yield
    except sqlite3.OperationalError as e:
        if (held := busy(path, e)) is None:
            raise
        raise held from e


def busy(path: Path, e: BaseException) -> CacheBusy | None:
    if not isinstance(e, sqlite3.OperationalError) or "locked" not in str(e) and "busy" not in str(e):
        return None
    return CacheBusy(
        f"call cache {path}: {e} (waited {LOCK_TIMEOUT_S:g} s): another driver on this output dir (its owner "
        "or a --join worker) or another program holds it; rerun once that one is done (stored episodes are "
        "kept), or set `cache: false`"
    )


class CallCache:
    """A sqlite table key -> completion JSON. Reads on the caller's thread; writes queued to one
    writer thread. `flush()` waits until everything put is committed; `close()` flushes."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        with _named(path):
            self._db = _connect(path)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, completion TEXT NOT NULL)"
            )
        self.hits = 0
        self.misses = 0
        self._unwritten: dict[str, Completion] = {}  # put, not committed yet: answered from here
        # Keys the table may hold (Python's str hash: a process's own, like this set): those put here,
        # and those committed up to rowid `_synced_rowid`, read at `_synced_at`.
        self._seen = bytearray(_SEEN_BITS >> 3)
        self._synced_rowid, self._synced_at = 0, -math.inf
        # Items: a list of rows, an Event to set once everything before it is committed, or None: stop.
        self._queue: queue.Queue[list[tuple[str, Completion]] | threading.Event | None] = queue.Queue()
        self._error: BaseException | None = None
        self._writer = threading.Thread(target=self._write_loop, name="call-cache-writer", daemon=True)
        self._writer.start()

    def get_many(self, keys: Sequence[str]) -> dict[str, Completion]:
        if not keys:
            return {}
        found = {k: c for k in keys if (c := self._unwritten.get(k)) is not None}
        rest = [k for k in keys if k not in found]
        if rest and time.monotonic() - self._synced_at > SYNC_S:
            self._sync()
        rest = [k for k in rest if self._may_hold(k)]
        if rest:
            marks = ",".join("?" * len(rest))
            with _named(self.path):
                rows = self._db.execute(
                    f"SELECT key, completion FROM calls WHERE key IN ({marks})", rest
                ).fetchall()
            # Sanitised again: a cache written by an older version may hold what no writer accepts now.
            found.update((k, clean_completion(_load(v))) for k, v in rows)
        return found

    def put_many(self, items: Sequence[tuple[str, Completion]]) -> None:
        """Queue rows for the writer thread; never waits for the disk."""
        self._raise_if_failed()
        if items:
            self._unwritten.update(items)
            for k, _ in items:
                self._mark(k)
            self._queue.put(list(items))

    def _mark(self, key: str) -> None:
        bit = hash(key) % _SEEN_BITS
        self._seen[bit >> 3] |= 1 << (bit & 7)

    def _may_hold(self, key: str) -> bool:
        bit = hash(key) % _SEEN_BITS
        return bool(self._seen[bit >> 3] & (1 << (bit & 7)))

    def _sync(self) -> None:
        """Mark the keys committed since the last sync, by any connection (rowids only grow)."""
        with _named(self.path):  # streamed: a resumed sweep's first sync reads every key once
            for rowid, key in self._db.execute(
                "SELECT rowid, key FROM calls WHERE rowid > ? ORDER BY rowid", (self._synced_rowid,)
            ):
                self._mark(key)
                self._synced_rowid = rowid
        self._synced_at = time.monotonic()

    def _write_loop(self) -> None:
        # Its own connection in the default isolation level: `with db:` is one transaction.
        db = _connect(self.path, isolation_level="DEFERRED")
        db.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
        try:
            stop = False
            while not stop:
                items = [next_item(self._queue)]  # polled: see sweep.interrupt
                while not self._queue.empty():  # whatever queued meanwhile goes in the same commit
                    items.append(self._queue.get_nowait())
                rows = [row for item in items if isinstance(item, list) for row in item]
                if rows:
                    with db:
                        _insert(db, [(k, _dump(c)) for k, c in rows])
                    for k, _ in rows:
                        self._unwritten.pop(k, None)
                stop = any(item is None for item in items)
                for item in items:
                    if isinstance(item, threading.Event):
                        item.set()
        except BaseException as e:  # noqa: BLE001 - reported to the driver by the next put or flush
            self._error = e
        finally:
            db.close()
            while not self._queue.empty():  # release flushes that can no longer be served
                item = self._queue.get_nowait()
                if isinstance(item, threading.Event):
                    item.set()

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            error = busy(self.path, self._error) or RuntimeError(
                f"call cache {self.path}: its writer failed: {self._error}"
            )
            raise error from self._error

    def flush(self) -> None:
        """Wait until every row put so far is committed."""
        if self._writer.is_alive():
            done = threading.Event()
            self._queue.put(done)
            while not done.wait(timeout=1.0) and self._writer.is_alive():
                pass
        self._raise_if_failed()

    def __len__(self) -> int:
        self.flush()
        return int(self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def close(self) -> None:
        """Commit what is queued, stop the writer, close the file."""
        if self._writer.is_alive():
            self._queue.put(None)
            self._writer.join()
        self._db.close()
        self._raise_if_failed()

    def __enter__(self) -> CallCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CachedBackend:
    """A `Backend` that answers from the cache and sends only the misses, as one batch, to `inner`.

    Requests already in flight are joined, not re-sent: episodes run concurrently, so methods that
    share round 0 ask for the same calls at the same moment."""

    def __init__(self, inner: Backend, cache: CallCache, model_identity: Mapping[str, Any]) -> None:
        self.inner, self.cache, self.identity = inner, cache, dict(model_identity)
        self._key = KeyMaker(self.identity)
        self._pending: dict[str, asyncio.Future[Completion]] = {}

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        keys = [self._key(r) for r in requests]
        found = self.cache.get_many([k for k in keys if k not in self._pending])
        joined = {k: self._pending[k] for k in keys if k in self._pending}
        misses = [i for i, k in enumerate(keys) if k not in found and k not in joined]
        misses = [i for n, i in enumerate(misses) if keys[i] not in {keys[j] for j in misses[:n]}]
        owned = {keys[i]: asyncio.get_running_loop().create_future() for i in misses}
        self._pending.update(owned)
        try:
            fresh = await self.inner.generate([requests[i] for i in misses]) if misses else []
            if len(fresh) != len(misses):
                raise RuntimeError(f"engine returned {len(fresh)} completions for {len(misses)} requests")
            self.cache.put_many([(keys[i], c) for i, c in zip(misses, fresh, strict=True)])
            for i, c in zip(misses, fresh, strict=True):
                owned[keys[i]].set_result(c)
        except BaseException as e:
            for f in owned.values():
                if not f.done():
                    f.set_exception(e)
                    f.exception()  # marks it retrieved: a joiner may not exist
            raise
        finally:
            for k in owned:
                self._pending.pop(k, None)
        waited = {k: await f for k, f in joined.items()}
        self.cache.misses += len(misses)
        self.cache.hits += len(requests) - len(misses)
        return [self._answer(k, owned, found, waited) for k in keys]

    @staticmethod
    def _answer(
        key: str,
        owned: dict[str, asyncio.Future[Completion]],
        found: dict[str, Completion],
        waited: dict[str, Completion],
    ) -> Completion:
        if key in owned:
            return owned[key].result()
        hit = found.get(key) or waited[key]
        return dataclasses.replace(hit, cache_hit=True, latency_s=0.0)  # the original call's counts


def _connect(path: Path, isolation_level: Literal["DEFERRED"] | None = None) -> sqlite3.Connection:
    db = sqlite3.connect(
        path, isolation_level=isolation_level, check_same_thread=False, timeout=LOCK_TIMEOUT_S
    )
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db
