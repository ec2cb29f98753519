"""Why an output is unparsable is told apart: a math check that ran out of time ('timeout') is counted
separately from no answer found, in `Graded.reason` and in the gold check's report; a check that times
out once is run again before 'timeout' is the answer."""

from __future__ import annotations

from typing import Any

import pytest

from data import grade
from data.benchmarks.check import check_samples
from data.grading import mathgrade
from data.grading.graders import ChoiceGrader, MathGrader, NumericGrader
from data.grading.mathcheck import MathChecker
from data.grading.outcome import AMBIGUOUS, NO_ANSWER, REFUSED, TIMEOUT
from data.types import Sample


class _TimingOut:
    """A math checker whose every check runs out of time."""

    def equivalent(self, answer: str, gold: str, **_: Any) -> str:
        return "timeout"


def test_a_timed_out_math_check_is_unparsable_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mathgrade, "checker", lambda: _TimingOut())
    monkeypatch.setattr(mathgrade, "_verdict_cache", {})
    graded = MathGrader().explain(
        "\\boxed{\\sin^2 x+\\cos^2 x}", "1"
    )  # past the fast path: math-verify decides
    assert (graded.verdict, graded.reason, graded.answer) == ("unparsable", TIMEOUT, "\\sin^2x+\\cos^2x")
    assert mathgrade._verdict_cache == {}  # a timeout is never cached: the next call checks again


def test_reasons_tell_no_answer_from_several_answers_and_refusals() -> None:
    assert MathGrader().explain("no answer here", "5").reason == NO_ANSWER
    assert MathGrader().explain("\\boxed{9^{9^{9^{9}}}}", "5").reason == REFUSED
    assert NumericGrader().explain("The answer is 18 or 20.", "18").reason == AMBIGUOUS
    assert NumericGrader().explain("I don't know", "18").reason == NO_ANSWER
    assert ChoiceGrader(4).explain("B or C", "B").reason == AMBIGUOUS
    assert ChoiceGrader(4).explain("Answer: E", "B").reason == REFUSED
    correct = NumericGrader().explain("#### 18", "18")
    assert (correct.verdict, correct.answer, correct.reason) == ("correct", "18", "")


def test_issue_examples_through_data_grade() -> None:
    assert grade("mmlu", '{"answer": "b"}', "B") == "correct"
    assert grade("mmlu", '{"answer": "B"}', "B") == "correct"
    assert grade("gsm8k", '{"answer": "4, 2, 1, 2, 3"}', "4") == "unparsable"
    assert grade("gsm8k", '{"answer": [4, 2, 1, 2, 3]}', "4") == "unparsable"
    assert grade("math500", "no answer here", "5") == "unparsable"
    assert grade("gsm8k", "2.5e3", "2500") == "correct"
    assert grade("gsm8k", "The answer is 4 + 3 = 7", "7") == "correct"
    assert grade("gsm8k", "The answer is 4 + 3 = 7", "4") == "wrong"


def test_the_gold_check_counts_timeouts_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mathgrade, "checker", lambda: _TimingOut())
    monkeypatch.setattr(mathgrade, "_verdict_cache", {})
    samples = [
        Sample(
            id="m-1",
            question="q",
            gold="1",
            kind="math",
            metadata={"solution": "so $\\boxed{\\sin^2 x+\\cos^2 x}$"},
        ),
        Sample(id="m-2", question="q", gold="5", kind="math", metadata={"solution": "no answer here"}),
        Sample(id="m-3", question="q", gold="7", kind="math", metadata={"solution": "so $\\boxed{7}$"}),
    ]
    report = check_samples("math500", "test", samples)
    assert report.summary() == "3 records: 1 correct, 0 wrong, 2 unparsable (no answer 1, timeout 1)"
    assert ("m-1", "solution", "unparsable (timeout)") in report.failures
    assert ("m-2", "solution", "unparsable (no answer)") in report.failures
    assert not report.ok


def test_a_check_that_times_out_once_is_run_again(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter(["timeout", "equal"])
    checker = MathChecker()
    monkeypatch.setattr(checker, "_ask_restarting", lambda *args: next(answers))
    assert checker.equivalent("1", "1") == "equal"
    assert checker.retries == 1
    twice = iter(["timeout", "timeout", "equal"])
    monkeypatch.setattr(checker, "_ask_restarting", lambda *args: next(twice))
    assert checker.equivalent("1", "1") == "timeout"  # once more, not forever
    assert checker.retries == 2
