"""Policy checkpoints: one `.npz` file holding the network's weights (numpy arrays), its architecture,
the config that made it (provenance: the training config, the update) and a content hash over all of
them. Readable with numpy alone (no torch, no pickle), so a sweep config naming a checkpoint validates,
and its episode ids are computed, without loading torch.

A checkpoint is named by a path, or by a URI whose scheme a higher floor registers a resolver for
(`sweep` registers MLflow's `runs:/<run id>/<artifact path>`), which turns it into a local path.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from debate.spec import canonical_json

FORMAT = "debate-sweep/policy/1"
_META = "__meta__"
_PREFIX = "w."

# scheme -> a function turning `scheme:...` into a local file (registered by the floor that can)
RESOLVERS: dict[str, Callable[[str], Path]] = {}


class CheckpointError(ValueError):
    """A checkpoint that cannot be found, read or trusted (one line naming it and the fix)."""


@dataclass(frozen=True)
class Checkpoint:
    """A loaded checkpoint: architecture, weights by parameter name, provenance and content hash."""

    arch: dict[str, Any]
    weights: dict[str, np.ndarray]
    provenance: dict[str, Any]
    digest: str


def content_hash(arch: Mapping[str, Any], weights: Mapping[str, np.ndarray], provenance: Mapping[str, Any]) -> str:
    """A hex digest of everything a checkpoint holds (names, dtypes, shapes and bytes of the weights)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(canonical_json({"format": FORMAT, "arch": arch, "provenance": provenance}).encode())
    for name in sorted(weights):
        a = np.ascontiguousarray(weights[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save_checkpoint(
    path: str | Path, arch: Mapping[str, Any], weights: Mapping[str, np.ndarray], provenance: Mapping[str, Any]
) -> str:
    """Write a checkpoint atomically (temp file, then rename); returns its content hash."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {name: np.asarray(w) for name, w in weights.items()}
    digest = content_hash(arch, arrays, provenance)
    meta = {"format": FORMAT, "arch": dict(arch), "provenance": dict(provenance), "hash": digest}
    blob = np.frombuffer(json.dumps(meta, sort_keys=True, default=str).encode(), dtype=np.uint8)
    tmp = path.with_name(f".{path.name}.tmp")
    members: dict[str, Any] = {_META: blob, **{_PREFIX + k: v for k, v in arrays.items()}}
    with open(tmp, "wb") as f:
        np.savez(f, **members)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
    return digest


def resolve(ref: str) -> Path:
    """The local file a checkpoint reference names (a path, or a URI of a registered scheme)."""
    scheme = ref.split(":", 1)[0] if ":" in ref and not Path(ref).exists() else ""
    if scheme and len(scheme) > 1:  # one letter: a Windows drive, not a scheme
        if scheme not in RESOLVERS:
            known = ", ".join(f"{s}:" for s in sorted(RESOLVERS)) or "none here; run it through `sweep`"
            raise CheckpointError(f"checkpoint '{ref}': no resolver for '{scheme}:' URIs (known: {known})")
        return RESOLVERS[scheme](ref)
    path = Path(ref).expanduser()
    if not path.is_file():
        raise CheckpointError(f"checkpoint '{ref}' not found; give the path of a policy .npz (sweep train writes them)")
    return path


_LOADED: dict[tuple[str, int, int], Checkpoint] = {}


def load(ref: str) -> Checkpoint:
    """Read and verify a checkpoint (cached per file version in this process)."""
    path = resolve(ref).resolve()
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _LOADED:
        _LOADED[key] = _read(path, ref)
    return _LOADED[key]


def _read(path: Path, ref: str) -> Checkpoint:
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z[_META]).decode())
            weights = {k[len(_PREFIX) :]: z[k] for k in z.files if k.startswith(_PREFIX)}
    except (OSError, ValueError, KeyError) as e:
        raise CheckpointError(f"checkpoint '{ref}' is not a policy .npz ({type(e).__name__}: {e})") from None
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint '{ref}': format {meta.get('format')!r}, expected {FORMAT!r}")
    digest = content_hash(meta["arch"], weights, meta["provenance"])
    if digest != meta.get("hash"):
        raise CheckpointError(f"checkpoint '{ref}' is corrupt: its content does not match its hash")
    return Checkpoint(meta["arch"], weights, meta["provenance"], digest)
