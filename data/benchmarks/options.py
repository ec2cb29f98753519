"""Multiple-choice items: option letters, and option order shuffled with a seed of the item's own.

TruthfulQA's correct mc1 answer is always first in its raw file, and GPQA keeps the correct answer in
a separate field, so showing options in file order would hand agents the answer's position. These
benchmarks shuffle each item's options with a RNG seeded by the benchmark name and the item id only:
the same item always gets the same order and gold letter, whatever subset, seed or split is loaded.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from data.types import Sample

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def letter(index: int) -> str:
    """The option letter of 0-based `index` ('A' for 0)."""
    if not 0 <= index < len(LETTERS):
        raise ValueError(f"option index {index} has no letter")
    return LETTERS[index]


def shuffle_order(bench: str, item_id: str, n: int) -> list[int]:
    """A permutation of range(n), fixed by (bench, item_id): position i shows original option order[i]."""
    order = list(range(n))
    random.Random(f"options/{bench}/{item_id}").shuffle(order)  # str seeds are hashed stably (sha512)
    return order


def choice_sample(
    bench: str,
    item_id: str,
    question: str,
    options: Sequence[str],
    correct: int,
    metadata: Mapping[str, Any],
    shuffle: bool,
) -> Sample:
    """A 'choice' Sample whose gold is the letter of `options[correct]` after the (optional) shuffle.

    Option texts are stripped of surrounding whitespace. With `shuffle`, `metadata['option_order']`
    records which original option each shown position holds, so the raw order can be restored.
    """
    texts = [str(o).strip() for o in options]
    if not 2 <= len(texts) <= len(LETTERS):
        raise ValueError(f"{item_id}: {len(texts)} options; need 2..{len(LETTERS)}")
    if not 0 <= correct < len(texts):
        raise ValueError(f"{item_id}: correct option {correct} out of range for {len(texts)} options")
    order = shuffle_order(bench, item_id, len(texts)) if shuffle else list(range(len(texts)))
    meta = dict(metadata)
    if shuffle:
        meta["option_order"] = order
    return Sample(
        id=item_id,
        question=question,
        gold=letter(order.index(correct)),
        kind="choice",
        choices=tuple(texts[i] for i in order),
        metadata=meta,
    )
