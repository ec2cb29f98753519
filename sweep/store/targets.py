"""What each writing command owns, and which existing targets it may replace.

Every command that writes — `run`, `study`, `train`, `report`'s report dir, `view --export`'s file —
takes the one lock `sweep run` uses (`sweep.store.ownership.DirLock`) before it writes anything:

- an output dir (`run`, `study`, `train`) is locked by `<dir>/.sweep.lock` (`own_dir`), and refused
  when it already holds another kind of output: a training is never written into a sweep, a study
  into a training (`dir_kind` reads what is there, so dirs written before kinds existed count too);
- a target that is replaced whole (a report dir, an exported page) is locked by a file beside it,
  `<parent>/.<name>.lock` (`own_beside`), since the target itself is renamed away on every write.

A second writer is refused in one line (`OutputBusy`, exit 2) naming the holder and the fix; a place
that cannot be written is one line too (`Unwritable`, exit 2), never an `OSError` traceback."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from sweep.config.errors import ConfigError
from sweep.store.ownership import DirLock

KINDS = ("sweep", "study", "train", "report", "calibrate")
REPORT_MARK = ".sweep-report"  # written into every report dir by `sweep report`: "an earlier report"

# The files that tell what an existing output dir holds, checked in this order: a study and a
# training also write the sweep's config.resolved.yaml, so the sweep's own files come last.
_KIND_FILES = (
    ("report", (REPORT_MARK,)),
    ("calibrate", ("calibrate.resolved.yaml",)),  # before study: a calibration keeps its fit in study.journal
    ("train", ("train.resolved.yaml", "checkpoints/trainer.pt")),
    ("study", ("study.resolved.yaml", "study.journal")),
    ("sweep", ("config.resolved.yaml", "episodes", "turns", "claims")),
)
_WHAT = {
    "sweep": "a sweep's results",
    "study": "a study",
    "train": "a training",
    "report": "a sweep report",
    "calibrate": "a calibration",
}


class Unwritable(ConfigError):
    """A target that cannot be created or written (permissions, a read-only file system): exit 2."""


def dir_kind(path: Path) -> str | None:
    """The kind of output `path` holds (one of `KINDS`), or None when it holds none (or is absent)."""
    try:
        if not path.is_dir():
            return None
        # One listing, then the kinds in order: files only appear while drivers start, and a study
        # marks its dir before it writes the sweep's files, so a listing holding those holds the mark.
        # Checked name by name, a driver joining at that moment could miss the mark, then see them.
        present = set(os.listdir(path))
        for kind, names in _KIND_FILES:
            if any(name.split("/")[0] in present and (path / name).exists() for name in names):
                return kind
    except OSError as e:  # a dir that cannot be searched (permissions): say so, not a traceback
        raise unwritable(path, e, "output_dir") from None
    return None


def refuse_other_kind(path: Path, kind: str, field: str = "output_dir") -> None:
    """ConfigError when `path` holds output of a kind other than `kind`."""
    found = dir_kind(path)
    if found is not None and found != kind:
        raise ConfigError(
            f"{field}: {path} holds {_WHAT[found]}, not {_WHAT[kind]}; give a new or empty directory "
            f"for the {kind} (e.g. {path.parent / (path.name + '-' + kind)})"
        )


def unwritable(path: Path, error: OSError, field: str) -> Unwritable:
    """The one-line error for an `OSError` met while creating or writing `path`."""
    reason = error.strerror or type(error).__name__
    return Unwritable(
        f"{field}: cannot write {path} ({reason}); choose a directory you can write, or fix its permissions"
    )


def _acquire(lock: DirLock, join: bool, field: str) -> DirLock:
    try:
        lock.acquire(join)
    except OSError as e:
        raise unwritable(lock.path.parent, e, field) from None
    return lock


def own_dir(
    path: Path, kind: str, identity: str = "", field: str = "output_dir", join: bool = False
) -> DirLock:
    """Lock output dir `path` for a command of `kind` (creating it), after refusing a dir that holds
    another kind of output. Returns the held lock; `release()` it when done."""
    refuse_other_kind(path, kind, field)
    return _acquire(DirLock.for_output(path, identity, fix=_fix(kind)), join, field)


def own_beside(target: Path, what: str, field: str) -> DirLock:
    """Lock a file or dir that is replaced whole (`what` names it in messages) by `.<name>.lock` beside it."""
    lock = DirLock(
        target.parent / f".{target.name}.lock",
        f"{what} {target}",
        fix=f"wait for it to finish, or give another {field}",
    )
    return _acquire(lock, False, field)


def _fix(kind: str) -> str | None:
    if kind in ("sweep", "study"):
        return None  # DirLock's own words: wait, another dir, or --join
    return "wait for it to finish, or use another output dir (--out)"


def replace_file(path: Path, data: bytes) -> None:
    """Replace `path` by `data` whole or not at all: a temp file of a unique name beside it (with the
    mode a plain write gives), synced, renamed over it, the dir synced. An `OSError` is raised as it
    came, and no temp file is left."""
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            with contextlib.suppress(OSError):  # some file systems have no modes
                os.fchmod(fh.fileno(), 0o666 & ~_umask())  # as a plain write would: mkstemp makes 0600
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        tmp = None
        _sync_dir(path.parent)
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _sync_dir(path: Path) -> None:
    """fsync a directory so the rename survives a crash (best effort: not every file system can)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _umask() -> int:
    """The process's umask, read without changing it (`os.umask` sets it, racing other threads)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o077  # unknown: keep the page private
