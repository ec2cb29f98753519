"""The results contract: Parquet `episodes/` (one row per episode), `turns/` (one row per model call)
and `rounds/` (one row per episode round: the debate diagnostics) under an output dir, written in
atomic parts whose episodes file is the commit marker. The schemas are in `sweep.schema`."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from sweep.part_writer import PartWriter
from sweep.schema import EPISODE_SCHEMA, ROUND_SCHEMA, TURN_SCHEMA

__all__ = ["EPISODE_SCHEMA", "ROUND_SCHEMA", "TURN_SCHEMA", "BufferedWriter", "ResultStore"]


_PART_GLOB = "part-*.parquet"
_TMP_PREFIX = ".tmp-"
_PART_COL = "_part"  # reader-only column: index of the part a row came from, in commit-name order


def _to_table(rows: list[dict[str, Any]], schema: pa.Schema, what: str) -> pa.Table:
    """Rows as a table of `schema`; unknown keys and nulls in non-nullable columns are errors, since
    pyarrow would silently drop the former and accept the latter."""
    names = set(schema.names)
    for row in rows:
        unknown = row.keys() - names
        if unknown:
            raise ValueError(f"{what} row has unknown columns {sorted(unknown)}")
    table = pa.Table.from_pylist(rows, schema=schema)
    for field in schema:
        if not field.nullable and table.column(field.name).null_count:
            raise ValueError(f"{what} column {field.name!r} is missing or null in some row")
    return table


def _write_atomic(table: pa.Table, path: Path) -> None:
    """Write to a hidden temp file in the same dir, fsync, then rename over `path`: readers see the
    whole part or nothing."""
    tmp = path.with_name(f"{_TMP_PREFIX}{path.name}")
    with open(tmp, "wb") as fh:
        pq.write_table(table, fh, compression="zstd")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    # The rename itself must reach the disk before the next step counts on it.
    with contextlib.suppress(OSError):
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class ResultStore:
    """Parquet parts under `out_dir`. Each `append` writes `turns/<part>`, `rounds/<part>` and then
    `episodes/<part>`; the episodes part commits all three. Leftovers of a crash (turn or round parts
    without an episodes part, temp files) are ignored by readers and deleted by `recover` once older
    than `orphan_grace_s`, so that a second driver's write in progress is never taken for a crash."""

    def __init__(self, out_dir: Path, orphan_grace_s: float = 60.0) -> None:
        self.out_dir = Path(out_dir)
        self.episodes_dir = self.out_dir / "episodes"
        self.turns_dir = self.out_dir / "turns"
        self.rounds_dir = self.out_dir / "rounds"
        self.orphan_grace_s = orphan_grace_s
        self.episodes_dir.mkdir(parents=True, exist_ok=True)
        self.turns_dir.mkdir(parents=True, exist_ok=True)
        self.rounds_dir.mkdir(parents=True, exist_ok=True)

    def append(
        self,
        episodes: list[dict[str, Any]],
        turns: list[dict[str, Any]],
        rounds: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Write one part holding `episodes`, their `turns` and their `rounds` (validated first)."""
        if not episodes:
            if turns or rounds:
                raise ValueError("turn or round rows given without their episodes")
            return
        ids = [e.get("episode_id") for e in episodes]
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate episode_id within one append")
        stray = {t.get("episode_id") for t in [*turns, *rounds]} - set(ids)
        if stray:
            raise ValueError(f"rows for episodes not in this append: {sorted(map(str, stray))[:5]}")
        ep_table = _to_table(episodes, EPISODE_SCHEMA, "episode")
        turn_table = _to_table(turns, TURN_SCHEMA, "turn")
        round_table = _to_table(list(rounds), ROUND_SCHEMA, "round")
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        name = f"part-{stamp}-{uuid.uuid4().hex[:8]}.parquet"
        _write_atomic(turn_table, self.turns_dir / name)
        _write_atomic(round_table, self.rounds_dir / name)
        _write_atomic(ep_table, self.episodes_dir / name)  # the commit point

    def _committed(self) -> list[str]:
        """Committed part names, oldest first (names start with a UTC timestamp)."""
        return sorted(p.name for p in self.episodes_dir.glob(_PART_GLOB))

    def part_names(self) -> list[str]:
        """Committed part names, oldest first: the same name in `episodes/`, `turns/`, `rounds/`."""
        return self._committed()

    def recover(self) -> list[Path]:
        """Delete orphan turn and round parts and temp files older than the grace period; returns what
        was deleted."""
        committed = set(self._committed())
        cutoff = time.time() - self.orphan_grace_s
        children = (self.turns_dir, self.rounds_dir)
        candidates = [p for d in children for p in d.glob(_PART_GLOB) if p.name not in committed]
        for d in (*children, self.episodes_dir):
            candidates += list(d.glob(f"{_TMP_PREFIX}*"))
        removed = []
        for path in candidates:
            with contextlib.suppress(FileNotFoundError):  # another driver may have removed it already
                if path.stat().st_mtime <= cutoff:
                    path.unlink()
                    removed.append(path)
        return removed

    def done_ids(self) -> set[str]:
        """Ids of every committed episode (after cleaning up crash leftovers)."""
        self.recover()
        ids: set[str] = set()
        for name in self._committed():
            col = pq.read_table(self.episodes_dir / name, columns=["episode_id"]).column("episode_id")
            ids.update(col.to_pylist())
        return ids

    def _read(self, directory: Path, names: list[str], schema: pa.Schema) -> pa.Table:
        tables = []
        for i, name in enumerate(names):
            path = directory / name
            if not path.exists():
                continue
            table = pq.read_table(path, schema=schema)
            tables.append(table.append_column(_PART_COL, pa.array([i] * table.num_rows, pa.int32())))
        if not tables:
            return schema.append(pa.field(_PART_COL, pa.int32())).empty_table()
        return pa.concat_tables(tables)

    def _read_with(self, directory: Path, schema: pa.Schema) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The kept episode rows and the rows of `directory` (turns or rounds) that belong to them."""
        # One listing serves both reads: every committed episodes part already has its other parts
        # (parts committed before `rounds/` existed have none, and contribute no round rows).
        names = self._committed()
        episodes = pl.from_arrow(self._read(self.episodes_dir, names, EPISODE_SCHEMA))
        assert isinstance(episodes, pl.DataFrame)
        episodes = episodes.unique(subset="episode_id", keep="first", maintain_order=True)
        rows = pl.from_arrow(self._read(directory, names, schema))
        assert isinstance(rows, pl.DataFrame)
        # Rows count only when they come from the same part as the episode row that was kept.
        rows = rows.join(episodes.select("episode_id", _PART_COL), on=["episode_id", _PART_COL], how="semi")
        return episodes.drop(_PART_COL), rows.drop(_PART_COL)

    def episodes(self, columns: Sequence[str] | None = None) -> pl.DataFrame:
        """All committed episode rows, one per episode_id (the earliest part wins); only `columns`
        (plus `episode_id`) when given. Reads no turns."""
        names = self._committed()
        schema = EPISODE_SCHEMA
        if columns is not None:
            keep = ["episode_id", *(c for c in columns if c != "episode_id")]
            schema = pa.schema([EPISODE_SCHEMA.field(c) for c in keep])
        episodes = pl.from_arrow(self._read(self.episodes_dir, names, schema))
        assert isinstance(episodes, pl.DataFrame)
        return episodes.unique(subset="episode_id", keep="first", maintain_order=True).drop(_PART_COL)

    def turns(self) -> pl.DataFrame:
        """The turn rows of the episode rows `episodes()` returns."""
        return self._read_with(self.turns_dir, TURN_SCHEMA)[1]

    def rounds(self) -> pl.DataFrame:
        """The per-round diagnostic rows of the episode rows `episodes()` returns."""
        return self._read_with(self.rounds_dir, ROUND_SCHEMA)[1]


class BufferedWriter:
    """Buffers finished episodes and appends them to a `ResultStore` as one part once `max_episodes`
    are waiting or the oldest has waited `max_seconds` (checked on `add` and `flush_if_due`).

    `background=True`: parts are written by one worker thread (compression and fsync off the
    caller's thread), at most one part queued behind the one being written; `flush` and `close`
    wait for them, and a failed write is raised by the next `add`, `flush` or `close`."""

    def __init__(
        self,
        store: ResultStore,
        max_episodes: int = 64,
        max_seconds: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        background: bool = False,
    ) -> None:
        if max_episodes < 1:
            raise ValueError("max_episodes must be >= 1")
        self._worker = PartWriter(store) if background else None
        self.store = store
        self.max_episodes = max_episodes
        self.max_seconds = max_seconds
        self._clock = clock
        self._episodes: list[dict[str, Any]] = []
        self._turns: list[dict[str, Any]] = []
        self._rounds: list[dict[str, Any]] = []
        self._since: float | None = None
        self._closed = False
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._episodes)

    def add(
        self,
        episode_row: dict[str, Any],
        turn_rows: list[dict[str, Any]],
        round_rows: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Buffer one finished episode with its turns and rounds; flush if a bound is hit."""
        with self._lock:
            if self._closed:
                raise RuntimeError("BufferedWriter is closed")
            if self._since is None:
                self._since = self._clock()
            self._episodes.append(episode_row)
            self._turns.extend(turn_rows)
            self._rounds.extend(round_rows)
            if len(self._episodes) >= self.max_episodes or self._due():
                self._flush()

    def _due(self) -> bool:
        return self._since is not None and self._clock() - self._since >= self.max_seconds

    def flush_if_due(self) -> bool:
        """Flush when the oldest buffered episode has waited `max_seconds`; True if it flushed."""
        with self._lock:
            if self._episodes and self._due():
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
        if self._episodes:
            if self._worker is not None:
                self._worker.submit(self._episodes, self._turns, self._rounds)
            else:
                self.store.append(self._episodes, self._turns, self._rounds)
        # Cleared only after a successful append (or hand-over): a failed write keeps the rows for the next try.
        self._episodes, self._turns, self._rounds, self._since = [], [], [], None

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

