"""A receipt of the last MLflow logging of a sweep, so that a rerun with nothing new neither imports
MLflow nor opens its store (seconds on their own).

Written after a sweep is logged to a sqlite store; a rerun that ran no episode skips MLflow when the
receipt names the same store, experiment and sweep, the store file is as the receipt left it (same
size and modification time: any later write, a deleted run too, changes them), and the results hold
the same committed parts. Anything else — another URI kind, a changed store, new parts — logs as usual."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

NAME = ".mlflow-receipt.json"


def _db_state(uri: str) -> list[int] | None:
    """(size, mtime in ns) of a sqlite store's file; None for other stores or a missing file."""
    if not uri.startswith("sqlite:///"):
        return None
    try:
        st = Path(uri.removeprefix("sqlite:///")).stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _facts(out_dir: Path, uri: str, experiment: str, sweep_id: str, parts: list[str]) -> dict[str, Any]:
    digest = hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()
    return {"uri": uri, "experiment": experiment, "sweep_id": sweep_id, "parts": [len(parts), digest]}


def write(
    out_dir: Path, uri: str, experiment: str, sweep_id: str, parts: list[str], parent_run_id: str
) -> None:
    """Record a finished logging (only for sqlite stores, whose file can be checked later)."""
    state = _db_state(uri)
    path = Path(out_dir) / NAME
    if state is None:
        path.unlink(missing_ok=True)
        return
    receipt = _facts(out_dir, uri, experiment, sweep_id, parts) | {
        "db": state,
        "parent_run_id": parent_run_id,
    }
    tmp = path.with_name(f".{NAME}.tmp")
    tmp.write_text(json.dumps(receipt), encoding="utf-8")
    tmp.replace(path)


def fresh(out_dir: Path, uri: str, experiment: str, sweep_id: str, parts: list[str]) -> str | None:
    """The parent run id when MLflow already holds exactly this sweep's results; else None."""
    try:
        receipt = json.loads((Path(out_dir) / NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    state = _db_state(uri)
    if state is None or receipt.get("db") != state:
        return None
    if any(receipt.get(k) != v for k, v in _facts(out_dir, uri, experiment, sweep_id, parts).items()):
        return None
    parent = receipt.get("parent_run_id")
    return parent if isinstance(parent, str) else None
