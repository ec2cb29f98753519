"""Self-repair of an output dir's state, so that no corrupt file makes a sweep unfinishable:

- a results part that cannot be read is moved to `quarantine/` with a warning naming it, and its
  episodes run again (`quarantine_part`, called by `ResultStore` wherever it reads);
- finished episodes are committed one part per episode when their shared part fails to write, so a
  write failure costs only the episode that causes it (`commit_entries`); a full disk raises
  `DiskFull` once whatever fits is written;
- an LLM-call cache that is not a readable sqlite database is set aside and a new one started
  (`check_cache`), before any engine starts."""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from actors.frozen import quick_init
from sweep.store import cache

if TYPE_CHECKING:
    import pyarrow as pa


Tables = tuple["pa.Table", "pa.Table", "pa.Table"]


class PartStore(Protocol):
    """What `commit_entries` needs of a `sweep.store.results.ResultStore` (named here: results imports us)."""

    out_dir: Path

    def tables(
        self,
        episodes: list[dict[str, Any]],
        turns: list[dict[str, Any]],
        rounds: Sequence[dict[str, Any]] = (),
    ) -> Tables: ...

    def commit(self, tables: Tables) -> None: ...


QUARANTINE = "quarantine"
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_FULL_TEXTS = ("no space left on device", "disk quota exceeded", "database or disk is full", "file too large")


def warn(message: str) -> None:
    """A warning on stderr, one line (the console may be a progress bar's)."""
    print(f"warning: {message}", file=sys.stderr, flush=True)


MIN_FREE_BYTES = 256 * 1024  # below this, no new episode starts: its results would not fit


class DiskFull(OSError):
    """The disk (or quota) holding the results is full: the run stops; a rerun continues it."""

    def __init__(self, out_dir: Path, detail: str) -> None:
        super().__init__(
            errno.ENOSPC,
            f"no space left for results in {out_dir}: {detail}; what fitted is stored, free space and rerun",
        )

    def __str__(self) -> str:
        return str(self.strerror)

    @classmethod
    def after_write(cls, out_dir: Path, written: int, lost: int, cause: BaseException) -> DiskFull:
        return cls(
            out_dir,
            f"{written} episode(s) of the last batch written, {lost} finished episode(s) not written (they "
            f"run again) ({type(cause).__name__}: {str(cause)[:200]})",
        )


def free_bytes(path: Path) -> int | None:
    """Bytes free to an unprivileged writer on the filesystem holding `path` (None if unknown)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def is_disk_full(e: BaseException | None) -> bool:
    """Whether `e` (or what caused it) says the disk or quota is full."""
    seen = 0
    while e is not None and seen < 10:
        if isinstance(e, DiskFull):
            return True
        if isinstance(e, OSError) and e.errno in _FULL_ERRNOS:
            return True
        if any(t in str(e).lower() for t in _FULL_TEXTS):
            return True
        e, seen = e.__cause__ or e.__context__, seen + 1
    return False


@quick_init
@dataclass(frozen=True)
class Entry:
    """One finished episode's checked rows (episode, turns, rounds), waiting to be written."""

    episode_id: str
    episode: dict[str, Any]
    turns: list[dict[str, Any]]
    rounds: Sequence[dict[str, Any]]


def _tables(store: PartStore, entries: list[Entry]) -> Tables:
    """One part's tables: every entry's rows converted to Arrow together (far cheaper per row than
    converting each episode alone)."""
    return store.tables(
        [e.episode for e in entries],
        [t for e in entries for t in e.turns],
        [r for e in entries for r in e.rounds],
    )


def part_tables(store: PartStore, entries: list[Entry]) -> Tables | None:
    """`entries` as one part's tables, or None when some row cannot be converted (`commit_entries`
    then finds the culprit)."""
    try:
        return _tables(store, entries)
    except Exception:  # noqa: BLE001 - commit_entries converts them one by one and records why
        return None


