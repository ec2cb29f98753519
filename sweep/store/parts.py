"""Part files of the results store: rows into a validated Arrow table, and the atomic write of a
table to a Parquet file (hidden temp file, fsync, rename)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

TMP_PREFIX = ".tmp-"


def to_table(rows: list[dict[str, Any]], schema: pa.Schema, what: str) -> pa.Table:
    """Rows already checked by `sweep.store.rowcheck` as a table of `schema`; a null in a non-nullable
    column is still an error here (pyarrow would accept it)."""
    table = pa.Table.from_pylist(rows, schema=schema)
    for field in schema:
        if not field.nullable and table.column(field.name).null_count:
            raise ValueError(f"{what} column {field.name!r} is missing or null in some row")
    return table


def write_atomic(table: pa.Table, path: Path) -> None:
    """Write to a hidden temp file in the same dir, fsync, then rename over `path`: readers see the
    whole part or nothing."""
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}")
    try:
        with open(tmp, "wb") as fh:
            pq.write_table(table, fh, compression="zstd")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):  # a half-written temp file only takes space (a full disk's)
            tmp.unlink()
        raise
    # The rename itself must reach the disk before the next step counts on it.
    with contextlib.suppress(OSError):
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
