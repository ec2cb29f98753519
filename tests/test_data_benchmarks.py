"""Every benchmark file of the shared copy, whole: golds and gold solutions grade correct, distractors
grade wrong, loaders keep ids and counts, options are shuffled per item, partitions are disjoint.

GPQA's questions must never be printed: its tests compare ids, letters and booleans only."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from data import grader_for, load_benchmark
from data.benchmarks.check import check_benchmark
from data.benchmarks.gpqa import OPTION_FIELDS, PASSWORD
from data.benchmarks.options import LETTERS
from data.benchmarks.registry import benchmark_info, split_items
from data.benchmarks.sources import csv_records
from data.benchmarks.splits import partition
from data.grading.choice import normalize_option
from data.grading.mathgrade import normalize, rational
from data.types import Sample

BENCHMARKS = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks"
pytestmark = pytest.mark.skipif(not BENCHMARKS.is_dir(), reason=f"shared benchmarks absent at {BENCHMARKS}")

WHOLE_FILES = [  # (benchmark, split, records, checks run on every record)
    ("gsm8k", "test", 1319, {"gold answer", "solution"}),
    ("gsm8k", "train", 7473, {"gold answer", "solution"}),
    ("math500", "test", 500, {"gold answer", "solution"}),
    ("math_hard", "test", 134, {"gold answer", "solution"}),
    ("mmlu", "test", 14042, {"gold answer"}),
    ("mmlu_pro", "test", 12032, {"gold answer"}),
    ("truthfulqa", "test", 817, {"gold answer", "option text"}),
    ("gpqa_main", "test", 448, {"gold answer"}),
    ("gpqa_diamond", "test", 198, {"gold answer"}),
]


@pytest.mark.parametrize(("name", "split", "records", "checks"), WHOLE_FILES)
def test_whole_file_gold_check(name: str, split: str, records: int, checks: set[str]) -> None:
    report = check_benchmark(name, split)
    assert report.summary() == f"{records} records: {records} correct, 0 wrong, 0 unparsable", (
        report.failures[:5]
    )
    assert report.ok
    for check in checks:
        assert report.checks[check] == records, report.details()
    if name in ("mmlu", "mmlu_pro", "gpqa_main", "gpqa_diamond"):  # answers given as option text, too
        assert report.checks["option text"] + report.skipped["option text"] == records
        assert report.skipped["option text"] < records * 0.02, report.details()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["truthfulqa", "gpqa_main", "gpqa_diamond", "mmlu", "mmlu_pro"])
def test_distractor_texts_grade_wrong(name: str) -> None:
    """Every other option's text, given as the answer, grades wrong: never correct, never unreadable."""
    graded = 0
    for n, sample in enumerate(load_benchmark(name)):
        grader, options = grader_for(sample), [normalize_option(c) for c in sample.choices]
        for i, text in enumerate(sample.choices):
            core = options[i].strip("()[].: ")
            if (
                LETTERS[i] == sample.gold
                or options.count(options[i]) != 1
                or (len(core) == 1 and core.isalpha())
            ):
                continue
            graded += 1
            assert grader.grade(text, sample.gold) == "wrong", (sample.id, LETTERS[i])
            if n % 5 == 0:  # by letter too (every fifth item: the letter path is cheap to trust)
                assert grader.grade(f"Answer: {LETTERS[i]}", sample.gold) == "wrong", (sample.id, LETTERS[i])
    assert graded > len(load_benchmark(name))


@pytest.mark.slow
def test_math500_other_items_answers_grade_wrong() -> None:
    """Each MATH-500 answer graded against the next item's gold: wrong unless the two are equal."""
    items = load_benchmark("math500")
    verdicts = Counter()
    for sample, other in zip(items, items[1:], strict=False):
        verdict = grader_for(sample).grade(f"\\boxed{{{other.gold}}}", sample.gold)
        same = normalize(other.gold) == normalize(sample.gold) or (
            rational(normalize(other.gold)) is not None
            and rational(normalize(other.gold)) == rational(normalize(sample.gold))
        )
        assert verdict == ("correct" if same else "wrong"), (sample.id, other.id, verdict)
        verdicts[verdict] += 1
    assert verdicts["wrong"] > 450


