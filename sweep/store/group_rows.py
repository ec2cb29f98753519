"""A sweep's stored rows split by plan group, streaming: one pass over the store's parts writes each
group's `episodes`, `turns` and `rounds` Parquet files (what MLflow logs per child run), holding one
part in memory at a time, whatever the size of the sweep."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from sweep.run.plan import Plan
from sweep.store.results import EPISODE_SCHEMA, ROUND_SCHEMA, TURN_SCHEMA, ResultStore

TABLES = {"episodes": EPISODE_SCHEMA, "turns": TURN_SCHEMA, "rounds": ROUND_SCHEMA}


def kept(store: ResultStore) -> pl.DataFrame:
    """(episode_id, _part) of every committed episode, the earliest part winning (as `episodes()`
    keeps it); only the id column is read."""
    frames = []
    for i, name in enumerate(store.part_names()):
        ids = pq.read_table(store.episodes_dir / name, columns=["episode_id"]).column(0)
        frames.append(pl.DataFrame({"episode_id": ids.to_numpy(zero_copy_only=False), "_part": i}))
    if not frames:
        return pl.DataFrame(schema={"episode_id": pl.String, "_part": pl.Int64})
    return pl.concat(frames).unique("episode_id", keep="first", maintain_order=True)


def plan_groups(plan: Plan) -> pl.DataFrame:
    """(episode_id, _group): every planned episode and the index of its group in `plan.groups`."""
    ids: list[str] = []
    which: list[int] = []
    for gi, g in enumerate(plan.groups):
        for s in g.samples:
            ids.append(g.episode_id(s))
            which.append(gi)
    return pl.DataFrame(
        {"episode_id": ids, "_group": which}, schema={"episode_id": pl.String, "_group": pl.Int64}
    )


def stored_by_group(plan: Plan, store: ResultStore) -> pl.DataFrame:
    """(episode_id, _part, _group) of every stored episode of the plan."""
    return kept(store).join(plan_groups(plan), on="episode_id", how="inner")


def _polars_schema(schema: pa.Schema) -> pa.Schema:
    """The Arrow schema polars writes for `schema` (its own string and list types)."""
    frame = pl.from_arrow(schema.empty_table())
    assert isinstance(frame, pl.DataFrame)
    return frame.to_arrow().schema


def _parts(store: ResultStore, table: str, names: list[str]) -> Iterator[tuple[int, pl.DataFrame]]:
    directory = store.out_dir / table
    for i, name in enumerate(names):
        path = directory / name
        if name and path.exists():  # parts committed before `rounds/` existed have no rounds part
            frame = pl.from_arrow(pq.read_table(path, schema=TABLES[table]))
            assert isinstance(frame, pl.DataFrame)
            yield i, frame


def split_by_group(
    store: ResultStore, rows: pl.DataFrame, groups: Iterable[int], out: Path, open_files: int = 8
) -> dict[int, Path]:
    """Write `out/<group>/{episodes,turns,rounds}.parquet` for each of `groups`, from the stored
    episodes in `rows` (`stored_by_group`); returns each group's folder. At most `open_files`
    Parquet writers are open at once (each holds its encoders' buffers): groups go in chunks, and
    a chunk reads only the parts holding its episodes."""
    groups = sorted(set(groups))
    folders = {g: out / str(g) for g in groups}
    names = store.part_names()
    wanted = rows.filter(pl.col("_group").is_in(groups))
    for start in range(0, len(groups), max(1, open_files)):
        chunk = groups[start : start + max(1, open_files)]
        mine = wanted.filter(pl.col("_group").is_in(chunk))
        by_part = mine.partition_by("_part", as_dict=True, include_key=False)
        for table in TABLES:
            _write_chunk(store, table, names, by_part, {g: folders[g] for g in chunk})
    return folders


def _write_chunk(
    store: ResultStore,
    table: str,
    names: list[str],
    by_part: dict[Any, pl.DataFrame],
    folders: dict[int, Path],
) -> None:
    target = _polars_schema(TABLES[table])
    with ExitStack() as stack:
        writers = {}
        for g, folder in folders.items():
            folder.mkdir(parents=True, exist_ok=True)
            writers[g] = stack.enter_context(
                pq.ParquetWriter(folder / f"{table}.parquet", target, compression="zstd")
            )
        parts = [names[i] if (i,) in by_part else "" for i in range(len(names))]
        for i, frame in _parts(store, table, parts):
            # Only rows of the part whose episode row was kept count (as `ResultStore` reads them).
            frame = frame.join(by_part[(i,)], on="episode_id", how="inner", maintain_order="left")
            for (g,), sub in frame.partition_by("_group", as_dict=True, include_key=False).items():
                writers[int(g)].write_table(sub.to_arrow().cast(target))
