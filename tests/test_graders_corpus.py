"""The corpus of tricky model outputs (tests/corpus/grader_cases.jsonl) grades as expected, and the
canonical answer a grader gives grades exactly as the output it came from (votes use canonical forms).

tests/corpus/hedge_cases.jsonl pins issue 34's rules — hedges between answers are ambiguous (never
credited, counted apart), the final stated answer wins over an intermediate one, option-by-option
walkthroughs, percent words in boxes, delimiters split over lines, the exact fast path — each rule with
cases from the peers' suites (their repository and file in `source`) and cases of our own."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data import grade
from data.grading.graders import AnyGrader, ChoiceGrader, MathGrader, NumericGrader, canonical_number
from data.grading.mathgrade import exact_text, extract_answer, normalize, rational
from data.grading.mathspans import spans
from data.grading.outcome import AMBIGUOUS

CORPUS = Path(__file__).parent / "corpus" / "grader_cases.jsonl"
CASES: list[dict[str, Any]] = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
HEDGES = Path(__file__).parent / "corpus" / "hedge_cases.jsonl"
HEDGE_CASES: list[dict[str, Any]] = [
    json.loads(line) for line in HEDGES.read_text(encoding="utf-8").splitlines()
]
RULES = (
    "hedge-letters", "conflicting-answers", "final-number-differs", "or-final", "final-over-intermediate",
    "walkthrough", "percent-words", "split-delimiters", "sub-case-conclusion", "fast-path",
)  # fmt: skip
PEER = re.compile(r"[\w.-]+/[\w.-]+: [\w./-]+")  # 'owner/repo: path/in/repo'


def _grader(case: dict[str, Any]) -> AnyGrader:
    if case["kind"] == "numeric":
        return NumericGrader()
    if case["kind"] == "math":
        return MathGrader()
    return ChoiceGrader(case["n_choices"], case["choices"])


def test_corpus_is_large_and_balanced() -> None:
    assert len(CASES) >= 200
    kinds = {k: [c for c in CASES if c["kind"] == k] for k in ("numeric", "choice", "math")}
    for kind, cases in kinds.items():
        assert len(cases) >= 60, kind
        assert {c["verdict"] for c in cases} == {"correct", "wrong", "unparsable"}, kind


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{c['kind']}" for i, c in enumerate(CASES)])
def test_corpus_case(case: dict[str, Any]) -> None:
    grader = _grader(case)
    assert grader.grade(case["output"], case["gold"]) == case["verdict"], case.get("note", "")
    canonical = grader.canonical(case["output"])
    if canonical is None:
        assert case["verdict"] == "unparsable"
    else:  # what the vote compares grades like the output itself
        assert grader.grade(canonical, case["gold"]) == case["verdict"], canonical


def test_hedge_corpus_cites_the_peers_and_goes_beyond_them() -> None:
    assert {c["rule"] for c in HEDGE_CASES} == set(RULES)
    for case in HEDGE_CASES:
        assert case["source"] == "ours" or PEER.fullmatch(case["source"]), case["source"]
    for rule in RULES:
        sources = [c["source"] for c in HEDGE_CASES if c["rule"] == rule]
        assert any(s != "ours" for s in sources), f"{rule}: no case from a peer's suite"
        assert "ours" in sources, f"{rule}: no case of our own"
    assert sum(c.get("reason") == AMBIGUOUS for c in HEDGE_CASES) >= 25


@pytest.mark.parametrize("case", HEDGE_CASES, ids=[f"{i}-{c['rule']}" for i, c in enumerate(HEDGE_CASES)])
def test_hedge_case(case: dict[str, Any]) -> None:
    grader = _grader(case)
    graded = grader.explain(case["output"], case["gold"])
    assert graded.verdict == case["verdict"], (case["note"], graded)
    if "reason" in case:
        assert graded.reason == case["reason"], graded
    canonical, reason = grader.read(case["output"])
    assert canonical == grader.canonical(case["output"])
    if canonical is None:
        assert case["verdict"] == "unparsable" and reason == graded.reason
    else:
        assert grader.grade(canonical, case["gold"]) == case["verdict"], canonical


@pytest.mark.parametrize(
    "case", [c for c in HEDGE_CASES if c.get("reason") == AMBIGUOUS], ids=lambda c: c["output"][:40]
)
def test_an_ambiguous_answer_is_never_credited(case: dict[str, Any]) -> None:
    grader = _grader(case)
    assert case["named"], "an ambiguous case names the answers it hedges between"
    for gold in [case["gold"], *case["named"]]:  # whichever of its answers the gold is
        graded = grader.explain(case["output"], gold)
        assert (graded.verdict, graded.answer, graded.reason) == ("unparsable", None, AMBIGUOUS), gold


def test_inline_math_split_over_a_line_is_one_span_and_dollar_amounts_are_none() -> None:
    assert [s.content for s in spans("Final answer: $x =\n 3$.")] == ["x =\n 3"]
    assert [s.content for s in spans("The answer is $\\frac{1}{2}\n+1$.")] == ["\\frac{1}{2}\n+1"]
    assert spans("It costs $5 and then\nanother $6.") == []  # two dollar amounts
    assert spans("It costs $5 and then\nanother 6$ more.") == []  # prose inside: no math
    assert spans("Prices:\n$5\n$6") == []  # the closer opens the next line: no span
    assert spans("$ \n 9 \n $") == []  # nothing on the opening line (Math-Verify reads none either)
    assert spans("Answer: $\nx = 3$") == []
    assert spans("$x =\n\n 3$") == []  # a paragraph break ends inline math


def test_normalize_is_idempotent_on_corpus_answers() -> None:
    for case in CASES + HEDGE_CASES:
        if case["kind"] != "math" or (answer := extract_answer(case["output"])) is None:
            continue
        once = normalize(answer)
        assert normalize(once) == once, answer


def test_equivalent_math_answers_share_one_canonical_form() -> None:
    grader = MathGrader()
    forms = ["\\boxed{\\frac{1}{2}}", "\\boxed{\\dfrac12}", "0.5", "$\\tfrac{1}{2}$", "\\boxed{.50}", "1/2"]
    assert {grader.canonical(f) for f in forms} == {"0.5"}
    assert grader.canonical("\\boxed{\\frac{1}{3}}") == "1/3"
    assert grader.canonical("\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}") == "(3,\\frac{\\pi}{2})"


def test_data_grade_by_benchmark_name() -> None:
    assert grade("gsm8k", "#### 1,000", "1000") == "correct"
    assert grade("math500", "\\boxed{\\frac{1}{2}}", "0.5") == "correct"
    assert grade("math_hard", "no answer here at all\nreally", "5") == "unparsable"
    assert grade("mmlu_pro", "Answer: J", "J") == "correct"  # up to 10 options
    assert grade("mmlu", "Answer: J", "A") == "unparsable"  # 4 options
    assert grade("truthfulqa", "(M)", "M") == "correct"  # up to 13 options
    assert grade("gpqa_diamond", "The answer is (b)", "B") == "correct"
    with pytest.raises(KeyError, match="did you mean 'gpqa_diamond'"):
        grade("gpqa-diamond", "A", "A")


@settings(max_examples=300, deadline=None)
@given(st.fractions(max_denominator=10**6).filter(lambda q: abs(q) < 10**12))
def test_exact_text_round_trips(value: Fraction) -> None:
    assert rational(normalize(exact_text(value))) == value


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=-(10**15), max_value=10**15), st.sampled_from(["{:,}", "{}", "${:,}", "{} dollars"])
)
def test_integers_read_back_in_any_spelling(value: int, spelling: str) -> None:
    text = spelling.format(value).replace("$-", "-$")
    assert canonical_number(f"The answer is {text}.") == str(value)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=0, max_value=9),
    st.sampled_from(["{}", "({})", "{}.", "Answer: {}", "**{}**", "\\boxed{{{}}}"]),
)
def test_letters_read_back_in_any_spelling(index: int, spelling: str) -> None:
    letter = "ABCDEFGHIJ"[index]
    assert ChoiceGrader(10).grade(spelling.format(letter), letter) == "correct"
    other = "ABCDEFGHIJ"[(index + 1) % 10]
    assert ChoiceGrader(10).grade(spelling.format(other), letter) == "wrong"
