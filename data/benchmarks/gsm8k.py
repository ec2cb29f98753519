"""GSM8K (grade-school math word problems): the original JSONL files, their HF exports, or the HF Hub.

Local layouts: `<folder>/<split>.jsonl` (openai/grade-school-math), or a Parquet/JSONL export of
`openai/gsm8k` (config `main`; fields `question`, `answer`), or a path to one such file. Item ids are
'gsm8k-<split>-<line index>'; HF keeps the files' record order, so ids agree across sources.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from data.benchmarks.catalog import benchmark
from data.benchmarks.sources import Record, hub_records, load_from, read_records, require_str, split_file
from data.grading.graders import canonical_number
from data.types import Sample

HF_DATASET = ("openai/gsm8k", "main")
_GOLD_MARKER = "#### "


def gold_from_solution(solution: str) -> str:
    """The canonical gold of a GSM8K solution: the number after its final '#### '."""
    marker = solution.rfind(_GOLD_MARKER)
    if marker < 0:
        raise ValueError(f"solution has no {_GOLD_MARKER!r} line: {solution[-80:]!r}")
    gold = canonical_number(solution[marker + len(_GOLD_MARKER) :])
    if gold is None:
        raise ValueError(f"no number after the final {_GOLD_MARKER!r}: {solution[-80:]!r}")
    return gold


def to_sample(record: Mapping[str, Any], split: str, index: int) -> Sample:
    """One GSM8K record (`question`, `answer`) as a Sample with id 'gsm8k-<split>-<index:04d>'."""
    question, solution = require_str(record, ("question", "answer"), f"record {index}")
    return Sample(
        id=f"gsm8k-{split}-{index:04d}",
        question=question,
        gold=gold_from_solution(solution),
        kind="numeric",
        metadata={"solution": solution},
    )


def read_jsonl(file: Path, split: str) -> list[Sample]:
    """Every record of a GSM8K JSONL (or Parquet) file; an item's index is its record index."""
    return _samples(read_records(file), split, str(file))


def _samples(records: list[Record], split: str, where: str) -> list[Sample]:
    samples = []
    for index, record in enumerate(records):
        try:
            samples.append(to_sample(record, split, index))
        except ValueError as e:
            raise ValueError(f"{where}: record {index + 1}: {e}") from None
    return samples


def _local(split: str, given: Path) -> list[Sample]:
    file = (
        split_file("gsm8k", given, split, ("main/{split}-00000-of-00001.parquet",))
        if given.is_dir()
        else given
    )
    return read_jsonl(file, split)


def _hub(split: str) -> list[Sample]:
    hint = f"set `path:` to a local GSM8K JSONL file (e.g. grade_school_math/data/{split}.jsonl)"
    return _samples(hub_records("gsm8k", *HF_DATASET, split, hint), split, HF_DATASET[0])


@benchmark("gsm8k", kind="numeric", splits=("test", "train"), source="openai/gsm8k (main)")
def load_gsm8k(split: str, path: str | None) -> list[Sample]:
    """The full GSM8K `split`: from `path`, else the shared benchmark folder, else Hugging Face."""
    return load_from("gsm8k", path, lambda p: _local(split, p), "gsm8k", lambda: _hub(split))
