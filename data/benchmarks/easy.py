"""`sums` and `compare`: one-step questions on small numbers, generated in code from a seed.

Made for the CPU quickstart, whose SmolLM2-135M is near-random at GSM8K and at `arith`'s 2–3 step
word problems, so that a debate on it has right and wrong answers to move between.

- `sums` (numeric): "What is 7 + 5?"; level 1 adds two one-digit numbers, level 2 subtracts a
  one-digit number from a number up to 18 (never below 0), level 3 adds a one-digit number to a
  two-digit one.
- `compare` (two choices, A/B): "Which number is larger?" with the two numbers as the options; level 1
  uses one-digit numbers, level 2 two-digit ones, level 3 two-digit ones that share their tens digit.

Item i of a split is drawn from its own RNG seeded by (benchmark, split seed, i), so it does not depend
on how many items are generated; its level is in `metadata['level']`. Needs no files and no network.
"""

from __future__ import annotations

import random

from data.benchmarks.catalog import benchmark
from data.benchmarks.options import choice_sample
from data.grading.graders import canonical_number
from data.types import Sample

SPLITS: dict[str, tuple[int, int]] = {"test": (0, 1000), "train": (1, 5000)}  # split -> (seed, size)
LEVELS = (1, 2, 3)


def _rng(bench: str, seed: int, index: int) -> random.Random:
    return random.Random(f"{bench}/{seed}/{index}")  # str seeds hash stably across runs and platforms


def sums_item(seed: int, index: int, split: str = "test") -> Sample:
    """Item `index` of the `sums` stream seeded by `seed`, with id 'sums-<split>-<index:04d>'."""
    rng = _rng("sums", seed, index)
    level = rng.choice(LEVELS)
    if level == 1:
        a, b, op = rng.randint(1, 9), rng.randint(1, 9), "+"
    elif level == 2:
        a = rng.randint(2, 18)
        b, op = rng.randint(1, min(9, a)), "-"
    else:
        a, b, op = rng.randint(10, 89), rng.randint(1, 9), "+"
    answer = a + b if op == "+" else a - b
    gold = canonical_number(str(answer))
    assert gold is not None  # str(int) always reads back
    return Sample(
        id=f"sums-{split}-{index:04d}",
        question=f"What is {a} {op} {b}?",
        gold=gold,
        kind="numeric",
        metadata={"level": level, "operands": {"a": a, "b": b, "op": op}},
    )


def compare_item(seed: int, index: int, split: str = "test") -> Sample:
    """Item `index` of the `compare` stream seeded by `seed`, with id 'compare-<split>-<index:04d>'."""
    rng = _rng("compare", seed, index)
    level = rng.choice(LEVELS)
    if level == 1:
        a, b = rng.sample(range(1, 10), 2)
    elif level == 2:
        a, b = rng.sample(range(10, 100), 2)
    else:
        tens = 10 * rng.randint(1, 9)
        a, b = (tens + d for d in rng.sample(range(10), 2))
    item_id = f"compare-{split}-{index:04d}"
    # Options in drawn order: which position holds the larger number is random, item by item.
    options = [str(a), str(b)]
    return choice_sample(
        "compare", item_id, "Which number is larger?", options, int(b > a), {"level": level}, False
    )


def _split(bench: str, split: str) -> tuple[int, int]:
    if split not in SPLITS:
        raise ValueError(f"{bench} has no split {split!r}; known: {', '.join(SPLITS)}")
    return SPLITS[split]


@benchmark("sums", kind="numeric", splits=tuple(SPLITS))
def load_sums(split: str, path: str | None) -> list[Sample]:
    """The full generated split ('test': 1000 items from seed 0, 'train': 5000 from seed 1); `path` is
    not used, since nothing is read from disk."""
    seed, size = _split("sums", split)
    return [sums_item(seed, i, split) for i in range(size)]


@benchmark("compare", kind="choice", n_choices=2, splits=tuple(SPLITS))
def load_compare(split: str, path: str | None) -> list[Sample]:
    """The full generated split ('test': 1000 items from seed 0, 'train': 5000 from seed 1); `path` is
    not used, since nothing is read from disk."""
    seed, size = _split("compare", split)
    return [compare_item(seed, i, split) for i in range(size)]
