"""The graders, and which one grades a sample: numbers (`data.grading.numeric`), option letters (`data.grading.choice`)
and LaTeX math (`data.grading.mathgrade`). Each grading returns 'correct', 'wrong' or 'unparsable'
(no answer could be read: it counts as wrong and is reported apart); each grader's `explain` also
gives the answer read and why an output is unparsable (`data.grading.outcome`), and `read` gives the canonical
answer with that reason. A hedge between answers ('B or C', two 'Answer:' lines that disagree, 'The
answer is 12, so 10 are left') is unparsable with the reason 'ambiguous': never credited, and counted
apart (the `ambiguous` column of a sweep's episodes).

Model output is hostile input: every grader cuts it, reads it with linear-time regexes, and never
evaluates it; math answers are compared by math-verify in a worker process under a CPU-time limit.
"""

from __future__ import annotations

from data.grading.choice import ChoiceGrader, canonical_choice, letters
from data.grading.mathgrade import MathGrader, canonical_math
from data.grading.numeric import NumericGrader, canonical_number, format_fraction
from data.grading.textutil import MAX_CHARS
from data.types import AnswerKind, Sample

AnyGrader = NumericGrader | ChoiceGrader | MathGrader

__all__ = [
    "MAX_CHARS",
    "AnyGrader",
    "ChoiceGrader",
    "MathGrader",
    "NumericGrader",
    "canonical_choice",
    "canonical_math",
    "canonical_number",
    "format_fraction",
    "grader_for",
    "grader_for_kind",
    "letters",
]


def grader_for_kind(kind: AnswerKind, n_choices: int = 4) -> AnyGrader:
    """The grader for an answer kind; choice graders accept the first `n_choices` letters."""
    if kind == "numeric":
        return NumericGrader()
    if kind == "choice":
        return ChoiceGrader(n_choices)
    if kind == "math":
        return MathGrader()
    raise ValueError(f"no grader for answer kind {kind!r} (known: numeric, choice, math)")


def grader_for(sample: Sample) -> AnyGrader:
    """The grader for one sample: its kind; for choice items one that knows the item's options, so an
    answer given as an option's text grades too."""
    if sample.kind == "choice" and sample.choices:
        return ChoiceGrader(len(sample.choices), sample.choices)
    return grader_for_kind(sample.kind)