def test_math_loaders() -> None:
    math500, hard = load_benchmark("math500"), load_benchmark("math_hard")
    assert len({s.id for s in math500}) == 500 and math500[0].id == "math500-precalculus-807"
    assert Counter(s.metadata["level"] for s in math500)[5] == 134
    assert all(s.kind == "math" and s.metadata["solution"] for s in math500)
    assert len(hard) == 134 and all(s.metadata["level"] == 5 and s.id.startswith("math_hard-") for s in hard)
    assert {s.question for s in hard} <= {s.question for s in math500}  # offline: derived from MATH-500
    assert {s.id.removeprefix("math_hard-") for s in hard} <= {s.id.removeprefix("math500-") for s in math500}


def test_mmlu_loaders() -> None:
    mmlu = load_benchmark("mmlu")
    assert len({s.id for s in mmlu}) == 14042 and len({s.metadata["subject"] for s in mmlu}) == 57
    assert mmlu[0].id == "mmlu-test-abstract_algebra-0000" and mmlu[0].gold == "B"
    assert mmlu[0].choices == ("0", "4", "2", "6")  # published order, not shuffled
    pro = load_benchmark("mmlu_pro")
    assert len({s.id for s in pro}) == 12032
    assert Counter(len(s.choices) for s in pro)[10] == 9981 and min(len(s.choices) for s in pro) == 3
    assert all(s.gold in LETTERS[: len(s.choices)] for s in pro)
    flagged = [s for s in pro if "answer_index_disagrees" in s.metadata]
    assert [(s.id, s.gold) for s in flagged] == [("mmlu_pro-3983", "C")]  # upstream's `answer` is used
    ten = next(s for s in pro if len(s.choices) == 10)
    assert grader_for(ten).grade(f"The answer is ({ten.gold})", ten.gold) == "correct"
    assert grader_for(ten).grade("Answer: K", ten.gold) == "unparsable"


def test_truthfulqa_shuffle_follows_gold() -> None:
    raw = json.loads((BENCHMARKS / "truthfulqa" / "data" / "v0" / "mc_task.json").read_text(encoding="utf-8"))
    items = load_benchmark("truthfulqa")
    assert len(items) == 817
    for sample, record in zip(items, raw, strict=True):
        first = next(iter(record["mc1_targets"]))  # the raw file always lists the correct one first
        assert sample.choices[LETTERS.index(sample.gold)] == first.strip()
        assert sorted(sample.choices) == sorted(k.strip() for k in record["mc1_targets"])
        assert sorted(sample.metadata["option_order"]) == list(range(len(sample.choices)))
    letters = Counter(s.gold for s in items)
    assert letters["A"] < 0.45 * len(items) and len(letters) >= 4  # not always first any more
    assert load_benchmark("truthfulqa") == items  # seeded per item: the same every time


def _gpqa_rows(variant: str) -> list[dict[str, str]]:
    import zipfile

    with zipfile.ZipFile(BENCHMARKS / "gpqa" / "dataset.zip") as z:
        return csv_records(z.read(f"dataset/{variant}.csv", pwd=PASSWORD).decode("utf-8"))


def test_gpqa_shuffle_follows_gold_and_sets_agree() -> None:
    main, diamond = load_benchmark("gpqa_main"), load_benchmark("gpqa_diamond")
    assert (len(main), len(diamond)) == (448, 198)
    for variant, items in (("gpqa_main", main), ("gpqa_diamond", diamond)):
        rows = _gpqa_rows(variant)
        for sample, row in zip(items, rows, strict=True):
            gold_ok = sample.choices[LETTERS.index(sample.gold)] == row["Correct Answer"].strip()
            same_options = sorted(sample.choices) == sorted(row[f].strip() for f in OPTION_FIELDS)
            assert gold_ok and same_options, sample.id  # booleans only: no question text in a failure
    by_id = {s.id: s for s in main}
    assert {s.id for s in diamond} <= set(by_id)  # Diamond is a subset of main, with the same ids
    assert all(by_id[s.id].choices == s.choices and by_id[s.id].gold == s.gold for s in diamond)
    letters = Counter(s.gold for s in main)
    assert set(letters) == set("ABCD") and max(letters.values()) < 0.35 * len(main)


