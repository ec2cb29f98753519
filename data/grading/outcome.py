"""A grading with its reasons: the verdict, the answer read, and why an output was unparsable.

`Verdict` stays the three words the rest of the project counts; `Graded` is what a caller that wants
to tell "no answer found" from "the math check ran out of time" asks for (`grader.explain`).
"""

from __future__ import annotations

from dataclasses import dataclass

from data.types import Verdict

# Why an output is unparsable: the reasons `Graded.reason` takes.
NO_ANSWER = "no answer"  # nothing in the text states an answer
AMBIGUOUS = "ambiguous"  # it states several, hedges, denies its answer, or calculates without a result
REFUSED = "refused"  # the answer is no math (or too costly to check: a power tower, a huge factorial)
TIMEOUT = "timeout"  # the math check ran out of CPU time twice
ERROR = "error"  # the math checker failed on it
REASONS = (NO_ANSWER, AMBIGUOUS, REFUSED, TIMEOUT, ERROR)


@dataclass(frozen=True)
class Graded:
    """`verdict`; `answer`, the canonical answer read (None when none was); `reason`, why an unparsable
    output is one (one of REASONS; empty for 'correct' and 'wrong')."""

    verdict: Verdict
    answer: str | None
    reason: str = ""