def commit_entries(
    store: PartStore, entries: list[Entry], failed: list[str], tables: Tables | None = None
) -> int:
    """Commit `entries` as one part (`tables`, when already converted), else one part per episode;
    an episode whose part cannot be converted or written is appended to `failed` with the reason.
    Returns how many were committed. A full disk raises `DiskFull` after writing the episodes that fit."""
    try:
        store.commit(tables if tables is not None else _tables(store, entries))
        return len(entries)
    except Exception as e:  # noqa: BLE001 - isolate the culprit below, whatever the error was
        if len(entries) == 1:
            return _single_failed(store, entries[0], e, failed)
    written = 0
    for i, entry in enumerate(entries):
        try:
            store.commit(_tables(store, [entry]))
            written += 1
        except Exception as e:  # noqa: BLE001
            if is_disk_full(e):
                raise DiskFull.after_write(store.out_dir, written, len(entries) - i, e) from e
            failed.append(f"{entry.episode_id}: not stored: {type(e).__name__}: {str(e)[:300]}")
    return written


def _single_failed(store: PartStore, entry: Entry, e: Exception, failed: list[str]) -> int:
    if is_disk_full(e):
        raise DiskFull.after_write(store.out_dir, 0, 1, e) from e
    failed.append(f"{entry.episode_id}: not stored: {type(e).__name__}: {str(e)[:300]}")
    return 0


def quarantine_part(
    out_dir: Path, name: str, error: BaseException, say: Callable[[str], None] = warn
) -> Path:
    """Move the part `name` (its episodes, turns and rounds files) to `quarantine/<stamp>-<name>/` and
    warn; its episodes then count as not done. Raises OSError if the episodes file cannot be moved
    (readers would otherwise meet it again and again)."""
    dest = Path(out_dir) / QUARANTINE / f"{time.strftime('%Y%m%dT%H%M%S')}-{Path(name).stem}"
    dest.mkdir(parents=True, exist_ok=True)
    for table in ("turns", "rounds", "episodes"):  # the episodes file last: it is the commit marker
        src = Path(out_dir) / table / name
        try:
            src.rename(dest / f"{table}.parquet")
        except FileNotFoundError:  # absent, or another driver moved it first
            continue
        except OSError as e:
            raise OSError(f"cannot move unreadable results part {src} aside ({e}); delete it") from e
    say(
        f"unreadable results part {Path(out_dir) / 'episodes' / name} "
        f"({type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}) moved to "
        f"{dest}; its episodes will run again"
    )
    return dest


def check_cache(path: Path, say: Callable[[str], None] = warn) -> Path | None:
    """Set the call cache at `path` aside (with its -wal and -shm files) when it is not a readable
    sqlite database with a `calls` table; returns where it went, or None when it is fine or absent."""
    if not path.exists():
        return None
    problem = _cache_problem(path)
    if problem is None:
        return None
    dest = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}")
    for suffix in ("-wal", "-shm", ""):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{path}{suffix}").rename(f"{dest}{suffix}")
    say(f"LLM-call cache {path} is unreadable ({problem}); moved to {dest.name}, starting a new cache")
    return dest


def _cache_problem(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError as e:
        return f"{type(e).__name__}: {e}"
    if head and head != b"SQLite format 3\x00":
        return "not an sqlite database"
    db: Any = None
    try:
        db = sqlite3.connect(path, timeout=cache.LOCK_TIMEOUT_S)
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "calls" not in tables:
            return f"no calls table (tables: {', '.join(sorted(tables))[:100]})"
        row = db.execute("PRAGMA quick_check").fetchone()
        if row is None or row[0] != "ok":
            return f"quick_check: {row[0] if row else 'no answer'}"
    except sqlite3.Error as e:
        if (held := cache.busy(path, e)) is not None:  # locked by another process: in use, not corrupt
            raise held from e
        return f"{type(e).__name__}: {e}"
    finally:
        if db is not None:
            db.close()
    return None
