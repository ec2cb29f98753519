"""The benchmark catalog: each benchmark module registers its loader here with `@benchmark(...)`.
`data.benchmarks.registry` imports every module (so the catalog is full) and serves loads from it; this module
imports no benchmark, so the modules can import it without a cycle."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from common.registry import Registry
from data.benchmarks.splits import Scheme
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


# The builtin loaders register when `data.benchmarks.registry` imports their modules.
CATALOG: Registry[BenchmarkInfo] = Registry("benchmark", builtins=("data.benchmarks.registry",))


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
        CATALOG[name] = BenchmarkInfo(name, loader, kind, n_choices, splits, dict(schemes or {}), source)
        return loader

    return deco


def default_benchmark_dir() -> Path | None:
    """$DEBATE_SWEEP_BENCHMARKS when set, else `shared/benchmarks` beside the repository if it exists."""
    env = os.environ.get(BENCHMARKS_ENV)
    if env:
        return Path(env).expanduser()
    beside_repo = Path(__file__).resolve().parents[3] / "shared" / "benchmarks"  # <repo>/../shared
    return beside_repo if beside_repo.is_dir() else None
