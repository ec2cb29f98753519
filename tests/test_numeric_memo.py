"""`read_number` remembers short texts (a sweep reads the same answers over and over): what it returns
from memory is exactly what reading afresh returns, for every corpus output, nested or not."""

from __future__ import annotations

import json
from pathlib import Path

from data.grading import numeric
from data.grading.numeric import read_number

CORPUS = Path(__file__).parent / "corpus"
OUTPUTS = sorted(
    {
        json.loads(line)["output"]
        for name in ("grader_cases.jsonl", "differential_numeric.jsonl")
        for line in (CORPUS / name).read_text(encoding="utf-8").splitlines()
        if json.loads(line)["kind"] == "numeric"
    }
)


def test_remembered_reads_equal_fresh_reads() -> None:
    assert len(OUTPUTS) > 100
    short = [t for t in OUTPUTS if len(t) <= numeric._MEMO_CHARS]
    assert len(short) > 50  # the memo is exercised, not bypassed
    for nested in (False, True):
        for text in OUTPUTS:
            first = read_number(text, nested)
            assert read_number(text, nested) == first == numeric._read(text, nested), (text, nested)


def test_nested_and_plain_reads_are_remembered_apart() -> None:
    # a JSON answer read as a field of another reply (nested) is ambiguous; read on its own it is 12
    numeric._read_short.cache_clear()
    text = '{"answer": "12"}'
    assert read_number(text, nested=True) == (None, "ambiguous")
    assert read_number(text) == ("12", "")
    assert read_number(text, nested=True) == (None, "ambiguous")


def test_a_repeated_short_text_is_read_once() -> None:
    numeric._read_short.cache_clear()
    for _ in range(5):
        assert read_number("The answer is 18.") == ("18", "")
    info = numeric._read_short.cache_info()
    assert (info.misses, info.hits) == (1, 4)


def test_long_and_non_string_outputs_are_read_afresh() -> None:
    numeric._read_short.cache_clear()
    long_text = "x " * numeric._MEMO_CHARS + "The answer is 7."
    assert read_number(long_text) == ("7", "")
    assert read_number(18) == ("18", "")
    assert numeric._read_short.cache_info().currsize == 0
