"""Where `sweep report` may write, and how it replaces an earlier report without ever removing what
it did not write.

A report dir is written only when it is absent, an empty dir, or an earlier report (it holds the
`sweep.store.targets.REPORT_MARK` file that every report gets). Anything else — a file, a folder of other
files, a sweep's, study's or training's output dir, a dir holding the results being reported — is
refused in one line before anything is read or written. A new report is written into a temp dir
beside the target and swapped in by rename; the only dirs ever removed are the earlier report it
replaces and its own temp dirs, each checked to hold the mark first."""

from __future__ import annotations

import contextlib
import json
import shutil
import time
import uuid
from pathlib import Path

from sweep.config.errors import ConfigError
from sweep.config.paths import MARKERS, place
from sweep.store.targets import REPORT_MARK, refuse_other_kind

FIELD = "--report-dir"
# Files of other outputs (sweep, study, training): a dir holding one is never replaced, mark or not.
_FOREIGN = (*MARKERS, "train.resolved.yaml", "checkpoints", "quarantine")


def _new_place(path: Path) -> Path:
    """A sibling to suggest instead of `path`."""
    return path.with_name(f"{path.name}-new" if path.name.endswith("report") else f"{path.name}-report")


def report_target(value: object, inputs: list[Path]) -> Path:
    """The resolved report dir for `value`, or a one-line ConfigError when it may not be written
    (see the module docstring); writes nothing."""
    path = place(value, FIELD)
    for given in inputs:
        out = Path(given).resolve()
        if path == out or path in out.parents:
            raise ConfigError(
                f"{FIELD}: {path} holds the results being reported ({given}); give a new or empty "
                f"directory, e.g. {out / 'report'} (the default)"
            )
    refuse_target(path)
    return path


def refuse_target(path: Path) -> None:
    """ConfigError unless `path` is absent, an empty dir or an earlier report."""
    if path.exists() and not path.is_dir():
        raise ConfigError(
            f"{FIELD}: {path} is a file, not a report directory; give a new or empty directory, "
            f"e.g. {_new_place(path)}"
        )
    if not path.is_dir():
        return
    refuse_other_kind(path, "report", FIELD)  # a sweep's, study's or training's output
    try:
        names = sorted(p.name for p in path.iterdir())
    except OSError as e:
        raise ConfigError(f"{FIELD}: {path} cannot be read ({e.strerror}); check its permissions") from None
    if REPORT_MARK in names and (path / REPORT_MARK).is_file():
        foreign = [n for n in names if n in _FOREIGN]
        if not foreign:
            return
        raise ConfigError(
            f"{FIELD}: {path} is marked as a report but also holds {foreign[0]!r} of another output; "
            f"give a new or empty directory, e.g. {_new_place(path)}"
        )
    if names:
        raise ConfigError(
            f"{FIELD}: {path} already holds other files (e.g. {names[0]!r}) and no earlier report; give a "
            f"new or empty directory, e.g. {_new_place(path)}"
        )


def is_report(path: Path) -> bool:
    """Whether `path` is a real dir holding the report mark (a file)."""
    return path.is_dir() and not path.is_symlink() and (path / REPORT_MARK).is_file()


def write_mark(tmp: Path, inputs: list[Path]) -> None:
    """The mark that tells a later `sweep report` this dir is a report it may replace."""
    info = {
        "kind": "report",
        "by": "sweep report",
        "inputs": [str(d) for d in inputs],
        "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    (tmp / REPORT_MARK).write_text(json.dumps(info) + "\n", encoding="utf-8")


def temp_prefix(final: Path) -> str:
    return f".{final.name}.tmp-"


def clean_leftovers(final: Path) -> None:
    """Remove what a crashed earlier write left beside `final` (its temp dir, the old report renamed
    aside): only dirs of that name that hold the report mark. Call with the report dir's lock held."""
    for pattern in (f"{temp_prefix(final)}*", f".{final.name}.old-*"):
        for path in final.parent.glob(pattern):
            if is_report(path):
                shutil.rmtree(path, ignore_errors=True)


def replace_dir(tmp: Path, final: Path) -> None:
    """Move the new report `tmp` to `final`: one rename onto an absent or empty dir; an earlier report
    is renamed aside first and removed once the new one is in place (put back if that fails)."""
    refuse_target(final)  # again, under the lock: nothing changed it since the first check
    if not is_report(final):
        tmp.rename(final)  # rename(2) replaces an empty dir only: a file put there meanwhile fails it
        return
    old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:12]}")
    final.rename(old)
    try:
        tmp.rename(final)
    except BaseException:
        with contextlib.suppress(OSError):
            old.rename(final)
        raise
    if is_report(old):  # checked again: only a report is ever removed
        shutil.rmtree(old, ignore_errors=True)
