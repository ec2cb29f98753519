"""The differential suite: the answer formats other graders' test suites pin down, and the phrasing
families of hedged and corrected answers, each with the verdict our extraction policy gives it
(docs/benchmarks.md), plus wrong-answer mirrors: the same text against golds it must never be credited for.

Cases live in tests/corpus/differential_{numeric,choice,math}.jsonl, written for the classes of
Math-Verify's tests, the MATH `is_equiv` tests (Hendrycks), Qwen2.5-Math's grader, lm-eval's gsm8k,
gsm8k-cot, mmlu, gpqa and minerva_math answer formats, and the issue (`source`, `family`). Each has an
`intent`: 'right' (the text commits to the gold), 'wrong' (to another answer) or 'none' (to several,
or none). Two rates are measured and asserted: answers credited although the text does not commit to
the gold (must be 0, mirrors included), and right answers read as correct (must be at least 95 %).
Every case's verdict is pinned too, so a change of policy shows up case by case.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from data.grading.graders import AnyGrader, ChoiceGrader, MathGrader, NumericGrader
from data.grading.outcome import REASONS

CORPUS = Path(__file__).parent / "corpus"
KINDS = ("numeric", "choice", "math")
MIN_CASES = 500
MIN_RIGHT_READ = 0.95


def _load(kind: str) -> list[dict[str, Any]]:
    path = CORPUS / f"differential_{kind}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


CASES = {kind: _load(kind) for kind in KINDS}


def _grader(case: dict[str, Any]) -> AnyGrader:
    if case["kind"] == "numeric":
        return NumericGrader()
    if case["kind"] == "math":
        return MathGrader()
    return ChoiceGrader(case["n_choices"], case["choices"])


@dataclass
class Outcome:
    """What grading one kind's cases gave: failures listed as lines, and the two rates' counts."""

    cases: int = 0
    mirrors: int = 0
    credited_wrong: list[str] | None = None
    mismatches: list[str] | None = None
    right: int = 0
    right_read: int = 0

    @property
    def rate(self) -> float:
        return self.right_read / self.right if self.right else 1.0


def _grade_kind(kind: str) -> Outcome:
    out = Outcome(credited_wrong=[], mismatches=[])
    assert out.credited_wrong is not None and out.mismatches is not None
    for i, case in enumerate(CASES[kind]):
        grader, where = _grader(case), f"{kind}[{i}] {case['family']}: {case['output'][:70]!r}"
        graded = grader.explain(case["output"], case["gold"])
        out.cases += 1
        if graded.verdict != case["verdict"]:
            out.mismatches.append(
                f"{where} vs {case['gold']!r}: {graded.verdict} ({graded.answer!r}), want {case['verdict']}"
            )
        if graded.verdict == "unparsable" and graded.reason not in REASONS:
            out.mismatches.append(f"{where}: unparsable without a known reason ({graded.reason!r})")
        if case["intent"] == "right":
            out.right += 1
            out.right_read += graded.verdict == "correct"
        elif graded.verdict == "correct":
            out.credited_wrong.append(f"{where} credited against {case['gold']!r} ({case['intent']})")
        canonical = grader.canonical(case["output"])  # what the vote compares grades as the text does
        if (canonical is None and graded.verdict != "unparsable") or (
            canonical is not None and grader.grade(canonical, case["gold"]) != graded.verdict
        ):
            out.mismatches.append(f"{where}: canonical {canonical!r} grades unlike the text")
        mirror_verdict = "unparsable" if case["verdict"] == "unparsable" else "wrong"
        for gold in case["not"]:
            out.mirrors += 1
            verdict = grader.grade(case["output"], gold)
            if verdict == "correct":
                out.credited_wrong.append(f"{where} credited against mirror {gold!r}")
            elif verdict != mirror_verdict:
                out.mismatches.append(f"{where} vs mirror {gold!r}: {verdict}, want {mirror_verdict}")
    return out


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    return {kind: _grade_kind(kind) for kind in KINDS}


def test_suite_is_large_and_covers_its_sources() -> None:
    total = sum(len(cases) for cases in CASES.values())
    assert total >= MIN_CASES, total
    sources = Counter(c["source"] for cases in CASES.values() for c in cases)
    for source in (
        "math-verify",
        "hendrycks-math",
        "qwen2.5-math",
        "lm-eval/gsm8k",
        "lm-eval/minerva",
        "issue-11",
    ):
        assert sources[source] >= 10, (source, sources)
    for kind, cases in CASES.items():
        assert len(cases) >= 150, kind
        assert {c["intent"] for c in cases} == {"right", "wrong", "none"}, kind
        assert sum(len(c["not"]) for c in cases) >= len(cases), kind  # mirrors: at least one per case
        assert all(c["verdict"] in ("correct", "wrong", "unparsable") for c in cases)


@pytest.mark.parametrize("kind", KINDS)
def test_no_wrong_answer_is_credited(kind: str, outcomes: dict[str, Outcome]) -> None:
    out = outcomes[kind]
    assert out.credited_wrong == [], "\n".join(out.credited_wrong or [])


@pytest.mark.parametrize("kind", KINDS)
def test_every_case_grades_as_pinned(kind: str, outcomes: dict[str, Outcome]) -> None:
    out = outcomes[kind]
    assert out.mismatches == [], "\n".join(out.mismatches or [])


@pytest.mark.parametrize("kind", KINDS)
def test_right_answers_are_read(kind: str, outcomes: dict[str, Outcome]) -> None:
    out = outcomes[kind]
    unread = [
        f"{kind}[{i}] {c['family']}: {c['output'][:70]!r}"
        for i, c in enumerate(CASES[kind])
        if c["intent"] == "right" and c["verdict"] != "correct"
    ]
    print(
        f"\n{kind}: {out.cases} cases + {out.mirrors} mirrors, credited wrong {len(out.credited_wrong or [])}, "
        f"right answers read {out.right_read}/{out.right} = {out.rate:.3f}"
    )
    assert out.rate >= MIN_RIGHT_READ, "right answers read as unparsable or wrong:\n" + "\n".join(unread)


def test_overall_rates(outcomes: dict[str, Outcome]) -> None:
    right = sum(o.right for o in outcomes.values())
    read = sum(o.right_read for o in outcomes.values())
    credited = sum(len(o.credited_wrong or []) for o in outcomes.values())
    cases = sum(o.cases for o in outcomes.values())
    mirrors = sum(o.mirrors for o in outcomes.values())
    print(
        f"\nall: {cases} cases + {mirrors} mirrors, credited wrong {credited}, right read {read}/{right} = {read / right:.3f}"
    )
    assert credited == 0
    assert read / right >= MIN_RIGHT_READ
