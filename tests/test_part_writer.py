"""Results written by a background thread: the same parts as in the foreground, everything on disk
once flushed or closed, an episode that cannot be written recorded as in the foreground, and a full
disk raised on the caller's thread."""

from __future__ import annotations

import errno
import time
from pathlib import Path
from typing import Any

import pytest

from sweep.store.repair import DiskFull
from sweep.store.results import BufferedWriter, ResultStore
from tests.test_results import episode, turns_for


def fill(writer: BufferedWriter, n: int) -> None:
    for i in range(n):
        writer.add(episode(f"e{i}"), turns_for(f"e{i}"))


def test_background_parts_are_the_foreground_parts(tmp_path: Path) -> None:
    stores = []
    for background in (False, True):
        store = ResultStore(tmp_path / str(background))
        with BufferedWriter(store, max_episodes=3, background=background) as writer:
            fill(writer, 8)
        stores.append(store)
    fg, bg = stores
    assert len(fg.part_names()) == len(bg.part_names()) == 3  # 3 + 3 + 2 episodes
    assert fg.episodes().drop("finished_at").equals(bg.episodes().drop("finished_at"))
    assert fg.turns().equals(bg.turns())


def test_flush_waits_for_the_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ResultStore(tmp_path)
    commit = store.commit

    def slow(*a: Any, **k: Any) -> None:
        time.sleep(0.3)
        commit(*a, **k)

    monkeypatch.setattr(store, "commit", slow)
    writer = BufferedWriter(store, max_episodes=100, background=True)
    fill(writer, 5)
    writer.flush()
    assert store.episodes().height == 5  # on disk before flush returned
    writer.close()


def test_a_failed_background_write_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ResultStore(tmp_path)

    def broken(tables: Any) -> None:
        if "e1" in tables[0].column("episode_id").to_pylist():
            raise OSError("bad sector")
        commit(tables)

    commit = store.commit
    monkeypatch.setattr(store, "commit", broken)
    with BufferedWriter(store, max_episodes=2, background=True) as writer:
        fill(writer, 4)
    assert writer.failed == ["e1: not stored: OSError: bad sector"]  # only the episode that broke
    assert sorted(store.done_ids()) == ["e0", "e2", "e3"] and writer.written == 3


def test_a_full_disk_in_the_thread_is_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ResultStore(tmp_path)

    def full(*a: Any, **k: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store, "commit", full)
    writer = BufferedWriter(store, max_episodes=1, background=True)
    with pytest.raises(DiskFull, match="no space left for results"):
        fill(writer, 3)  # the first part fails in the thread; a later add or the close reports it
        writer.close()
