"""Policy checkpoints: one `.npz` file holding the network's weights (numpy arrays), its architecture,
the config that made it (provenance: the training config, the update) and a content hash over all of
them. Readable with numpy alone (no torch, no pickle), so a sweep config naming a checkpoint validates,
and its episode ids are computed, without loading torch.

A checkpoint is named by a path, or by a URI whose scheme a higher floor registers a resolver for
(`sweep` registers MLflow's `runs:/<run id>/<artifact path>`), which turns it into a local path.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from debate.policies import shapes
from debate.spec import canonical_json

FORMAT = "debate-sweep/policy/1"
_META = "__meta__"
_PREFIX = "w."

FIX = "give the path of a policy .npz sweep train wrote (policy.npz, checkpoints/best.npz, policy-u*.npz)"
# What a damaged or foreign file makes numpy and zipfile raise while it is read (never unpickled).
_UNREADABLE = (ValueError, KeyError, EOFError, TypeError, AttributeError, zipfile.BadZipFile, zlib.error)

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


def content_hash(
    arch: Mapping[str, Any], weights: Mapping[str, np.ndarray], provenance: Mapping[str, Any]
) -> str:
    """A hex digest of everything a checkpoint holds (names, dtypes, shapes and bytes of the weights)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(canonical_json({"format": FORMAT, "arch": arch, "provenance": provenance}).encode())
    for name in sorted(weights):
        a = np.ascontiguousarray(weights[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save_checkpoint(
    path: str | Path,
    arch: Mapping[str, Any],
    weights: Mapping[str, np.ndarray],
    provenance: Mapping[str, Any],
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
    try:
        with open(tmp, "wb") as f:
            np.savez(f, **members)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    except BaseException:  # a full disk, an interrupt: never leave a half-written temp file
        tmp.unlink(missing_ok=True)
        raise
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
    try:
        mode = path.stat().st_mode  # follows links: a link to a policy is fine, a loop is not
    except OSError as e:
        what = {errno.ENOENT: "not found", errno.ELOOP: "is a symlink loop"}.get(e.errno or 0)
        raise CheckpointError(
            f"checkpoint '{ref}' {what or f'cannot be read ({e.strerror})'}; {FIX}"
        ) from None
    if not stat.S_ISREG(mode):
        what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise CheckpointError(f"checkpoint '{ref}' is {what}; {FIX}")
    return path


_LOADED: dict[tuple[str, int, int], Checkpoint] = {}


def load(ref: str, kind: str | None = None) -> Checkpoint:
    """Read and verify a checkpoint (cached per file version in this process). `kind`: the method whose
    policy it must hold ("rumad" or "cpp", `shapes.kind_of`), when the caller runs one."""
    try:
        path = resolve(ref).resolve()
        st = path.stat()
    except (OSError, RuntimeError) as e:  # a file a resolver fetched, gone or looping since
        raise CheckpointError(f"checkpoint '{ref}' cannot be read ({e}); {FIX}") from None
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _LOADED:
        _LOADED[key] = _read(path, ref)
    held = shapes.kind_of(_LOADED[key].arch)
    if kind is not None and held != kind:
        fix = f"give a policy that sweep train wrote for method {kind}"
        raise CheckpointError(f"checkpoint '{ref}' holds a {held} policy, not a {kind} one; {fix}")
    return _LOADED[key]


def _read(path: Path, ref: str) -> Checkpoint:
    try:
        with open(path, "rb") as f, np.load(f, allow_pickle=False) as z:  # never unpickles
            meta = json.loads(bytes(z[_META]).decode())
            weights = {k[len(_PREFIX) :]: z[k] for k in z.files if k.startswith(_PREFIX)}
    except OSError as e:
        raise CheckpointError(f"checkpoint '{ref}' cannot be read ({e.strerror or e}); {FIX}") from None
    except _UNREADABLE as e:
        why = " ".join(f"{type(e).__name__}: {e}".split())[:160]  # one line, whatever the library wrote
        raise CheckpointError(
            f"checkpoint '{ref}' is not a policy .npz (truncated or foreign file; {why}); {FIX}"
        ) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise CheckpointError(f"checkpoint '{ref}': format {found!r}, expected {FORMAT!r}; {FIX}")
    arch, provenance = meta.get("arch"), meta.get("provenance")
    if not isinstance(arch, dict) or not isinstance(provenance, dict) or not weights:
        missing = "its architecture" if not isinstance(arch, dict) else "weights"
        missing = "its provenance" if isinstance(arch, dict) and not isinstance(provenance, dict) else missing
        raise CheckpointError(f"checkpoint '{ref}' lacks {missing}; {FIX}")
    digest = content_hash(arch, weights, provenance)
    if digest != meta.get("hash"):
        raise CheckpointError(f"checkpoint '{ref}' is corrupt: its content does not match its hash; {FIX}")
    try:
        wrong = shapes.mismatch(arch, weights)
    except ValueError as e:
        wrong = str(e)
    if wrong:
        raise CheckpointError(f"checkpoint '{ref}': {wrong}; {FIX}")
    return Checkpoint(arch, weights, provenance, digest)
