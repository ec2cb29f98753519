"""Where `sweep view --export FILE` may write, and the write itself. The file is written only when it
is absent or an earlier export of this viewer (`MARK` within its first `HEAD_BYTES`); a directory, a
symlink, a device, a file in a place that is not a directory or any other file is refused in one line
before anything is read or written. The page is written whole or not at all: a uniquely named temp
file beside it, fsynced, then renamed over it; on any failure the temp file is removed.

Errors (one line each): `ExportRefused` / `sweep.store.targets.Unwritable` (ConfigErrors, exit 2) for a
target that may not or cannot be written (read-only, no permission); `DiskFull` (exit 1) when the
disk or quota fills up while writing, a failure while working: free space and run it again."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sweep.config.errors import ConfigError
from sweep.config.paths import place
from sweep.store.repair import is_disk_full
from sweep.store.targets import replace_file, unwritable

FIELD = "--export"
MARK = '<meta name="generator" content="debate-sweep view export">'
HEAD_BYTES = 4096


class ExportRefused(ConfigError):
    """An export target that is not ours to replace: exit 2, nothing touched."""


class DiskFull(Exception):
    """The disk (or quota) filled up while the page was written: exit 1, the old file unchanged."""


def _refuse(path: Path, what: str) -> ExportRefused:
    return ExportRefused(
        f"{FIELD}: {path} {what}; give a new file name such as {path.with_name('view.html')}, or move it away"
    )


def is_export(path: Path) -> bool:
    """Whether the regular file `path` begins like a page this viewer exported."""
    try:
        with open(path, "rb") as fh:
            return MARK.encode() in fh.read(HEAD_BYTES)
    except OSError:
        return False


def export_target(value: object) -> Path:
    """The resolved file `--export` names, or ExportRefused/ConfigError when it may not be written.
    Reads only: nothing is created here."""
    given = Path(os.path.expanduser(str(value).strip())) if isinstance(value, (str, Path)) else None
    # `place` resolves symlinks, so a link is caught on the path as given: replacing it would swap
    # the user's link for a file, and writing through it would write somewhere else.
    if given is not None and given.is_symlink():
        raise _refuse(given, "is a symbolic link")
    path = place(value, FIELD, "a file such as runs/my-sweep/view.html")
    try:
        info = path.lstat()
    except (FileNotFoundError, NotADirectoryError):  # absent; a file above it is refused below
        info = None
    except OSError as e:
        raise unwritable(path, e, FIELD) from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise _refuse(path, "is a directory")
        if stat.S_ISLNK(info.st_mode):
            raise _refuse(path, "is a symbolic link")
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(path, "is not a regular file (a device, pipe or socket)")
        if not is_export(path):
            raise _refuse(path, "exists and is not a page `sweep view --export` wrote")
    above = path.parent
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        raise _refuse(path, f"cannot be made: {above} is a file, not a directory")
    return path


def write_page(path: Path, text: str) -> None:
    """Replace `path` by `text` atomically (see the module docstring); the parent dir must exist."""
    try:
        replace_file(path, text.encode("utf-8"))
    except OSError as e:
        if is_disk_full(e):
            raise DiskFull(
                f"{FIELD}: disk full while writing {path}; the file is unchanged, free some space and "
                "run the export again"
            ) from None
        raise unwritable(path, e, FIELD) from None
