"""`sums` and `compare` (`data.benchmarks.easy`), the quickstart's one-step benchmarks: registered and loadable
by name, each item fixed by (split seed, index) whatever else is generated, every gold right for its
question, every level present, and the larger number's position random across items."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from data import grade
from data.benchmarks.easy import SPLITS, compare_item, sums_item
from data.benchmarks.registry import benchmark_info, load_benchmark


@pytest.mark.parametrize("name", ["sums", "compare"])
def test_registered_with_both_splits_and_deterministic(name: str) -> None:
    info = benchmark_info(name)
    assert info.splits == ("test", "train") and info.kind == ("numeric" if name == "sums" else "choice")
    test = load_benchmark(name, "test")
    assert len(test) == SPLITS["test"][1] and len({s.id for s in test}) == len(test)
    assert load_benchmark(name, "test", limit=20) == test[:20]
    assert test[7].id == f"{name}-test-0007"
    make = sums_item if name == "sums" else compare_item
    assert make(0, 7) == test[7]  # item i depends on (seed, i) only, not on what else was made
    train = load_benchmark(name, "train", limit=50)
    shown = [(s.question, s.choices) for s in train]
    assert shown != [(s.question, s.choices) for s in test[:50]]  # another seed, other items
    assert Counter(s.metadata["level"] for s in test).keys() == {1, 2, 3}


def test_sums_gold_is_the_value_of_the_question() -> None:
    for s in load_benchmark("sums", "test"):
        m = re.fullmatch(r"What is (\d+) ([+-]) (\d+)\?", s.question)
        assert m is not None, s.question
        a, op, b = int(m[1]), m[2], int(m[3])
        value = a + b if op == "+" else a - b
        assert value >= 0 and s.gold == str(value)
        assert (
            grade("sums", str(value), s.gold) == "correct"
            and grade("sums", str(value + 1), s.gold) == "wrong"
        )
        level = s.metadata["level"]
        assert (level, op) in {(1, "+"), (2, "-"), (3, "+")}
        assert b < 10 and {1: a < 10, 2: a <= 18, 3: 10 <= a < 90}[level]


def test_compare_gold_is_the_larger_number_and_its_position_varies() -> None:
    items = load_benchmark("compare", "test")
    for s in items:
        a, b = (int(c) for c in s.choices)
        assert a != b and s.gold == ("A" if a > b else "B")
        assert grade("compare", s.gold, s.gold) == "correct"
        if s.metadata["level"] == 3:
            assert a // 10 == b // 10  # same tens digit: only the units decide
    share_a = sum(s.gold == "A" for s in items) / len(items)
    assert 0.45 < share_a < 0.55


def test_unknown_split_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known: test, train"):
        load_benchmark("sums", "dev")
