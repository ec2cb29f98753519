"""The corpus of tricky model outputs (tests/corpus/grader_cases.jsonl) grades as expected, and the
canonical answer a grader gives grades exactly as the output it came from (votes use canonical forms)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data import grade
from data.graders import AnyGrader, ChoiceGrader, MathGrader, NumericGrader, canonical_number
from data.mathgrade import exact_text, extract_answer, normalize, rational

CORPUS = Path(__file__).parent / "corpus" / "grader_cases.jsonl"
CASES: list[dict[str, Any]] = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]


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


def test_normalize_is_idempotent_on_corpus_answers() -> None:
    for case in CASES:
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
