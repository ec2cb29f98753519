"""Benchmarks and graders: load items as `Sample`s, and grade model output against their golds.

Benchmarks (by name): `arith` (generated), `gsm8k`, `math500`, `math_hard`, `mmlu`, `mmlu_pro`,
`gpqa_main`, `gpqa_diamond`, `truthfulqa`. Graders return 'correct', 'wrong' or 'unparsable';
`explain` also gives the answer read and why an output is unparsable (README, "How an answer is read").
"""

from __future__ import annotations

from data.benchmarks.catalog import benchmark, default_benchmark_dir
from data.benchmarks.check import CheckReport, check_benchmark
from data.benchmarks.formats import format_block
from data.benchmarks.registry import benchmark_info, benchmark_names, load_benchmark
from data.grading.graders import (
    ChoiceGrader,
    MathGrader,
    NumericGrader,
    canonical_choice,
    canonical_math,
    canonical_number,
    grader_for,
    grader_for_kind,
)
from data.grading.outcome import Graded
from data.types import Sample, Verdict

__all__ = [
    "CheckReport",
    "ChoiceGrader",
    "Graded",
    "MathGrader",
    "NumericGrader",
    "Sample",
    "Verdict",
    "benchmark",
    "benchmark_info",
    "benchmark_names",
    "canonical_choice",
    "canonical_math",
    "canonical_number",
    "check_benchmark",
    "default_benchmark_dir",
    "explain",
    "format_block",
    "grade",
    "grader_for",
    "load_benchmark",
]


def grade(benchmark: str, output: str, gold: str) -> Verdict:
    """Grade `output` against `gold` with the grader for `benchmark`'s answer kind: 'correct', 'wrong' or
    'unparsable'. (Without the item's options, an answer given as option text is unparsable: grade a
    `Sample` with `grader_for(sample)` to accept those.) Unknown names raise KeyError with a did-you-mean."""
    return explain(benchmark, output, gold).verdict


def explain(benchmark: str, output: str, gold: str) -> Graded:
    """`grade`, with the answer read and, when unparsable, why ('no answer', 'ambiguous', 'refused',
    'timeout', 'error')."""
    info = benchmark_info(benchmark)
    return grader_for_kind(info.kind, info.n_choices).explain(output, gold)
