"""Self-repair of an output dir: a write failure costs one episode, a full disk stops after writing
what fits and leaves no temp files, unreadable parts are quarantined (their episodes run again), and
a corrupt call cache is set aside."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import sweep.store.results
from sweep.store.cache import CallCache
from sweep.store.repair import QUARANTINE, DiskFull, check_cache, is_disk_full
from sweep.store.results import BufferedWriter, ResultStore
from tests.test_results import episode, rounds_for, turns_for


def fill(writer: BufferedWriter, ids: list[str]) -> None:
    for eid in ids:
        assert writer.add(episode(eid), turns_for(eid), rounds_for(eid))


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob(".tmp-*"))


class FailingWrites:
    """`write_atomic` that raises on the episodes file of a part holding `bad_episode`, or with ENOSPC
    for an episodes part of more rows than `room` episodes (the room left)."""

    def __init__(self, bad_episode: str | None = None, room: int | None = None) -> None:
        self.bad, self.room, self.real = bad_episode, room, sweep.store.results.write_atomic

    def __call__(self, table: pa.Table, path: Path) -> None:
        if self.room is not None and path.parent.name == "episodes" and table.num_rows > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        # The commit marker (the episodes file) fails, after the part's turns and rounds were written.
        marker = path.parent.name == "episodes"
        if self.bad is not None and marker and self.bad in table.column("episode_id").to_pylist():
            raise OSError(errno.EIO, "Input/output error")
        self.real(table, path)
        if self.room is not None and path.parent.name == "episodes":
            self.room -= table.num_rows


def test_a_failing_part_costs_only_the_episode_that_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweep.store.results, "write_atomic", FailingWrites(bad_episode="e2"))
    store = ResultStore(tmp_path)
    writer = BufferedWriter(store, max_episodes=4)
    fill(writer, ["e0", "e1", "e2", "e3"])  # one part of four fails: retried one episode per part
    assert store.done_ids() == {"e0", "e1", "e3"}
    assert writer.failed == ["e2: not stored: OSError: [Errno 5] Input/output error"]
    assert writer.written == 3 and len(writer) == 0
    assert store.turns().height == 6 and store.rounds()["episode_id"].n_unique() == 3
    parts = lambda d: sorted(p.name for p in (tmp_path / d).iterdir())  # noqa: E731
    assert parts("turns") == parts("rounds") == parts("episodes")  # the failed part left no orphans


def test_a_full_disk_writes_what_fits_then_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweep.store.results, "write_atomic", FailingWrites(room=2))
    store = ResultStore(tmp_path)
    writer = BufferedWriter(store, max_episodes=5)
    with pytest.raises(
        DiskFull, match="2 episode.s. of the last batch written, 3 finished episode.s. not written"
    ):
        fill(writer, [f"e{i}" for i in range(5)])
    assert store.done_ids() == {"e0", "e1"} and len(writer) == 0
    writer.close()  # nothing left to write: the lost episodes simply run again next time
    assert store.recover() == [] and store.turns()["episode_id"].unique().sort().to_list() == ["e0", "e1"]


def test_write_atomic_removes_its_temp_file_when_the_write_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sweep.store.parts

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sweep.store.parts.pq, "write_table", full)
    with pytest.raises(OSError) as e:
        ResultStore(tmp_path).append([episode("e1")], turns_for("e1"))
    assert is_disk_full(e.value) and leftovers(tmp_path) == []
    assert list((tmp_path / "turns").iterdir()) == []


def test_an_unreadable_part_is_quarantined_and_its_episodes_run_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = ResultStore(tmp_path)
    store.append([episode("e1")], turns_for("e1"))
    store.append([episode("e2")], turns_for("e2"))
    broken = sorted((tmp_path / "episodes").glob("part-*.parquet"))[1]
    broken.write_bytes(broken.read_bytes()[: broken.stat().st_size // 2])  # truncated by a crash or a disk
    assert store.done_ids() == {"e1"}
    warning = capsys.readouterr().err
    assert f"unreadable results part {broken}" in warning and "its episodes will run again" in warning
    moved = list((tmp_path / QUARANTINE).rglob("*.parquet"))
    assert sorted(p.name for p in moved) == ["episodes.parquet", "rounds.parquet", "turns.parquet"]
    assert store.episodes()["episode_id"].to_list() == ["e1"] and store.turns().height == 2


def test_an_unreadable_turns_part_quarantines_its_whole_part_when_read(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.append([episode("e1")], turns_for("e1"))
    store.append([episode("e2")], turns_for("e2"))
    bad = sorted((tmp_path / "turns").glob("part-*.parquet"))[0]
    bad.write_bytes(b"garbage, not parquet")
    assert store.turns()["episode_id"].unique().to_list() == ["e2"]
    assert store.episodes()["episode_id"].to_list() == ["e2"]  # the part's episode is not done any more
    assert store.done_ids() == {"e2"}


def test_a_garbage_cache_is_set_aside_and_a_new_one_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "llm_cache.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    moved = check_cache(path)
    assert moved is not None and moved.read_bytes().startswith(b"this is not") and not path.exists()
    assert f"LLM-call cache {path} is unreadable" in capsys.readouterr().err
    cache = CallCache(path)
    assert len(cache) == 0
    cache.close()
    assert check_cache(path) is None  # a healthy cache stays where it is


def test_a_truncated_cache_and_a_foreign_database_are_set_aside(tmp_path: Path) -> None:
    good = tmp_path / "llm_cache.sqlite"
    cache = CallCache(good)
    cache._db.executemany("INSERT INTO calls VALUES (?, ?)", [(str(i), "{}" * 2000) for i in range(200)])
    cache.close()
    data = good.read_bytes()
    good.write_bytes(data[: len(data) // 3])
    assert check_cache(good) is not None and not good.exists()
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (x)")
    assert check_cache(other) is not None


def test_disk_full_is_recognised_through_causes() -> None:
    inner = OSError(errno.ENOSPC, "full")
    outer = RuntimeError("write failed")
    outer.__cause__ = inner
    assert is_disk_full(outer) and is_disk_full(sqlite3.OperationalError("database or disk is full"))
    assert not is_disk_full(OSError(errno.EIO, "io")) and not is_disk_full(ValueError("x"))


def test_an_owner_cleans_crash_leftovers_but_never_a_write_in_progress(tmp_path: Path) -> None:
    import os
    import time

    store = ResultStore(tmp_path)
    store.append([episode("e1")], turns_for("e1"))
    took_over = time.time() - 30
    crashed = tmp_path / "episodes" / ".tmp-part-crashed.parquet"
    crashed.write_bytes(b"half")
    os.utime(crashed, (took_over - 1, took_over - 1))  # from a driver that died before we took over
    writing = tmp_path / "turns" / "part-29990101T000000000000Z-0000beef.parquet"
    writing.write_bytes(b"a worker's part, its episodes file not written yet")  # now: after we took over
    owner = ResultStore(tmp_path, orphans_before=took_over)
    assert owner.done_ids() == {"e1"}
    assert not crashed.exists() and writing.exists()
    assert ResultStore(tmp_path).done_ids() == {"e1"}
