"""Reading an output dir's committed Parquet parts for reports and the viewer, which only read: a part
that cannot be read (truncated, garbage, zero bytes, a directory under a part's name) is named in a
one-line warning and skipped, never moved or changed — a sweep may be writing next to us, and
`sweep run` itself sets such parts aside and runs their episodes again."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import polars as pl

PART_GLOB = "part-*.parquet"
# Columns every part of a table has held since the first release: a Parquet file without them is
# not a results part (the report could only read nulls from it).
EPISODE_KEYS = (
    "episode_id",
    "sweep_id",
    "method_spec",
    "dataset",
    "split",
    "item_id",
    "seed",
    "correct",
    "models",
)
ROUND_KEYS = ("episode_id", "round")
Warn = Callable[[str], None]
# What reading a broken file can raise: polars' own errors, OS errors, and a panic of its Rust reader
# (a BaseException, not an Exception).
READ_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    pl.exceptions.PolarsError,
    pl.exceptions.PanicException,
)


def stderr_warning(message: str) -> None:
    """One `warning: ...` line on stderr."""
    print(f"warning: {message}", file=sys.stderr, flush=True)


def committed_parts(out: Path) -> list[Path]:
    """The committed episodes parts of `out`, oldest first (a part's name starts with its UTC time)."""
    return sorted((Path(out) / "episodes").glob(PART_GLOB))


def _reason(error: BaseException) -> str:
    """The first line of an error, short enough for a one-line warning."""
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else type(error).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def _skip(path: Path, reason: str, warn: Warn) -> None:
    warn(
        f"skipping unreadable part {path} ({reason}); move it aside, or rerun the sweep (it sets "
        "unreadable parts aside and runs their episodes again)"
    )


def _footer(path: Path, required: tuple[str, ...]) -> dict[str, pl.DataType] | str:
    """The part's schema from its footer, or why it cannot be a readable part."""
    try:
        if not path.is_file():  # never opened: a FIFO would block the read
            if path.is_symlink() and not path.exists():
                return "a symlink to a missing file"
            return "a directory, not a file" if path.is_dir() else "not a regular file"
        if path.stat().st_size == 0:
            return "0 bytes"
        schema = dict(pl.read_parquet_schema(path))
    except READ_ERRORS as e:
        return _reason(e)
    missing = [c for c in required if c not in schema]
    return f"Parquet without the column {missing[0]!r}: not a results part" if missing else schema


def scan_parts(
    paths: list[Path], columns: list[str] | None = None, schema: dict[str, pl.DataType] | None = None
) -> pl.LazyFrame:
    """A lazy scan of Parquet parts with a `_part` column (the file name); columns missing from a
    part come back null. `columns` keeps only those (and `_part`) that exist in the union schema
    (`schema`, else read from the oldest and newest part: columns are only ever added over time)."""
    if schema is None:
        schema = {}
        for path in dict.fromkeys([paths[0], paths[-1]]):
            schema.update(pl.read_parquet_schema(path))
    frame = pl.scan_parquet(
        [str(p) for p in paths],
        schema=schema,
        missing_columns="insert",
        extra_columns="ignore",
        include_file_paths="_part",
    ).with_columns(pl.col("_part").str.split("/").list.last())
    if columns is not None:
        frame = frame.select([c for c in columns if c in schema] + ["_part"])
    return frame


def read_parts(
    paths: list[Path],
    columns: list[str] | None = None,
    warn: Warn = stderr_warning,
    required: tuple[str, ...] = (),
) -> pl.DataFrame | None:
    """The rows of every readable part of `paths` (as `scan_parts` gives them), each unreadable one
    (or one without a `required` column) skipped with a warning naming it; None when none is left."""
    schema: dict[str, pl.DataType] = {}
    good = []
    for path in paths:
        found = _footer(path, required)
        if isinstance(found, str):
            _skip(path, found, warn)
            continue
        schema.update(found)  # oldest first: a newer part's columns are a superset
        good.append(path)
    if not good:
        return None
    try:
        return scan_parts(good, columns, schema).collect()
    except READ_ERRORS:
        pass  # a part whose footer reads but whose data does not: read one at a time to find it
    frames = []
    for path in good:
        try:
            frames.append(scan_parts([path], columns, schema).collect())
        except READ_ERRORS as e:
            _skip(path, _reason(e), warn)
    return pl.concat(frames, how="diagonal_relaxed") if frames else None
