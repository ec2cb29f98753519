"""Benchmarks registered by name; `load_benchmark` returns a deterministic subset of one split.

A split is a native one (`test`, `train`, ... as the benchmark's files and Hugging Face name them) or a
part of a partition scheme, `"<scheme>:<part>"` (`cpp:train`; see `data.splits`).
"""

from __future__ import annotations

import difflib
import os
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from actors.registry import unknown_name_message
from data.splits import Scheme, partition
from data.types import AnswerKind, Sample

Loader = Callable[[str, str | None], list[Sample]]
BENCHMARKS_ENV = "DEBATE_SWEEP_BENCHMARKS"


@dataclass(frozen=True)
class BenchmarkInfo:
    """A registered benchmark: its loader and the kind of answer all of its items have."""

    name: str
    loader: Loader
    kind: AnswerKind
    n_choices: int = 4  # only read for kind "choice": the most option letters any item has
    splits: tuple[str, ...] = ("test",)  # native splits, as the files and Hugging Face name them
    schemes: Mapping[str, Scheme] = field(default_factory=dict)  # partition schemes, by name
    source: str = ""  # the Hugging Face dataset users know it by (id and config), for messages

    def split_names(self) -> list[str]:
        """Every split this benchmark accepts: native ones, then '<scheme>:<part>'."""
        parts = [f"{n}:{p}" for n, scheme in sorted(self.schemes.items()) for p in scheme.part_names()]
        return [*self.splits, *parts]


_BENCHMARKS: dict[str, BenchmarkInfo] = {}


def benchmark(
    name: str,
    kind: AnswerKind = "numeric",
    n_choices: int = 4,
    splits: tuple[str, ...] = ("test",),
    schemes: Mapping[str, Scheme] | None = None,
    source: str = "",
) -> Callable[[Loader], Loader]:
    """Register `fn(split, path) -> list[Sample]` (a full native split, in file order) under `name`."""

    def deco(loader: Loader) -> Loader:
        _BENCHMARKS[name] = BenchmarkInfo(
            name, loader, kind, n_choices, splits, dict(schemes or {}), source
        )
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
    items = split_items(benchmark_info(name), split, path)
    if seed is not None:
        random.Random(seed).shuffle(items)
    items = items[offset:]
    return items if limit is None else items[:limit]


def check_split(info: BenchmarkInfo, split: str) -> None:
    """ValueError ('gsm8k has no split 'tset' (did you mean 'test'?); known: ...') unless `split` exists."""
    known = info.split_names()
    if split not in known:
        close = difflib.get_close_matches(split, known, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ValueError(f"{info.name} has no split {split!r}{hint}; known: {', '.join(known)}")


def split_items(info: BenchmarkInfo, split: str, path: str | None = None) -> list[Sample]:
    """Every item of `split` in file order: a native split from the loader, or one part of a scheme."""
    check_split(info, split)
    if ":" not in split:
        return list(info.loader(split, path))
    scheme_name, part = split.split(":", 1)
    scheme = info.schemes[scheme_name]
    pool = info.loader(scheme.pool_split, path)
    parts = partition(
        info.name, scheme_name, scheme, pool, lambda other: benchmark_info(other).loader(scheme.pool_split, path)
    )
    return parts[part]


def default_benchmark_dir() -> Path | None:
    """$DEBATE_SWEEP_BENCHMARKS when set, else `shared/benchmarks` beside the repository if it exists."""
    env = os.environ.get(BENCHMARKS_ENV)
    if env:
        return Path(env).expanduser()
    beside_repo = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks"
    return beside_repo if beside_repo.is_dir() else None


def _load_builtins() -> None:
    # Importing the modules registers their benchmarks; none reads any data at import time.
    import data.competition_math  # noqa: F401
    import data.gpqa  # noqa: F401
    import data.gsm8k  # noqa: F401
    import data.mmlu  # noqa: F401
    import data.synthetic  # noqa: F401
    import data.truthfulqa  # noqa: F401
