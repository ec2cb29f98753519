"""GPQA (graduate-level, "Google-proof" science questions): `gpqa_main` (448) and `gpqa_diamond` (198).

The authors ship the data as a password-protected zip so that the questions never appear in plain text
online. It is read here *in memory only* (`zipfile` with the password from the GPQA README): nothing
is extracted to disk, and no question is printed or logged. Locally: the zip (`dataset.zip`, or a
folder holding it), or an HF export / CSV with the same columns; online: `Idavidrein/gpqa`, configs
`gpqa_main` / `gpqa_diamond` (gated: accept its terms on the Hub first). HF names its only split `train`;
here it is `test` — it is the evaluation set, and must never be mistaken for training data.

Each question's four options (the `Correct Answer` and three `Incorrect Answer` fields, stripped) are
shuffled with a seed of the item's own, shared by both sets, so a question has the same order and
gold letter in main and diamond. Ids are 'gpqa-<Record ID>' in both: Diamond is a subset of main.
CPP's partition (98/50/100): for `gpqa_diamond`, train (98) and test (100) split Diamond's 198
questions and dev (50) comes from main minus Diamond — our reading of the paper, which gives the sizes
only; for `gpqa_main`, all three parts come from main.
"""

from __future__ import annotations

import functools
import hashlib
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from data.benchmarks.catalog import benchmark
from data.benchmarks.options import choice_sample
from data.benchmarks.sources import Record, csv_records, hub_records, load_from, read_records
from data.benchmarks.splits import Part, Scheme
from data.types import Sample

HF_DATASET = "Idavidrein/gpqa"
PASSWORD = b"deserted-untie-orchid"  # published in the GPQA README, so that the zip is not crawlable
OPTION_FIELDS = ("Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3")
CPP_MAIN = Scheme(
    parts=(Part("train", 98), Part("dev", 50), Part("test", 100)), note="CPP's GPQA split sizes"
)
CPP_DIAMOND = Scheme(
    parts=(Part("train", 98), Part("test", 100), Part("dev", 50, pool="gpqa_main")),
    note="CPP's GPQA split sizes: Diamond's 198 = 98 train + 100 test; dev from main minus Diamond",
)


@functools.lru_cache(maxsize=4)
def _zip_member(zip_path: str, mtime: float, member: str) -> str:
    """One CSV of the GPQA zip, decrypted in memory (cached per file version: decryption is slow)."""
    with zipfile.ZipFile(zip_path) as z:
        return z.read(member, pwd=PASSWORD).decode("utf-8")


def _from_zip(file: Path, variant: str) -> list[Record]:
    return csv_records(_zip_member(str(file.resolve()), file.stat().st_mtime, f"dataset/{variant}.csv"))


def to_sample(record: Mapping[str, Any], where: str) -> Sample:
    """One GPQA row as a shuffled 4-option 'choice' Sample."""
    question = record.get("Question")
    options = [record.get(f) for f in OPTION_FIELDS]
    if not isinstance(question, str) or not all(isinstance(o, str) and o.strip() for o in options):
        raise ValueError(f"{where}: expected non-empty Question, {', '.join(OPTION_FIELDS)}")
    record_id = str(record.get("Record ID") or "").strip()
    item_id = f"gpqa-{record_id or hashlib.sha1(question.encode()).hexdigest()[:12]}"
    meta = {
        "subject": record.get("Subdomain"),
        "domain": record.get("High-level domain"),
        "record_id": record_id,
    }
    return choice_sample("gpqa", item_id, question, [str(o) for o in options], 0, meta, shuffle=True)


def _load(variant: str, split: str, path: str | None) -> list[Sample]:
    def samples(records: list[Record], where: str) -> list[Sample]:
        return [to_sample(r, f"{where}: row {i + 1}") for i, r in enumerate(records)]

    def local(p: Path) -> list[Sample]:
        file = p / "dataset.zip" if p.is_dir() else p
        if not file.is_file():
            raise FileNotFoundError(f"{variant}: no dataset.zip in {p}")
        if file.suffix.lower() == ".zip":
            return samples(_from_zip(file, variant), f"{file}:{variant}")
        return samples(read_records(file), str(file))

    def hub() -> list[Sample]:
        hint = "set `path:` to GPQA's dataset.zip"
        return samples(hub_records(variant, HF_DATASET, variant, "train", hint), f"{HF_DATASET} {variant}")

    return load_from(variant, path, local, "gpqa", hub)


@benchmark(
    "gpqa_main",
    kind="choice",
    splits=("test",),
    schemes={"cpp": CPP_MAIN},
    source=f"{HF_DATASET} (gpqa_main)",
)
def load_gpqa_main(split: str, path: str | None) -> list[Sample]:
    """GPQA main's 448 questions (`split` is 'test': HF's 'train')."""
    return _load("gpqa_main", split, path)


@benchmark(
    "gpqa_diamond",
    kind="choice",
    splits=("test",),
    schemes={"cpp": CPP_DIAMOND},
    source=f"{HF_DATASET} (gpqa_diamond)",
)
def load_gpqa_diamond(split: str, path: str | None) -> list[Sample]:
    """GPQA Diamond's 198 questions (`split` is 'test': HF's 'train')."""
    return _load("gpqa_diamond", split, path)
