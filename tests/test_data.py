"""The data package: answer canonicalisation, graders, the benchmark registry, arith and GSM8K."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from data import Sample, benchmark_names, grade, grader_for, load_benchmark
from data.benchmarks.catalog import default_benchmark_dir
from data.benchmarks.gsm8k import gold_from_solution
from data.benchmarks.synthetic import make_item
from data.grading.graders import ChoiceGrader, NumericGrader, canonical_choice, canonical_number

BENCHMARKS = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks"
GSM8K_TEST = BENCHMARKS / "gsm8k" / "test.jsonl"
needs_gsm8k = pytest.mark.skipif(
    not GSM8K_TEST.is_file(), reason=f"GSM8K test file not found at {GSM8K_TEST} (shared benchmarks absent)"
)

NUMBERS = [
    ("18", "18"),
    ("2,125", "2125"),
    ("1,450,000", "1450000"),
    ("−5", "-5"),
    ("-5", "-5"),
    ("12.50", "12.5"),
    ("18.0", "18"),
    ("18.00", "18"),
    ("3/4", "0.75"),
    ("1/3", "0.3333333333"),
    ("-6/4", "-1.5"),
    ("8/4", "2"),
    ("50%", "50"),
    ("$18", "18"),
    ("18 dollars", "18"),
    ("She has 18 eggs", "18"),
    ("\\boxed{18}", "18"),
    ("#### 18", "18"),
    ("\\frac{3}{4}", "0.75"),
    ("\\$1,000", "1000"),
    ("-$5", "-5"),
    (".5", "0.5"),
    ("The total is 16 - 3 - 4 = 9 eggs, and 9 * 2 = $18.", "18"),
    ("So the answer is \\boxed{42}. Confidence: 4", "42"),
    ("\\boxed{\\$1{,}250.50}", "1250.5"),
    ("work: 3 + 4 = 7\n#### 7\nConfidence: 5", "7"),
    ("The answer is 18. I am 90% sure.", "18"),
    ("Final answer: $2,125 in total, up from 100", "2125"),
    ("My earlier answer was 15, but the real total is 18", "18"),
    ("The answer is: Janet makes 18", "18"),
    ("18th place", "18"),
    ("no idea", None),
    ("", None),
    ("1/0", None),
    ("1" * 60, None),
    ("x" * 20_000 + " 5", None),  # the answer lies past the truncation point
]


@pytest.mark.parametrize(("text", "expected"), NUMBERS)
def test_canonical_number(text: str, expected: str | None) -> None:
    assert canonical_number(text) == expected


CHOICES = [
    ("B", "B"),
    ("(B)", "B"),
    ("B.", "B"),
    ("B)", "B"),
    ("b", "B"),
    ("Answer: B", "B"),
    ("the answer is (c)", "C"),
    ("The correct answer is **D**.", "D"),
    ("\\boxed{B}", "B"),
    ("\\boxed{\\text{C}}", "C"),
    ("A good answer is C", "C"),
    ("A careful reading shows that (D) fits", "D"),
    ("I think B", "B"),
    ("The answer is A because the others fail", "A"),
    ("The best option is B", "B"),
    ("Option C is correct.", "C"),
    ("My answer was B at first, but the answer is D", "D"),
    ("Comparing A and B:\nneither holds.\n\nC", "C"),
    ("E", None),  # out of range for 4 choices
    ("A or B, hard to say", None),
    ("no idea", None),
    ("", None),
]


@pytest.mark.parametrize(("text", "expected"), CHOICES)
def test_canonical_choice(text: str, expected: str | None) -> None:
    assert canonical_choice(text) == expected


def test_canonical_choice_respects_n_choices() -> None:
    assert canonical_choice("Answer: J", n_choices=10) == "J"
    assert canonical_choice("Answer: J", n_choices=4) is None
    assert canonical_choice("I am sure: the answer is (G)", n_choices=10) == "G"
    with pytest.raises(ValueError):
        canonical_choice("A", n_choices=0)


@pytest.mark.parametrize(
    ("output", "gold", "verdict"),
    [
        ("12.50", "12.5", "correct"),
        ("−5", "-5", "correct"),
        ("-5", "5", "wrong"),
        ("18", "18.00", "correct"),
        ("The answer is $2,125.", "2,125", "correct"),
        ("3/4", "0.75", "correct"),
        ("17", "18", "wrong"),
        ("no idea", "18", "unparsable"),
    ],
)
def test_numeric_grader(output: str, gold: str, verdict: str) -> None:
    assert NumericGrader().grade(output, gold) == verdict


def test_choice_grader() -> None:
    grader = ChoiceGrader(4)
    assert grader.grade("the answer is (c)", "C") == "correct"
    assert grader.grade("Answer: B", "C") == "wrong"
    assert grader.grade("no idea", "C") == "unparsable"
    with pytest.raises(ValueError):
        grader.grade("B", "not a letter")


def test_grader_for_and_grade() -> None:
    assert grader_for(Sample(id="x", question="q", gold="3", kind="numeric")).kind == "numeric"
    choice = grader_for(Sample(id="y", question="q", gold="E", kind="choice", choices=tuple("abcde")))
    assert choice.grade("Answer: E", "E") == "correct"
    assert grade("gsm8k", "#### 1,000", "1000") == "correct"
    assert grade("arith", "I get 7", "8") == "wrong"


def test_hostile_input_is_fast() -> None:
    nasty = [
        "answer is " * 2_000,
        "1," * 10_000,
        " " * 100_000 + "x",
        "9" * 100_000,
        "\\boxed{" * 5_000,
        "answer:" + " " * 50_000 + "A",
        "-" * 50_000 + "5",
    ]
    start = time.perf_counter()
    for text in nasty:
        canonical_number(text)
        canonical_choice(text, 10)
    assert time.perf_counter() - start < 2.0


def test_unknown_benchmark_suggests() -> None:
    with pytest.raises(KeyError, match="did you mean 'gsm8k'"):
        load_benchmark("gsm8kk")
    assert {"arith", "gsm8k"} <= set(benchmark_names())


def _arith_answer(template: str, nums: list[int]) -> int:
    """Recompute an arith answer from the numbers in its question, independently of the generator."""
    if template == "bakery":
        a, b, c = nums
        return a * b - c
    if template == "restock":
        a, b, c, d = nums
        return a * b - c + d
    if template == "bags":
        a, b, c, k = nums
        assert (a * b - c) % k == 0
        return (a * b - c) // k
    if template == "wages":
        a, b, c, d = nums
        return a * b * c - d
    if template == "cartons":
        a, b, k = nums
        assert (a * b) % k == 0
        return a * b // k
    if template == "reading":
        a, b, c = nums
        return c - a - a * b
    if template == "fruit":
        a, b, k = nums
        assert (a + b) % k == 0
        return (a + b) // k
    raise AssertionError(f"unexpected template {template}")


def test_arith_golds_are_exact() -> None:
    items = load_benchmark("arith")
    assert len(items) == 1000
    assert items[7].id == "arith-test-0007"
    assert len({s.metadata["template"] for s in items}) >= 5
    for s in items:
        nums = [int(n) for n in re.findall(r"\d+", s.question)]
        expected = _arith_answer(s.metadata["template"], nums)
        assert expected >= 0
        assert s.gold == str(expected) and s.kind == "numeric"
        assert grade("arith", f"The answer is {expected}.", s.gold) == "correct"


def test_arith_is_deterministic() -> None:
    first, again = load_benchmark("arith", limit=50), load_benchmark("arith", limit=50)
    assert first == again
    assert make_item(0, 7) == load_benchmark("arith")[7]  # an item does not depend on the split size
    train = load_benchmark("arith", split="train", limit=50)
    assert [s.question for s in train] != [s.question for s in first]
    with pytest.raises(ValueError, match="no split"):
        load_benchmark("arith", split="dev")


def test_subsets_are_deterministic() -> None:
    full = load_benchmark("arith")
    a = load_benchmark("arith", seed=3, limit=20)
    assert [s.id for s in a] == [s.id for s in load_benchmark("arith", seed=3, limit=20)]
    b = load_benchmark("arith", seed=4, limit=20)
    assert [s.id for s in a] != [s.id for s in b]
    assert [s.id for s in load_benchmark("arith", seed=3)][5:25] == [
        s.id for s in load_benchmark("arith", seed=3, offset=5, limit=20)
    ]
    assert load_benchmark("arith", offset=10, limit=5) == full[10:15]
    assert load_benchmark("arith", limit=0) == []
    assert sorted(s.id for s in load_benchmark("arith", seed=9)) == sorted(s.id for s in full)
    with pytest.raises(ValueError):
        load_benchmark("arith", offset=-1)


@needs_gsm8k
def test_gsm8k_golds_grade_correct() -> None:
    items = load_benchmark("gsm8k", path=str(GSM8K_TEST))
    assert len(items) == 1319
    assert items[0].id == "gsm8k-test-0000" and items[0].gold == "18"
    raw = [json.loads(line) for line in GSM8K_TEST.read_text(encoding="utf-8").splitlines()]
    commas = 0
    grader = NumericGrader()
    for sample, record in zip(items, raw, strict=True):
        gold_text = record["answer"].rsplit("#### ", 1)[1]
        commas += "," in gold_text
        assert sample.gold == gold_text.replace(",", "")
        assert sample.metadata["solution"] == record["answer"]
        assert grader.grade(sample.gold, sample.gold) == "correct"
        assert grader.grade(gold_text, sample.gold) == "correct"
        assert grader.grade(record["answer"], sample.gold) == "correct", sample.id
    assert commas == 14


@needs_gsm8k
def test_gsm8k_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_benchmark("gsm8k", path=str(BENCHMARKS / "gsm8k"), limit=3) == load_benchmark(
        "gsm8k", path=str(GSM8K_TEST), limit=3
    )
    monkeypatch.setenv("DEBATE_SWEEP_BENCHMARKS", str(BENCHMARKS))
    assert default_benchmark_dir() == BENCHMARKS
    assert load_benchmark("gsm8k", seed=1, limit=5) == load_benchmark(
        "gsm8k", seed=1, limit=5, path=str(GSM8K_TEST)
    )
    monkeypatch.setenv("DEBATE_SWEEP_BENCHMARKS", str(tmp_path))
    try:
        import datasets  # noqa: F401
    except ImportError:
        with pytest.raises(FileNotFoundError, match="path:"):
            load_benchmark("gsm8k")
    with pytest.raises(FileNotFoundError):
        load_benchmark("gsm8k", path=str(tmp_path / "missing.jsonl"))


def test_gsm8k_local_file(tmp_path: Path) -> None:
    file = tmp_path / "test.jsonl"
    rows = [{"question": "q0", "answer": "a\n#### 1,000"}, {"question": "q1", "answer": "b\n#### -3"}]
    file.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    items = load_benchmark("gsm8k", path=str(tmp_path))
    assert [(s.id, s.gold) for s in items] == [("gsm8k-test-0000", "1000"), ("gsm8k-test-0001", "-3")]
    assert gold_from_solution("x\n#### 18") == "18"
    file.write_text('{"question": "q", "answer": "no marker"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="####"):
        load_benchmark("gsm8k", path=str(file))
