"""MATH-500 and MATH-Hard (MATH level 5): competition problems with LaTeX answers (kind 'math').

`math500`: the 500-problem test split of "Let's Verify Step by Step" (`HuggingFaceH4/MATH-500`), read
from `test.jsonl` (prm800k's file, fields `problem, solution, answer, subject, level, unique_id`) or an
HF Parquet/JSONL export of it. The gold is the `answer` field (the solution's last `\\boxed{}`).

`math_hard`: the level-5 problems of MATH (Hendrycks et al.). Online it is `lighteval/MATH-Hard`
(splits `test`, `train`). Locally it reads the original MATH layout (`<MATH>/<split>/<subject>/<n>.json`),
an export of `lighteval/MATH-Hard` (`problem, level, type, solution`), or a MATH-500 file. No MATH
train/test file ships in the shared benchmark copy, so *offline, by default, MATH-Hard is derived from
MATH-500's 134 level-5 problems* — a subset of the real MATH-Hard test split (1324 problems). Its gold
is the `answer` field where the file has one, else the last `\\boxed{}` of the solution.

Ids follow MATH's file names where known ('math500-precalculus-807', from `test/precalculus/807.json`),
else a hash of the problem text, so an item keeps its id whatever file or order it comes from.
CPP's partition (`cpp:train|dev|test`, 150/100/100) draws from the `test` pool of MATH-Hard, so it needs
the full MATH-Hard test split (online, or `path:` to MATH's test folder or an export).
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from data.benchmarks.catalog import benchmark
from data.benchmarks.sources import Record, hub_records, load_from, read_records, split_file
from data.benchmarks.splits import Part, Scheme
from data.grading.textutil import boxed_contents
from data.types import Sample

MATH500_HF = "HuggingFaceH4/MATH-500"
MATH_HARD_HF = "lighteval/MATH-Hard"
_UNIQUE_ID = re.compile(r"(?:.*/)?(?P<split>train|test)/(?P<subject>[a-z_]+)/(?P<n>[0-9]+)\.json")
CPP = Scheme(
    parts=(Part("train", 150), Part("dev", 100), Part("test", 100)),
    note="CPP samples 150/100/100 level-5 problems; offline MATH-Hard is only MATH-500's 134 level-5 "
    "problems, so set `path:` to MATH's test folder or an export of lighteval/MATH-Hard",
)


def _slug(subject: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", subject.casefold()).strip("_")


def _level(value: object) -> int | None:
    """5 from 5, '5' or 'Level 5'; None when absent or unreadable ('Level ?' occurs in MATH train)."""
    m = re.search(r"[0-9]+", str(value)) if value is not None else None
    return int(m[0]) if m else None


def _item_id(bench: str, record: Mapping[str, Any], problem: str) -> str:
    unique = str(record.get("unique_id") or record.get("_path") or "")
    if (m := _UNIQUE_ID.fullmatch(unique)) is not None:
        return f"{bench}-{m['subject']}-{m['n']}"
    return f"{bench}-{hashlib.sha1(problem.encode()).hexdigest()[:12]}"


def to_sample(bench: str, record: Mapping[str, Any]) -> Sample | None:
    """One MATH-style record as a 'math' Sample; None (with a warning) when it has no readable gold."""
    problem, solution = record.get("problem"), record.get("solution")
    if not isinstance(problem, str):
        raise ValueError("record lacks a string field 'problem'")
    answer = record.get("answer")
    gold = answer if isinstance(answer, str) and answer.strip() else None
    if gold is None and isinstance(solution, str):
        gold = boxed_contents(solution)
    item_id = _item_id(bench, record, problem)
    if gold is None or not gold.strip():
        warnings.warn(
            f"{bench}: skipped {item_id}: no answer field and no \\boxed{{}} in its solution", stacklevel=2
        )
        return None
    subject = str(record.get("subject") or record.get("type") or "")
    meta = {"subject": subject, "level": _level(record.get("level"))}
    if isinstance(solution, str):
        meta["solution"] = solution
    if record.get("unique_id"):
        meta["unique_id"] = str(record["unique_id"])
    return Sample(id=item_id, question=problem, gold=gold.strip(), kind="math", metadata=meta)


def _samples(bench: str, records: list[Record], where: str, level: int | None = None) -> list[Sample]:
    samples = []
    for index, record in enumerate(records):
        if level is not None and _level(record.get("level")) != level:
            continue
        try:
            sample = to_sample(bench, record)
        except ValueError as e:
            raise ValueError(f"{where}: record {index + 1}: {e}") from None
        if sample is not None:
            samples.append(sample)
    return samples


def _math_folder(split: str, folder: Path) -> list[Record] | None:
    """Records of MATH's original layout (`<split>/<subject>/<n>.json`), `folder` being the MATH root or
    the split folder itself; None when `folder` is not laid out that way."""
    base = folder / split if (folder / split).is_dir() else folder
    files = sorted(
        base.glob("*/*.json"), key=lambda p: (p.parent.name, int(p.stem) if p.stem.isdigit() else 0)
    )
    if not files:
        return None
    records = []
    for f in files:
        record = json.loads(f.read_text(encoding="utf-8"))
        record["_path"] = f"{split}/{f.parent.name}/{f.name}"
        records.append(record)
    return records


@benchmark("math500", kind="math", splits=("test",), source=MATH500_HF)
def load_math500(split: str, path: str | None) -> list[Sample]:
    """The 500 MATH-500 problems: from `path`, else the shared copy, else Hugging Face."""

    def local(p: Path) -> list[Sample]:
        file = split_file("math500", p, split) if p.is_dir() else p
        return _samples("math500", read_records(file), str(file))

    def hub() -> list[Sample]:
        hint = "set `path:` to MATH-500's test.jsonl (prm800k math_splits)"
        return _samples("math500", hub_records("math500", MATH500_HF, None, split, hint), MATH500_HF)

    return load_from("math500", path, local, "math500", hub)


@benchmark("math_hard", kind="math", splits=("test", "train"), schemes={"cpp": CPP}, source=MATH_HARD_HF)
def load_math_hard(split: str, path: str | None) -> list[Sample]:
    """MATH level-5 problems of `split`: from `path` (MATH folder, export or MATH-500 file), else — for
    `test` only — derived from the shared MATH-500 copy's level-5 problems, else Hugging Face."""

    def local(p: Path) -> list[Sample]:
        if p.is_dir() and (records := _math_folder(split, p)) is not None:
            return _samples("math_hard", records, str(p), level=5)
        file = (
            split_file("math_hard", p, split, ("test.jsonl",) if split == "test" else ()) if p.is_dir() else p
        )
        return _samples("math_hard", read_records(file), str(file), level=5)

    def hub() -> list[Sample]:
        hint = f"set `path:` to MATH's {split} folder or an export of {MATH_HARD_HF}"
        return _samples(
            "math_hard", hub_records("math_hard", MATH_HARD_HF, None, split, hint), MATH_HARD_HF, 5
        )

    return load_from("math_hard", path, local, "math500", hub)
