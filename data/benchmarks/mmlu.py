"""MMLU and MMLU-Pro: multiple choice with options in their published order (no shuffling).

`mmlu` (`cais/mmlu`, config `all`): locally the original Hendrycks layout, `<folder>/<split>/<subject>_<split>.csv`
(no header: question, A, B, C, D, answer letter; the shared copy has only `test`), or an HF export
(`question, subject, choices, answer` with `answer` an index 0-3). Ids are
'mmlu-<split>-<subject>-<row within the subject>', the same from either source. Online, `dev` (5 per
subject) and `validation` exist too. *Offline there is no dev split*: RUMAD's training split is derived
from the test files instead, as the partition `rumad:dev` — 5 questions per subject (285, the size of
MMLU's dev split), chosen by hash of the item id — with `rumad:test` the other 13757 test questions, so
a controller trained on `rumad:dev` is never evaluated on what it saw.

`mmlu_pro` (`TIGER-Lab/MMLU-Pro`): the HF Parquet files themselves (`data/<split>-00000-of-00001.parquet`)
or any export with the same fields; 3–10 options (letters A–J). The gold is the `answer` letter, as the
official evaluation uses it; the one row where `answer_index` disagrees (question_id 3983) is flagged in
its metadata. CPP's partition `cpp:train|dev|test` (150/100/100) draws from `test`.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from data.benchmarks.catalog import benchmark
from data.benchmarks.options import LETTERS, choice_sample
from data.benchmarks.sources import Record, hub_records, load_from, read_records, split_file
from data.benchmarks.splits import Part, Scheme
from data.types import Sample

MMLU_HF = ("cais/mmlu", "all")
MMLU_PRO_HF = "TIGER-Lab/MMLU-Pro"
RUMAD = Scheme(
    parts=(Part("dev", 5), Part("test", None)),
    stratum="subject",
    note="RUMAD trains on MMLU dev: offline it is derived from the test files, 5 per subject",
)
CPP = Scheme(
    parts=(Part("train", 150), Part("dev", 100), Part("test", 100)), note="CPP's MMLU-Pro split sizes"
)


def _mmlu_sample(
    split: str, subject: str, row: int, question: str, options: list[str], answer: int
) -> Sample:
    item_id = f"mmlu-{split}-{subject}-{row:04d}"
    return choice_sample("mmlu", item_id, question, options, answer, {"subject": subject}, shuffle=False)


def _mmlu_csv_folder(split: str, folder: Path) -> list[Sample]:
    """The original layout: `folder` is the MMLU root (holding `<split>/`) or the split folder itself."""
    base = folder / split if (folder / split).is_dir() else folder
    files = sorted(base.glob(f"*_{split}.csv"))
    if not files:
        raise FileNotFoundError(f"mmlu: no *_{split}.csv files in {base}")
    samples = []
    for file in files:
        subject = file.name[: -len(f"_{split}.csv")]
        with file.open(newline="", encoding="utf-8") as fh:
            for row, fields in enumerate(csv.reader(fh)):
                if len(fields) != 6 or fields[5].strip() not in ("A", "B", "C", "D"):
                    raise ValueError(f"{file}:{row + 1}: expected question, 4 options, answer letter A-D")
                answer = "ABCD".index(fields[5].strip())
                samples.append(_mmlu_sample(split, subject, row, fields[0], fields[1:5], answer))
    return samples


def _mmlu_records(split: str, records: list[Record], where: str) -> list[Sample]:
    """HF-layout records (`question, subject, choices, answer` index or letter)."""
    rows: Counter[str] = Counter()
    samples = []
    for index, r in enumerate(records):
        answer, choices = r.get("answer"), r.get("choices")
        if isinstance(answer, str) and len(answer) == 1 and answer in LETTERS:
            answer = LETTERS.index(answer)
        if (
            not isinstance(r.get("question"), str)
            or not isinstance(choices, list)
            or not isinstance(answer, int)
        ):
            raise ValueError(f"{where}: record {index + 1}: expected question, choices (list), answer (int)")
        subject = str(r.get("subject") or "unknown")
        samples.append(_mmlu_sample(split, subject, rows[subject], r["question"], choices, answer))
        rows[subject] += 1
    return samples


@benchmark(
    "mmlu",
    kind="choice",
    splits=("test", "dev", "validation"),
    schemes={"rumad": RUMAD},
    source="cais/mmlu (all)",
)
def load_mmlu(split: str, path: str | None) -> list[Sample]:
    """MMLU `split`, subjects in alphabetical order: from `path`, else the shared copy, else Hugging Face."""

    def local(p: Path) -> list[Sample]:
        if p.is_dir() and (any(p.glob(f"*_{split}.csv")) or (p / split).is_dir()):
            return _mmlu_csv_folder(split, p)
        file = split_file("mmlu", p, split, ("all/{split}-00000-of-00001.parquet",)) if p.is_dir() else p
        return _mmlu_records(split, read_records(file), str(file))

    def hub() -> list[Sample]:
        hint = "set `path:` to MMLU's data folder (holding test/*.csv)"
        if split in ("dev", "validation"):
            hint += "; offline, use split 'rumad:dev' (derived from the test files) and 'rumad:test'"
        return _mmlu_records(split, hub_records("mmlu", *MMLU_HF, split, hint), MMLU_HF[0])

    return load_from("mmlu", path, local, "mmlu", hub)


def _pro_sample(record: Mapping[str, Any], where: str) -> Sample:
    options, answer, qid = record.get("options"), record.get("answer"), record.get("question_id")
    if not isinstance(record.get("question"), str) or not isinstance(options, (list, tuple)) or qid is None:
        raise ValueError(f"{where}: expected question_id, question, options (list), answer")
    if not isinstance(answer, str) or len(answer) != 1 or LETTERS.find(answer) not in range(len(options)):
        raise ValueError(f"{where}: answer {answer!r} is not one of the {len(options)} option letters")
    meta: dict[str, Any] = {"subject": record.get("category"), "src": record.get("src"), "question_id": qid}
    if record.get("answer_index") is not None and record["answer_index"] != LETTERS.index(answer):
        meta["answer_index_disagrees"] = record["answer_index"]  # upstream: `answer` is the one used
    if record.get("cot_content"):
        meta["cot_content"] = record["cot_content"]
    item_id = f"mmlu_pro-{qid}"
    return choice_sample(
        "mmlu_pro", item_id, record["question"], list(options), LETTERS.index(answer), meta, False
    )


@benchmark(
    "mmlu_pro",
    kind="choice",
    n_choices=10,
    splits=("test", "validation"),
    schemes={"cpp": CPP},
    source=MMLU_PRO_HF,
)
def load_mmlu_pro(split: str, path: str | None) -> list[Sample]:
    """MMLU-Pro `split` in file order: from `path`, else the shared copy, else Hugging Face."""

    def samples(records: list[Record], where: str) -> list[Sample]:
        return [_pro_sample(r, f"{where}: record {i + 1}") for i, r in enumerate(records)]

    def local(p: Path) -> list[Sample]:
        file = split_file("mmlu_pro", p, split, ("data/{split}-00000-of-00001.parquet",)) if p.is_dir() else p
        return samples(read_records(file), str(file))

    def hub() -> list[Sample]:
        hint = "set `path:` to MMLU-Pro's parquet file or folder"
        return samples(hub_records("mmlu_pro", MMLU_PRO_HF, None, split, hint), MMLU_PRO_HF)

    return load_from("mmlu_pro", path, local, "mmlu_pro", hub)
