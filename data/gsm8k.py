"""GSM8K (grade-school math word problems): read from a local JSONL file, or from the HF Hub."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from data.graders import canonical_number
from data.registry import benchmark, default_benchmark_dir
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
    question, solution = record.get("question"), record.get("answer")
    if not isinstance(question, str) or not isinstance(solution, str):
        raise ValueError(f"record {index} lacks string fields 'question' and 'answer'")
    return Sample(
        id=f"gsm8k-{split}-{index:04d}",
        question=question,
        gold=gold_from_solution(solution),
        kind="numeric",
        metadata={"solution": solution},
    )


def read_jsonl(file: Path, split: str) -> list[Sample]:
    """Every record of a GSM8K JSONL file; an item's index is its line index (blank lines skipped)."""
    samples = []
    with file.open(encoding="utf-8") as fh:
        for index, line in enumerate(fh):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{file}:{index + 1}: not a JSON object ({e.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{file}:{index + 1}: not a JSON object")
            try:
                samples.append(to_sample(record, split, index))
            except ValueError as e:
                raise ValueError(f"{file}:{index + 1}: {e}") from None
    return samples


def _local_file(split: str, path: str | None) -> Path | None:
    """The JSONL file to read: `path` (a file, or a folder holding '<split>.jsonl'), else the shared copy."""
    if path is not None:
        given = Path(path).expanduser()
        file = given / f"{split}.jsonl" if given.is_dir() else given
        if not file.is_file():
            raise FileNotFoundError(f"gsm8k: no such file {file}")
        return file
    root = default_benchmark_dir()
    if root is not None and (root / "gsm8k" / f"{split}.jsonl").is_file():
        return root / "gsm8k" / f"{split}.jsonl"
    return None


def _from_hub(split: str) -> Iterable[Mapping[str, Any]]:
    hint = f"set `path:` to a local GSM8K JSONL file (e.g. grade_school_math/data/{split}.jsonl)"
    try:
        import datasets  # lazily: a heavy optional dependency
    except ImportError:
        raise FileNotFoundError(f"gsm8k: no local copy and `datasets` is not installed; {hint}") from None
    try:
        return datasets.load_dataset(*HF_DATASET, split=split)
    except Exception as e:  # the hub raises many kinds (offline, auth, missing split): all mean "no data"
        raise FileNotFoundError(f"gsm8k: could not load {HF_DATASET[0]} ({type(e).__name__}); {hint}") from e


@benchmark("gsm8k", kind="numeric")
def load_gsm8k(split: str, path: str | None) -> list[Sample]:
    """The full GSM8K `split`: from `path`, else the shared benchmark folder, else Hugging Face."""
    file = _local_file(split, path)
    if file is not None:
        return read_jsonl(file, split)
    return [to_sample(record, split, i) for i, record in enumerate(_from_hub(split))]
