"""The results contract: Parquet `episodes/` (one row per episode), `turns/` (one row per model call)
and `rounds/` (one row per episode round: the debate diagnostics) under an output dir, written in
atomic parts whose episodes file is the commit marker. The schemas are in `sweep.store.schema`."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from sweep.store.part_writer import BufferedWriter  # re-exported: it writes this store's parts
from sweep.store.parts import TMP_PREFIX, to_table, write_atomic
from sweep.store.repair import quarantine_part
from sweep.store.rowcheck import RowCheck
from sweep.store.schema import EPISODE_SCHEMA, ROUND_SCHEMA, TURN_SCHEMA

__all__ = ["EPISODE_SCHEMA", "ROUND_SCHEMA", "TURN_SCHEMA", "BufferedWriter", "ResultStore"]


_PART_GLOB = "part-*.parquet"
_CHECKS = (
    RowCheck(EPISODE_SCHEMA, "episode"),
    RowCheck(TURN_SCHEMA, "turn"),
    RowCheck(ROUND_SCHEMA, "round"),
)
_PART_COL = "_part"  # reader-only column: index of the part a row came from, in commit-name order


class _Quarantined(Exception):
    """A part was found unreadable and moved aside while reading: read the listing again."""


class ResultStore:
    """Parquet parts under `out_dir`. Each `append` writes `turns/<part>`, `rounds/<part>` and then
    `episodes/<part>`; the episodes part commits all three. Leftovers of a crash (turn or round parts
    without an episodes part, temp files) are ignored by readers and deleted by `recover` once older
    than `orphan_grace_s`, so that a second driver's write in progress is never taken for a crash."""

    def __init__(
        self, out_dir: Path, orphan_grace_s: float = 60.0, orphans_before: float | None = None
    ) -> None:
        self.out_dir = Path(out_dir)
        self.orphans_before = orphans_before  # leftovers older than this are a crash's, whatever their age
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
        self.check(episodes, turns, rounds)
        self.commit(self.tables(episodes, turns, rounds))

    def check(
        self,
        episodes: list[dict[str, Any]],
        turns: list[dict[str, Any]],
        rounds: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Raise on a row that `tables` would refuse, without converting anything to Arrow."""
        self._ids(episodes, turns, rounds)
        _CHECKS[0](episodes)
        _CHECKS[1](turns)
        _CHECKS[2](rounds)

    @staticmethod
    def _ids(
        episodes: list[dict[str, Any]], turns: list[dict[str, Any]], rounds: Sequence[dict[str, Any]]
    ) -> None:
        ids = [e.get("episode_id") for e in episodes]
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate episode_id within one append")
        stray = {t.get("episode_id") for t in [*turns, *rounds]} - set(ids)
        if stray:
            raise ValueError(f"rows for episodes not in this append: {sorted(map(str, stray))[:5]}")

    def tables(
        self,
        episodes: list[dict[str, Any]],
        turns: list[dict[str, Any]],
        rounds: Sequence[dict[str, Any]] = (),
    ) -> tuple[pa.Table, pa.Table, pa.Table]:
        """The (episodes, turns, rounds) tables of a part whose rows passed `check`."""
        ep_table = to_table(episodes, EPISODE_SCHEMA, "episode")
        turn_table = to_table(turns, TURN_SCHEMA, "turn")
        round_table = to_table(list(rounds), ROUND_SCHEMA, "round")
        return ep_table, turn_table, round_table

    def commit(self, tables: tuple[pa.Table, pa.Table, pa.Table]) -> None:
        """Write the `tables` of one part; on a failure, the part's files written so far are removed."""
        ep_table, turn_table, round_table = tables
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        name = f"part-{stamp}-{uuid.uuid4().hex[:8]}.parquet"
        try:
            write_atomic(turn_table, self.turns_dir / name)
            write_atomic(round_table, self.rounds_dir / name)
            write_atomic(ep_table, self.episodes_dir / name)  # the commit point
        except BaseException:
            if not (self.episodes_dir / name).exists():  # not committed: its other files are orphans
                for d in (self.turns_dir, self.rounds_dir):
                    with contextlib.suppress(OSError):
                        (d / name).unlink()
            raise

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
        if self.orphans_before is not None:
            cutoff = max(cutoff, self.orphans_before)
        children = (self.turns_dir, self.rounds_dir)
        candidates = [p for d in children for p in d.glob(_PART_GLOB) if p.name not in committed]
        for d in (*children, self.episodes_dir):
            candidates += list(d.glob(f"{TMP_PREFIX}*"))
        removed = []
        for path in candidates:
            with contextlib.suppress(FileNotFoundError):  # another driver may have removed it already
                if path.stat().st_mtime <= cutoff:
                    path.unlink()
                    removed.append(path)
        return removed

    @staticmethod
    def peek_ids(out_dir: Path) -> set[str]:
        """Ids of the episodes committed in `out_dir`, read without changing anything there (no
        recovery, no quarantine: an unreadable part's episodes are left out) — for a dry run."""
        ids: set[str] = set()
        for path in sorted((Path(out_dir) / "episodes").glob(_PART_GLOB)):
            try:
                ids.update(_ids_in(path))
            except (OSError, pa.ArrowException):
                continue
        return ids

    def done_ids(self) -> set[str]:
        """Ids of every committed episode (after cleaning up crash leftovers). A part that cannot be
        read is quarantined (`sweep.store.repair`), so its episodes count as not done and run again."""
        self.recover()
        ids: set[str] = set()
        for name in self._committed():
            try:
                col = _ids_in(self.episodes_dir / name)
                for d in (self.turns_dir, self.rounds_dir):
                    if (d / name).exists():
                        pq.read_metadata(d / name)
            except (OSError, pa.ArrowException) as e:
                quarantine_part(self.out_dir, name, e)
                continue
            ids.update(col)
        return ids

    def _read(self, directory: Path, names: list[str], schema: pa.Schema) -> pa.Table:
        tables = []
        for i, name in enumerate(names):
            path = directory / name
            if not path.exists():
                continue
            try:
                table = pq.read_table(path, schema=schema)
            except (OSError, pa.ArrowException) as e:
                quarantine_part(self.out_dir, name, e)
                raise _Quarantined from None
            tables.append(table.append_column(_PART_COL, pa.array([i] * table.num_rows, pa.int32())))
        if not tables:
            return schema.append(pa.field(_PART_COL, pa.int32())).empty_table()
        return pa.concat_tables(tables)

    def _read_with(self, directory: Path, schema: pa.Schema) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The kept episode rows and the rows of `directory` (turns or rounds) that belong to them."""
        # One listing serves both reads: every committed episodes part already has its other parts
        # (parts committed before `rounds/` existed have none, and contribute no round rows).
        while True:  # a part found unreadable is quarantined, and the listing is read again without it
            names = self._committed()
            try:
                ep_table = self._read(self.episodes_dir, names, EPISODE_SCHEMA)
                row_table = self._read(directory, names, schema)
                break
            except _Quarantined:
                continue
        episodes = pl.from_arrow(ep_table)
        assert isinstance(episodes, pl.DataFrame)
        episodes = episodes.unique(subset="episode_id", keep="first", maintain_order=True)
        rows = pl.from_arrow(row_table)
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


def _ids_in(path: Path) -> list[str]:
    """The episode ids of one part. `ParquetFile`, not `read_table`: `read_table` goes through the
    dataset layer, which imports pandas (~0.5 s at a driver's start) and reads a column at half the speed."""
    ids: list[str] = pq.ParquetFile(path).read(columns=["episode_id"]).column("episode_id").to_pylist()
    return ids
