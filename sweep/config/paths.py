"""Every path a config names, resolved and checked before anything is written: an empty path, a
system directory, the current directory or one above it, a dir full of someone else's files, a
device — refused with one line naming the field and the fix. Storage and tracking URLs that name a
file (`journal:`, `sqlite:///`, `file:`) get the same checks, plus: an existing file must be of the
right kind (an sqlite database, an Optuna journal)."""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path

from sweep.config.errors import ConfigError

# A directory (or file) exactly here is never an output.
_EXACT = {"/", "/home", "/tmp", "/var", "/var/tmp", "/opt", "/srv", "/mnt", "/media", "/root", "/usr/local"}
# Nothing inside these trees is written by a sweep, nor read as a dataset.
_TREES = (
    "/proc",
    "/sys",
    "/dev",
    "/etc",
    "/boot",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/usr",
    "/run",
    "/snap",
    "/var/lib",
    "/var/log",
    "/var/run",
    "/var/cache",
    "/var/spool",
)
# What an output dir of this project holds; an existing dir with none of these is someone else's.
MARKERS = (
    "config.resolved.yaml",
    "episodes",
    ".sweep.lock",
    "study.journal",
    "study.resolved.yaml",
    "llm_cache.sqlite",
    "mlflow.db",
    "turns",
    "claims",
)
SQLITE_HEADER = b"SQLite format 3\x00"


def _resolve(value: object, field: str, example: str = "a directory such as runs/my-sweep") -> Path:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{field}: empty path; give {example}")
    if "\x00" in value:
        raise ConfigError(f"{field}: the path holds a NUL character; fix it")
    try:
        return Path(os.path.expanduser(value.strip())).resolve()
    except (OSError, RuntimeError) as e:
        raise ConfigError(f"{field}: cannot resolve {value!r} ({e}); give a plain directory path") from None


def _system(path: Path) -> bool:
    text = str(path)
    return text in _EXACT or any(text == t or text.startswith(t + "/") for t in _TREES)


def _refuse_system(path: Path, field: str, given: str) -> None:
    if _system(path):
        raise ConfigError(
            f"{field}: {given!r} is {path}, a system location; give a path of your own, e.g. runs/x"
        )
    home = Path.home().resolve()
    for mine, what in ((Path.cwd().resolve(), "the current directory"), (home, "your home directory")):
        if path == mine or path in mine.parents:
            raise ConfigError(
                f"{field}: {given!r} is {path}, {what} or above it; give a subdirectory such as runs/my-sweep"
            )


def place(value: object, field: str, example: str = "a path such as runs/my-sweep/report") -> Path:
    """A path a command writes (a report dir, an exported file), resolved; ConfigError when it is
    empty, holds a NUL, or is a system location, the current dir, the home dir or above them."""
    path = _resolve(str(value) if isinstance(value, Path) else value, field, example)
    _refuse_system(path, field, str(value))
    return path


def output_dir(value: object, field: str = "output_dir") -> Path:
    """The resolved output dir, or ConfigError: empty, a system dir, the current dir or above, a
    file, or an existing dir holding other files."""
    path = _resolve(value, field)
    _refuse_system(path, field, str(value))
    try:  # a parent that cannot be searched (permissions) or a name too long fails here, not later
        path.stat()
    except FileNotFoundError:
        return path
    except OSError as e:
        raise ConfigError(
            f"{field}: cannot write {path} ({e.strerror}); choose a directory you can write, or fix its permissions"
        ) from None
    if not path.is_dir():
        raise ConfigError(f"{field}: {path} is a file, not a directory; give a directory path")
    if path.is_dir():
        try:
            entries = sorted(p.name for p in path.iterdir())
        except OSError as e:
            raise ConfigError(
                f"{field}: {path} cannot be read ({e.strerror}); check its permissions"
            ) from None
        # Configs kept next to their results and hidden files (.gitignore) are fine; other files mean
        # the dir is someone else's (a source tree, a data folder) unless results are already there.
        foreign = [e for e in entries if not e.startswith(".") and not e.endswith((".yaml", ".yml"))]
        if foreign and not set(entries) & set(MARKERS):
            raise ConfigError(
                f"{field}: {path} already holds other files (e.g. {foreign[0]!r}) and no sweep results; "
                "give a new or empty directory"
            )
    return path


def input_path(value: object, field: str) -> Path:
    """A file or directory a config reads (a dataset): it must exist and not be a device or system file."""
    path = _resolve(value, field, "your data file or folder")
    if _system(path):
        raise ConfigError(f"{field}: {path} is a system path; give your data file or folder")
    if not path.is_file() and not path.is_dir():
        kind = "not a regular file or folder" if path.exists() else "not found"
        raise ConfigError(f"{field}: {path} is {kind}; give an existing data file or folder")
    return path


def file_url(url: object, field: str) -> str:
    """Check a storage or tracking URL; for one naming a local file (`journal:PATH`, `sqlite:///PATH`,
    `file:PATH`) the file's place, and for an existing one its kind. Returns the URL."""
    if not isinstance(url, str) or not url.strip() or "\x00" in url:
        raise ConfigError(f"{field}: empty; give a URL such as sqlite:///runs/x/mlflow.db, or leave it unset")
    kind = "journal" if url.startswith("journal:") else "sqlite" if url.startswith("sqlite:") else None
    if url.startswith("journal:"):
        path_text = url.removeprefix("journal:")
    elif url.startswith("sqlite:"):
        path_text = url.removeprefix("sqlite:").removeprefix("//").removeprefix("/").split("?")[0]
        if path_text in ("", ":memory:"):
            return url
    elif url.startswith("file:"):
        path_text = urllib.parse.urlsplit(url).path
    else:
        parts = urllib.parse.urlsplit(url)
        if not parts.scheme or (parts.scheme in ("http", "https") and not parts.hostname):
            raise ConfigError(
                f"{field}: {url!r} is not a URL; give e.g. http://127.0.0.1:5000 or sqlite:///path.db"
            )
        return url  # a server: nothing local to check
    path = _resolve(path_text, field, "a file path after the scheme, e.g. journal:runs/x/study.journal")
    _refuse_system(path, field, path_text)
    if kind is None:
        return url
    if path.is_dir() or (path.exists() and not path.is_file()):
        raise ConfigError(f"{field}: {path} is not a regular file; name a new or existing {kind} file")
    if path.is_file() and path.stat().st_size and not _looks_like(path, kind):
        what = "an sqlite database" if kind == "sqlite" else "an Optuna journal"
        raise ConfigError(f"{field}: {path} exists and is not {what}; name a new file")
    return url


def _looks_like(path: Path, kind: str) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError:
        return False
    if kind == "sqlite":
        return head == SQLITE_HEADER
    if kind == "journal":
        return head.lstrip()[:1] == b"{"
    return True


def ray_endpoint(address: str) -> tuple[str, int] | None:
    """(host, port) to probe for a Ray address (`host:port`, `ray://host:port`); None for `auto`,
    `local` and anything without a port."""
    text = address.strip()
    if text in ("auto", "local", ""):
        return None
    parsed = urllib.parse.urlsplit(text if "://" in text else f"gcs://{text}")
    try:
        port = parsed.port
    except ValueError:
        return None
    if parsed.hostname is None or port is None:
        return None
    return parsed.hostname, port
