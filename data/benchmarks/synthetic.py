"""`arith`: arithmetic word problems generated in code from a seed, with exact integer answers.

Every item takes 2–3 operations, and its answer is a non-negative integer (divisions always come out
even). Item i of a split is drawn from its own RNG seeded by (split seed, i), so it does not depend on
how many items are generated. Needs no files and no network: the benchmark for offline tests.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from data.benchmarks.catalog import benchmark
from data.grading.graders import canonical_number
from data.types import Sample

SPLITS: dict[str, tuple[int, int]] = {"test": (0, 1000), "train": (1, 5000)}  # split -> (seed, size)
_PEOPLE = (
    ("Ava", "she"),
    ("Ben", "he"),
    ("Chloe", "she"),
    ("Dev", "he"),
    ("Elena", "she"),
    ("Farid", "he"),
    ("Grace", "she"),
    ("Hiro", "he"),
    ("Imani", "she"),
    ("Jonas", "he"),
)

Problem = tuple[str, int, dict[str, int]]  # question, answer, the operands that produced it


def _bakery(rng: random.Random, name: str, pron: str) -> Problem:
    a, b = rng.randint(3, 20), rng.randint(4, 15)
    c = rng.randint(1, a * b)
    q = f"{name} bakes {a} trays with {b} rolls each and sells {c} rolls. How many rolls are left?"
    return q, a * b - c, {"a": a, "b": b, "c": c}


def _restock(rng: random.Random, name: str, pron: str) -> Problem:
    a, b = rng.randint(2, 15), rng.randint(5, 24)
    c, d = rng.randint(1, a * b), rng.randint(1, 99)
    q = (
        f"{name}'s shop has {a} boxes with {b} pens each. {pron.capitalize()} sells {c} pens and then "
        f"receives {d} more pens. How many pens does the shop have now?"
    )
    return q, a * b - c + d, {"a": a, "b": b, "c": c, "d": d}


def _bags(rng: random.Random, name: str, pron: str) -> Problem:
    a, b = rng.randint(2, 12), rng.randint(3, 12)
    k = rng.randint(2, min(9, a * b - 1))
    each = rng.randint(1, (a * b - 1) // k)
    c = a * b - k * each  # chosen so the rest splits evenly, and at least one marble is given away
    q = (
        f"{name} has {a} boxes with {b} marbles each. {pron.capitalize()} gives away {c} marbles and "
        f"splits the rest equally into {k} bags. How many marbles are in each bag?"
    )
    return q, each, {"a": a, "b": b, "c": c, "k": k}


def _wages(rng: random.Random, name: str, pron: str) -> Problem:
    a, b, c = rng.randint(8, 25), rng.randint(5, 20), rng.randint(2, 6)
    d = rng.randint(1, a * b * c)
    q = (
        f"{name} earns ${a} per hour and works {b} hours each week. After {c} weeks {pron} spends ${d} "
        f"on a bike. How many dollars does {pron} have left?"
    )
    return q, a * b * c - d, {"a": a, "b": b, "c": c, "d": d}


def _cartons(rng: random.Random, name: str, pron: str) -> Problem:
    k = rng.choice((6, 10, 12))
    a, b = k * rng.randint(1, 6), rng.randint(2, 14)  # a multiple of k, so every carton is full
    q = (
        f"{name} collects {a} eggs every day for {b} days and packs them in cartons of {k}. "
        f"How many cartons does {pron} fill?"
    )
    return q, a * b // k, {"a": a, "b": b, "k": k}


def _reading(rng: random.Random, name: str, pron: str) -> Problem:
    a, b = rng.randint(5, 30), rng.randint(2, 4)
    c = a + a * b + rng.randint(0, 200)
    q = (
        f"{name} reads {a} pages on Monday and {b} times as many pages on Tuesday. The book has {c} "
        "pages. How many pages are left to read?"
    )
    return q, c - a - a * b, {"a": a, "b": b, "c": c}


def _fruit(rng: random.Random, name: str, pron: str) -> Problem:
    k, each = rng.randint(2, 8), rng.randint(2, 15)
    a = rng.randint(1, k * each - 1)
    b = k * each - a
    q = (
        f"{name} picks {a} apples and {b} pears and shares them equally among {k} friends. "
        "How many pieces of fruit does each friend get?"
    )
    return q, each, {"a": a, "b": b, "k": k}


TEMPLATES: dict[str, Callable[[random.Random, str, str], Problem]] = {
    "bakery": _bakery,
    "restock": _restock,
    "bags": _bags,
    "wages": _wages,
    "cartons": _cartons,
    "reading": _reading,
    "fruit": _fruit,
}


def make_item(seed: int, index: int, split: str = "test") -> Sample:
    """Item `index` of the stream seeded by `seed`, with id 'arith-<split>-<index:04d>'."""
    rng = random.Random(f"arith/{seed}/{index}")  # str seeds hash stably across runs and platforms
    template = rng.choice(sorted(TEMPLATES))
    name, pron = rng.choice(_PEOPLE)
    question, answer, operands = TEMPLATES[template](rng, name, pron)
    if answer < 0:
        raise AssertionError(f"template {template} produced a negative answer {answer}")
    gold = canonical_number(str(answer))
    assert gold is not None  # str(int) always reads back
    return Sample(
        id=f"arith-{split}-{index:04d}",
        question=question,
        gold=gold,
        kind="numeric",
        metadata={"template": template, "operands": operands},
    )


@benchmark("arith", kind="numeric", splits=tuple(SPLITS))
def load_arith(split: str, path: str | None) -> list[Sample]:
    """The full generated split ('test': 1000 items from seed 0, 'train': 5000 from seed 1); `path` is
    not used, since nothing is read from disk."""
    if split not in SPLITS:
        raise ValueError(f"arith has no split {split!r}; known: {', '.join(SPLITS)}")
    seed, size = SPLITS[split]
    return [make_item(seed, i, split) for i in range(size)]
