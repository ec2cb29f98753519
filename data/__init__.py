"""Benchmarks and graders: load items as `Sample`s, and grade model output against their golds."""

from __future__ import annotations

from data.graders import ChoiceGrader, NumericGrader, canonical_choice, canonical_number, grader_for
from data.registry import benchmark, benchmark_names, default_benchmark_dir, load_benchmark
from data.types import Sample, Verdict

__all__ = [
    "ChoiceGrader",
    "NumericGrader",
    "Sample",
    "Verdict",
    "benchmark",
    "benchmark_names",
    "canonical_choice",
    "canonical_number",
    "default_benchmark_dir",
    "grade",
    "grader_for",
    "load_benchmark",
]


def grade(benchmark: str, output: str, gold: str) -> Verdict:
    """Grade `output` against `gold` with the grader for `benchmark`'s answer kind."""
    from data.graders import grader_for_kind
    from data.registry import benchmark_info

    info = benchmark_info(benchmark)
    return grader_for_kind(info.kind, info.n_choices).grade(output, gold)
