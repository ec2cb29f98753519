"""Where benchmark records come from: a local file or folder, the shared benchmark copy, or the HF Hub.

Every loader reads *records* (plain dicts) here and turns them into `Sample`s itself, so one reader
serves both a benchmark's original file format and the Hugging Face Parquet/JSONL exports of it.
Hugging Face `datasets` is imported only when no local copy is found (it is heavy and optional).
"""

from __future__ import annotations

import csv
import functools
import io
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from data.benchmarks.catalog import default_benchmark_dir

Record = dict[str, Any]
T = TypeVar("T")
RECORD_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv")


def read_records(file: Path) -> list[Record]:
    """The records of one JSONL, JSON (a list of objects), Parquet or headed CSV file, in file order.

    Kept per file version (path, size, mtime) for the process: sweeps and tests load the same split
    many times. The records are shared: callers must not change them.
    """
    stat = file.stat()
    return list(_read_records(str(file.resolve()), stat.st_size, stat.st_mtime_ns))


@functools.lru_cache(maxsize=8)
def _read_records(path: str, size: int, mtime_ns: int) -> tuple[Record, ...]:
    return tuple(_parse_records(Path(path)))


def _parse_records(file: Path) -> list[Record]:
    suffix = file.suffix.lower()
    if suffix == ".jsonl":
        return _read_jsonl(file)
    if suffix == ".json":
        loaded = json.loads(file.read_text(encoding="utf-8"))
        if not isinstance(loaded, list) or not all(isinstance(r, dict) for r in loaded):
            raise ValueError(f"{file}: expected a JSON list of objects")
        return loaded
    if suffix == ".parquet":
        import pyarrow.parquet as pq  # a project dependency, but only needed for Parquet files

        return list(pq.read_table(file).to_pylist())
    if suffix == ".csv":
        return csv_records(file.read_text(encoding="utf-8-sig"))
    raise ValueError(
        f"{file}: unsupported file type {suffix!r}; expected one of {', '.join(RECORD_SUFFIXES)}"
    )


def csv_records(text: str) -> list[Record]:
    """The rows of a CSV text with a header row, as dicts (fields may hold commas, quotes, newlines)."""
    return [dict(row) for row in csv.DictReader(io.StringIO(text, newline=""))]


def _read_jsonl(file: Path) -> list[Record]:
    records = []
    with file.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{file}:{number}: not a JSON object ({e.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{file}:{number}: not a JSON object")
            records.append(record)
    return records


def given_path(bench: str, path: str) -> Path:
    """`path` as given by a user, which must exist (FileNotFoundError naming the benchmark otherwise)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"{bench}: no such file or folder {p}")
    return p


def pick_file(bench: str, folder: Path, candidates: Sequence[str]) -> Path:
    """The first of `candidates` (paths relative to `folder`) that is a file; FileNotFoundError if none."""
    for rel in candidates:
        if (folder / rel).is_file():
            return folder / rel
    raise FileNotFoundError(f"{bench}: {folder} holds none of {', '.join(candidates)}")


def split_file(bench: str, folder: Path, split: str, layouts: Sequence[str] = ()) -> Path:
    """The file holding `split` in `folder`: one of `layouts` ('{split}' is filled in), else an HF
    export named '<split>.jsonl'/'.parquet' or '<split>-NNNNN-of-NNNNN.parquet' anywhere below."""
    names = [rel.format(split=split) for rel in layouts]
    names += [f"{split}.jsonl", f"{split}.parquet", f"{split}.json"]
    for rel in names:
        if (folder / rel).is_file():
            return folder / rel
    shards = sorted(folder.rglob(f"{split}-*-of-*.parquet"))
    if len(shards) == 1:
        return shards[0]
    found = "several shards" if shards else "none of " + ", ".join(names)
    raise FileNotFoundError(f"{bench}: no single file for split {split!r} in {folder} ({found})")


def shared_folder(name: str) -> Path | None:
    """`<benchmark dir>/<name>` when the shared benchmark copy has that folder, else None."""
    root = default_benchmark_dir()
    folder = None if root is None else root / name
    return folder if folder is not None and folder.is_dir() else None


def hub_records(
    bench: str, dataset: str, config: str | None, split: str, hint: str, data_dir: str | None = None
) -> list[Record]:
    """All rows of `dataset`/`config` split `split` from the Hugging Face Hub, as dicts.

    Raises FileNotFoundError carrying `hint` (how to point at a local copy) when `datasets` is not
    installed or the Hub cannot serve the split; the loaders call this only after finding no local copy.
    """
    try:
        import datasets  # lazily: a heavy optional dependency
    except ImportError:
        raise FileNotFoundError(f"{bench}: no local copy and `datasets` is not installed; {hint}") from None
    try:
        rows = datasets.load_dataset(dataset, config, split=split, data_dir=data_dir)
    except Exception as e:  # the hub raises many kinds (offline, auth, missing split): all mean "no data"
        raise FileNotFoundError(
            f"{bench}: could not load {dataset} {config or ''} split {split!r} ({type(e).__name__}); {hint}"
        ) from e
    return [dict(row) for row in rows]


def load_from(
    bench: str, path: str | None, local: Callable[[Path], T], shared: str, hub: Callable[[], T]
) -> T:
    """Items from `path` if given, else from the shared copy's folder `shared`, else from the Hub.

    `local(p)` reads a file or folder (given by the user, or the shared folder) in whatever layouts
    the benchmark supports; `hub()` is called only when there is no local copy at all.
    """
    if path is not None:
        return local(given_path(bench, path))
    folder = shared_folder(shared)
    if folder is not None:
        try:
            return local(folder)
        except FileNotFoundError:
            pass  # the shared copy lacks this split: the Hub may still have it
    return hub()


def require_str(record: Mapping[str, Any], keys: Iterable[str], where: str) -> list[str]:
    """The string values of `keys` in `record`; ValueError naming `where` when one is missing."""
    values = []
    for key in keys:
        value = record.get(key)
        if not isinstance(value, str):
            raise ValueError(f"{where}: field {key!r} missing or not a string")
        values.append(value)
    return values
