"""Competition-math answers (MATH-500, MATH-Hard): grade the answer a reply commits to.

Which answer a reply commits to is `data.grading.mathextract`'s policy. Grading goes from cheap and exact to
expensive: (1) the normalised strings are equal; (2) both are plain rationals (`0.5`, `\\frac{1}{2}`,
`-3`, `1\\frac{4}{5}`): exact `Fraction` equality; (3) a word answer given in `\\text{}` ('Evelyn'):
equality ignoring case; (4) both are polynomials or rational functions (with `\\pi` and square roots
of rationals): exact equality without sympy (`data.grading.mathfast`), so most checks never wait for math-verify;
(5) math-verify in a worker process under a CPU-time limit (`data.grading.mathcheck`), which a grader starts in
the background when it is made, so it is warm by the time a check needs it.
Model text is never evaluated here: it is cut, normalised with linear-time regexes, refused when it
looks like a computation bomb (`too_costly`) or its brackets do not balance, and only then handed to
math-verify. An answer math-verify cannot read is unparsable ('refused'); a check that runs out of CPU
time twice is unparsable too, with the reason 'timeout' (`MathGrader.explain`).

`canonical()` is the normalised answer, with rationals written exactly (`0.5`, `1/3`), so votes count
`0.5`, `\\frac12` and `\\dfrac{1}{2}` as one answer; equivalent forms that differ in more than spelling
(`\\frac{1}{\\sqrt2}` vs `\\frac{\\sqrt2}{2}`) stay distinct answers in the vote, though both grade
correct. Rational golds are matched exactly (`4.666` is not `\\frac{14}{3}`); against an irrational gold,
math-verify accepts a decimal that agrees to 6 places.
"""

from __future__ import annotations

import re
import threading

from data.grading.mathcheck import Result, checker
from data.grading.mathextract import read_math
from data.grading.mathfast import equivalent as exact_equivalent
from data.grading.mathnorm import MAX_ANSWER_CHARS, exact_text, normalize, rational, too_costly
from data.grading.outcome import ERROR, NO_ANSWER, REFUSED, TIMEOUT, Graded
from data.types import AnswerKind, Verdict

__all__ = [
    "MAX_ANSWER_CHARS",
    "MathGrader",
    "canonical_math",
    "exact_text",
    "extract_answer",
    "normalize",
    "rational",
    "too_costly",
]

_CACHE_SIZE = 8192  # math-verify verdicts kept per process, oldest dropped first
_verdict_cache: dict[tuple[str, str], Result] = {}
_cache_lock = threading.Lock()
_WORD_GOLD = re.compile(r"\s*\\(?:text|textbf|mbox)\s*\{\s*([A-Za-z][A-Za-z ]{1,40})\}\s*\.?\s*")
_REASON_OF: dict[str, str] = {"unparsed": REFUSED, "timeout": TIMEOUT, "error": ERROR}


def extract_answer(output: str) -> str | None:
    """The LaTeX answer `output` commits to (`data.grading.mathextract`), or None."""
    return read_math(output)[0]


def _unbalanced(norm: str) -> bool:
    """Brackets that cannot pair up ('[4' from a cut JSON list): intervals pair any opener with any closer."""
    return norm.count("(") + norm.count("[") != norm.count(")") + norm.count("]")


def read_canonical(output: str) -> tuple[str | None, str]:
    """The canonical form of the answer in `output` (see the module doc), or None and why: 'no answer',
    'ambiguous' (several answers, a hedge) or 'refused' (brackets that do not pair up)."""
    answer, reason = read_math(output)
    if answer is None:
        return None, reason or NO_ANSWER
    norm = normalize(answer)
    if not norm:
        return None, NO_ANSWER
    if _unbalanced(norm):
        return None, REFUSED
    value = rational(norm)
    return (norm if value is None else exact_text(value)), ""


def canonical_math(output: str) -> str | None:
    """The canonical form of the answer in `output` (see the module doc), or None when there is none."""
    return read_canonical(output)[0]


def _checked(answer: str, gold: str) -> Result:
    """math-verify's verdict, cached: a vote or a rerun asks the same pair many times."""
    with _cache_lock:
        cached = _verdict_cache.get((answer, gold))
    if cached is not None:
        return cached
    result = checker().equivalent(answer, gold)
    if result in ("equal", "different", "unparsed", "gold_unparsed"):  # never a timeout or an error
        with _cache_lock:
            _verdict_cache[(answer, gold)] = result
            while len(_verdict_cache) > _CACHE_SIZE:
                del _verdict_cache[next(iter(_verdict_cache))]
    return result


class MathGrader:
    """Grades LaTeX answers against a LaTeX gold (see the module doc for the order of checks)."""

    kind: AnswerKind = "math"

    def __init__(self) -> None:
        start_soon = getattr(checker(), "start_soon", None)  # a test's stand-in checker may not have it
        if start_soon is not None:
            start_soon()

    def canonical(self, output: str) -> str | None:
        return canonical_math(output)

    def read(self, output: str) -> tuple[str | None, str]:
        """The canonical answer, or None and why (`data.grading.outcome.REASONS`): what `canonical` gives, with its reason."""
        return read_canonical(output)

    def explain(self, output: str, gold: str) -> Graded:
        """The verdict with the answer read and, when unparsable, why ('timeout' apart from the rest)."""
        gold_norm = normalize(gold)
        if not gold_norm:
            raise ValueError(f"gold {gold[:80]!r} is empty")
        answer, reason = read_math(output)
        norm = normalize(answer) if answer is not None else ""
        if not norm:
            return Graded("unparsable", None, reason or NO_ANSWER)
        value, gold_value = rational(norm), rational(gold_norm)
        shown = norm if value is None else exact_text(value)
        if norm == gold_norm:
            return Graded("correct", shown)
        if value is not None and gold_value is not None:
            return Graded("correct" if value == gold_value else "wrong", shown)
        if (word := _WORD_GOLD.fullmatch(gold)) is not None:
            same = norm.casefold() == "".join(word[1].split()).casefold()
            return Graded("correct" if same else "wrong", shown)
        if too_costly(norm) or _unbalanced(norm):
            return Graded("unparsable", shown, REFUSED)
        result = exact_equivalent(norm, gold_norm) or _checked(norm, gold_norm)
        if result == "equal":
            return Graded("correct", shown)
        if result in ("different", "gold_unparsed"):
            return Graded("wrong", shown)
        return Graded("unparsable", shown, _REASON_OF.get(result, ERROR))

    def grade(self, output: str, gold: str) -> Verdict:
        return self.explain(output, gold).verdict