def _ids(samples: list[Sample]) -> set[str]:
    return {s.id for s in samples}


def test_rumad_dev_split_of_mmlu() -> None:
    dev, test = load_benchmark("mmlu", "rumad:dev"), load_benchmark("mmlu", "rumad:test")
    assert len(dev) == 285 and len(test) == 14042 - 285
    assert Counter(s.metadata["subject"] for s in dev) == {s: 5 for s in {x.metadata["subject"] for x in dev}}
    assert not _ids(dev) & _ids(test) and _ids(dev) | _ids(test) == _ids(load_benchmark("mmlu"))
    assert all(s.metadata["partition"] == "rumad:dev" for s in dev)
    assert [s.id for s in load_benchmark("mmlu", "rumad:dev")] == [s.id for s in dev]
    pool = load_benchmark("mmlu")
    reordered = partition("mmlu", "rumad", benchmark_info("mmlu").schemes["rumad"], pool[::-1], lambda _: [])
    assert _ids(reordered["dev"]) == _ids(dev)  # membership depends on ids, never on file order


@pytest.mark.parametrize(
    ("name", "sizes"),
    [
        ("mmlu_pro", {"train": 150, "dev": 100, "test": 100}),
        ("gpqa_main", {"train": 98, "dev": 50, "test": 100}),
    ],
)
def test_cpp_partitions(name: str, sizes: dict[str, int]) -> None:
    parts = {part: load_benchmark(name, f"cpp:{part}") for part in sizes}
    assert {part: len(items) for part, items in parts.items()} == sizes
    assert not (_ids(parts["train"]) & _ids(parts["dev"]) or _ids(parts["train"]) & _ids(parts["test"]))
    assert not _ids(parts["dev"]) & _ids(parts["test"])
    again = load_benchmark(name, "cpp:test", seed=7, limit=10)
    assert _ids(again) <= _ids(parts["test"]) and len(again) == 10


def test_cpp_partition_of_gpqa_diamond() -> None:
    train, test = load_benchmark("gpqa_diamond", "cpp:train"), load_benchmark("gpqa_diamond", "cpp:test")
    dev = load_benchmark("gpqa_diamond", "cpp:dev")
    diamond = _ids(load_benchmark("gpqa_diamond"))
    assert (len(train), len(dev), len(test)) == (98, 50, 100)
    assert _ids(train) | _ids(test) == diamond and not _ids(train) & _ids(test)
    assert not _ids(dev) & diamond and _ids(dev) <= _ids(load_benchmark("gpqa_main"))


def test_math_hard_cpp_needs_the_full_set_offline() -> None:
    with pytest.raises(ValueError, match=r"needs 150 items but the pool has only 134.*path"):
        load_benchmark("math_hard", "cpp:train")


def test_unknown_splits_suggest() -> None:
    with pytest.raises(ValueError, match=r"mmlu has no split 'rumad:deb' \(did you mean 'rumad:dev'\?\)"):
        load_benchmark("mmlu", "rumad:deb")
    with pytest.raises(ValueError, match="did you mean 'cpp:train'"):
        load_benchmark("mmlu_pro", "cp:train")
    with pytest.raises(ValueError, match="no split 'validation'"):
        load_benchmark("truthfulqa", "validation")  # HF's name for it: here it is `test`
    assert benchmark_info("gpqa_diamond").split_names() == ["test", "cpp:train", "cpp:test", "cpp:dev"]
    assert split_items(benchmark_info("gsm8k"), "test")[0].id == "gsm8k-test-0000"
