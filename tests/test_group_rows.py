"""MLflow's per-group tables come out of the store streaming, one part at a time, and hold exactly
what filtering the whole tables by the group's episodes gives (an episode stored twice counts once,
from its earliest part, its turns and rounds too); episode reads never touch the turns."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from sweep.store.group_rows import kept, split_by_group
from sweep.store.results import ResultStore
from tests.test_results import episode, turns_for


def round_row(eid: str, r: int) -> dict[str, object]:
    counts = dict.fromkeys(
        ("edges", "cross_edges", "critiques", "verdicts", "accepted", "calls", "tokens"), 0
    )
    return {
        "episode_id": eid,
        "round": r,
        "agents": 2,
        "correct": 1,
        **counts,
        "answer_entropy": 0.0,
        "agreement": 1.0,
    }


@pytest.fixture
def store(tmp_path: Path) -> ResultStore:
    store = ResultStore(tmp_path / "out")
    for part, ids in enumerate(
        (["a1", "b1", "a2"], ["b2", "a1", "a4", "c1"], ["a3"])
    ):  # a1 twice: part 0 wins
        text = f"part{part}"
        store.append(
            [episode(e) for e in ids],
            [t for e in ids for t in turns_for(e, text)],
            [round_row(e, r) for e in ids for r in (0, 1)],
        )
    return store


def test_each_groups_tables_are_the_whole_tables_filtered(store: ResultStore, tmp_path: Path) -> None:
    groups = {"a1": 0, "a2": 0, "a3": 0, "a4": 0, "b1": 1, "b2": 1, "c1": 2}
    mapping = pl.DataFrame({"episode_id": list(groups), "_group": list(groups.values())})
    rows = kept(store).join(mapping, on="episode_id")
    folders = split_by_group(store, rows, [0, 1], tmp_path / "split", open_files=1)  # chunks of one
    assert sorted(folders) == [0, 1] and not (tmp_path / "split" / "2").exists()
    whole = {"episodes": store.episodes(), "turns": store.turns(), "rounds": store.rounds()}
    for g, folder in folders.items():
        ids = [e for e, gi in groups.items() if gi == g]
        for table, frame in whole.items():
            got = pl.read_parquet(folder / f"{table}.parquet")
            want = frame.filter(pl.col("episode_id").is_in(ids))
            assert got.height == want.height > 0, table
            key = ["episode_id", *(["round"] if table == "rounds" else [])]
            assert got.sort(key).equals(want.sort(key)), (g, table)
    a1_turns = pl.read_parquet(folders[0] / "turns.parquet").filter(pl.col("episode_id") == "a1")
    assert set(a1_turns["text"]) == {"part0"}  # not the later duplicate's


def test_episodes_are_read_without_the_turns(store: ResultStore) -> None:
    shutil.rmtree(store.turns_dir)
    shutil.rmtree(store.rounds_dir)
    assert store.episodes()["episode_id"].to_list() == ["a1", "b1", "a2", "b2", "a4", "c1", "a3"]
    narrow = store.episodes(["correct"])
    assert narrow.columns == ["episode_id", "correct"] and narrow.height == 7
