"""TruthfulQA, multiple choice with one correct answer (MC1): 817 questions, 2–13 options.

Read from `mc_task.json` (`data/v0/mc_task.json` by default: the file HF's `truthfulqa/truthful_qa`
config `multiple_choice` was built from; `data/mc_task.json` is the 2021 update, given by `path`), whose
`mc1_targets` maps each option's text to 1 (correct) or 0, or from an HF export (`mc1_targets` =
`{"choices": [...], "labels": [...]}`). Online: `truthfulqa/truthful_qa`, config `multiple_choice`.

The correct mc1 answer is always the first option in the raw file, so options are shuffled with a seed
of the item's own (see `data.benchmarks.options`). HF names its only split `validation`; here it is `test`, the
evaluation set. Ids are 'truthfulqa-<index>' in file order, which HF keeps.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from data.benchmarks.catalog import benchmark
from data.benchmarks.options import choice_sample
from data.benchmarks.sources import Record, hub_records, load_from, pick_file, read_records
from data.types import Sample

HF_DATASET = ("truthfulqa/truthful_qa", "multiple_choice")
LAYOUTS = ("data/v0/mc_task.json", "mc_task.json", "multiple_choice/validation-00000-of-00001.parquet")


def _targets(value: object, where: str) -> tuple[list[str], list[int]]:
    """(option texts, labels) from the raw dict form or HF's {'choices', 'labels'} form."""
    if isinstance(value, Mapping) and set(value) == {"choices", "labels"}:
        choices, labels = list(value["choices"]), [int(v) for v in value["labels"]]
    elif isinstance(value, Mapping):
        choices, labels = [str(k) for k in value], [int(v) for v in value.values()]
    else:
        raise ValueError(f"{where}: mc1_targets missing")
    if len(choices) != len(labels) or labels.count(1) != 1:
        raise ValueError(f"{where}: mc1_targets must mark exactly one option correct")
    return choices, labels


def to_sample(record: Mapping[str, Any], index: int) -> Sample:
    """One TruthfulQA record as a shuffled 'choice' Sample with id 'truthfulqa-<index:03d>'."""
    where = f"record {index + 1}"
    question = record.get("question")
    if not isinstance(question, str):
        raise ValueError(f"{where}: no question")
    choices, labels = _targets(record.get("mc1_targets"), where)
    item_id = f"truthfulqa-{index:03d}"
    return choice_sample("truthfulqa", item_id, question, choices, labels.index(1), {}, shuffle=True)


def _samples(records: list[Record], where: str) -> list[Sample]:
    try:
        return [to_sample(r, i) for i, r in enumerate(records)]
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


def _local(p: Path) -> list[Sample]:
    file = pick_file("truthfulqa", p, LAYOUTS) if p.is_dir() else p
    if file.suffix.lower() == ".csv":
        raise ValueError(f"{file}: TruthfulQA.csv is the generation set; MC1 is read from mc_task.json")
    return _samples(read_records(file), str(file))


@benchmark(
    "truthfulqa",
    kind="choice",
    n_choices=13,
    splits=("test",),
    source="truthfulqa/truthful_qa (multiple_choice)",
)
def load_truthfulqa(split: str, path: str | None) -> list[Sample]:
    """The 817 MC1 questions: from `path`, else the shared copy, else Hugging Face."""

    def hub() -> list[Sample]:
        hint = "set `path:` to TruthfulQA's data/v0/mc_task.json"
        return _samples(hub_records("truthfulqa", *HF_DATASET, "validation", hint), HF_DATASET[0])

    return load_from("truthfulqa", path, _local, "truthfulqa", hub)
