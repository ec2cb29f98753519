"""Benchmarks registered by name; `load_benchmark` returns a deterministic subset of one split.

A split is a native one (`test`, `train`, ... as the benchmark's files and Hugging Face name them) or a
part of a partition scheme, `"<scheme>:<part>"` (`cpp:train`; see `data.benchmarks.splits`).
"""

from __future__ import annotations

import random

# Importing the modules registers their benchmarks in the catalog; none reads any data at import time.
import data.benchmarks.competition_math
import data.benchmarks.easy
import data.benchmarks.gpqa
import data.benchmarks.gsm8k
import data.benchmarks.mmlu
import data.benchmarks.synthetic
import data.benchmarks.truthfulqa  # noqa: F401
from common.names import closest
from data.benchmarks.catalog import CATALOG, BenchmarkInfo
from data.benchmarks.splits import partition
from data.types import Sample


def benchmark_names() -> list[str]:
    return sorted(CATALOG)


def benchmark_info(name: str) -> BenchmarkInfo:
    """The registration of `name`; an unknown name raises `UnknownName` (a KeyError) with a did-you-mean."""
    return CATALOG[name]


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
        raise ValueError(
            f"{info.name} has no split {split!r}{closest(split, known)}; known: {', '.join(known)}"
        )


def split_items(info: BenchmarkInfo, split: str, path: str | None = None) -> list[Sample]:
    """Every item of `split` in file order: a native split from the loader, or one part of a scheme."""
    check_split(info, split)
    if ":" not in split:
        return list(info.loader(split, path))
    scheme_name, part = split.split(":", 1)
    scheme = info.schemes[scheme_name]
    pool = info.loader(scheme.pool_split, path)
    parts = partition(
        info.name,
        scheme_name,
        scheme,
        pool,
        lambda other: benchmark_info(other).loader(scheme.pool_split, path),
    )
    return parts[part]
