"""Benchmarks registered by name; `load_benchmark` returns a deterministic subset of one split."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from actors.registry import unknown_name_message
from data.types import AnswerKind, Sample

Loader = Callable[[str, str | None], list[Sample]]
BENCHMARKS_ENV = "DEBATE_SWEEP_BENCHMARKS"


@dataclass(frozen=True)
class BenchmarkInfo:
    """A registered benchmark: its loader and the kind of answer all of its items have."""

    name: str
    loader: Loader
    kind: AnswerKind
    n_choices: int = 4  # only read for kind "choice": how many option letters the grader accepts


_BENCHMARKS: dict[str, BenchmarkInfo] = {}


def benchmark(name: str, kind: AnswerKind = "numeric", n_choices: int = 4) -> Callable[[Loader], Loader]:
    """Register `fn(split, path) -> list[Sample]` (the full split, in file order) under `name`."""

    def deco(loader: Loader) -> Loader:
        _BENCHMARKS[name] = BenchmarkInfo(name=name, loader=loader, kind=kind, n_choices=n_choices)
        return loader

    return deco


def benchmark_names() -> list[str]:
    _load_builtins()
    return sorted(_BENCHMARKS)


def benchmark_info(name: str) -> BenchmarkInfo:
    """The registration of `name`; unknown names raise KeyError with a did-you-mean."""
    _load_builtins()
    if name not in _BENCHMARKS:
        raise KeyError(unknown_name_message("benchmark", name, sorted(_BENCHMARKS)))
    return _BENCHMARKS[name]


def load_benchmark(
    name: str,
    split: str = "test",
    limit: int | None = None,
    offset: int = 0,
    seed: int | None = None,
    path: str | None = None,
) -> list[Sample]:
    """Items `offset .. offset+limit` of split `split`, after a stable shuffle by `seed` when one is given.

    The same arguments always give the same items in the same order, so subsets are reproducible.
    """
    if offset < 0:
        raise ValueError(f"offset must be >= 0, got {offset}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    items = list(benchmark_info(name).loader(split, path))
    if seed is not None:
        random.Random(seed).shuffle(items)
    items = items[offset:]
    return items if limit is None else items[:limit]


def default_benchmark_dir() -> Path | None:
    """$DEBATE_SWEEP_BENCHMARKS when set, else `shared/benchmarks` beside the repository if it exists."""
    env = os.environ.get(BENCHMARKS_ENV)
    if env:
        return Path(env).expanduser()
    beside_repo = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks"
    return beside_repo if beside_repo.is_dir() else None


def _load_builtins() -> None:
    # Importing the modules registers their benchmarks; none reads any data at import time.
    import data.gsm8k  # noqa: F401
    import data.synthetic  # noqa: F401
