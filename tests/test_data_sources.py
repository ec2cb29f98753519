"""Where benchmarks load from: HF Parquet/JSONL exports, MATH's original folder layout, and the Hugging
Face Hub (through a stand-in `datasets` module: no network here), plus option shuffling and formats."""

from __future__ import annotations

import csv
import json
import sys
import types
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data import check_benchmark, format_block, load_benchmark
from data.benchmarks.formats import KINDS, STYLES, pear_task
from data.benchmarks.options import choice_sample, shuffle_order

BENCHMARKS = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks"
needs_shared = pytest.mark.skipif(not BENCHMARKS.is_dir(), reason=f"shared benchmarks absent at {BENCHMARKS}")


def _parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _gpqa_rows(n: int) -> list[dict[str, str]]:
    """Made-up GPQA-shaped rows (never real GPQA questions, which must not be written out)."""
    return [
        {
            "Question": f"Made-up question {i}?",
            "Correct Answer": f" right {i} ",
            "Incorrect Answer 1": f"wrong {i}a",
            "Incorrect Answer 2": f"wrong {i}b",
            "Incorrect Answer 3": f"wrong {i}c",
            "Record ID": f"rec{i:04d}",
            "Subdomain": "Made-up",
            "High-level domain": "Physics",
        }
        for i in range(n)
    ]


def _math_folder(root: Path, n_hard: int) -> Path:
    """MATH's original layout, `<root>/test/<subject>/<n>.json`, with n_hard level-5 problems."""
    for i in range(n_hard + 20):
        subject = ("algebra", "geometry")[i % 2]
        level = "Level 5" if i < n_hard else "Level 3"
        record = {
            "problem": f"What is {i} + {i}?",
            "level": level,
            "type": subject.title(),
            "solution": f"We add: $\\boxed{{{2 * i}}}$.",
        }
        _jsonl(root / "test" / subject / f"{i}.json", [record]).write_text(
            json.dumps(record), encoding="utf-8"
        )
    return root


def test_math_hard_from_math_folder_and_cpp_partition(tmp_path: Path) -> None:
    root = _math_folder(tmp_path / "MATH", 360)
    items = load_benchmark("math_hard", path=str(root))
    assert len(items) == 360 and all(s.metadata["level"] == 5 for s in items)
    assert {s.id for s in items} >= {"math_hard-algebra-0", "math_hard-geometry-1"}
    assert items[0].gold == "0" and check_benchmark("math_hard", path=str(root)).ok
    parts = {p: load_benchmark("math_hard", f"cpp:{p}", path=str(root)) for p in ("train", "dev", "test")}
    assert [len(parts[p]) for p in ("train", "dev", "test")] == [150, 100, 100]
    ids = [{s.id for s in parts[p]} for p in ("train", "dev", "test")]
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
    assert load_benchmark("math_hard", path=str(root / "test")) == items  # the split folder itself


def test_math_exports(tmp_path: Path) -> None:
    rows = [
        {
            "problem": "1+1?",
            "solution": "so $\\boxed{2}$",
            "answer": "2",
            "subject": "Algebra",
            "level": 1,
            "unique_id": "test/algebra/7.json",
        }
    ]
    export = _parquet(tmp_path / "math500" / "test-00000-of-00001.parquet", rows)
    assert [s.id for s in load_benchmark("math500", path=str(export.parent))] == ["math500-algebra-7"]
    hard = [
        {
            "problem": "Hard?",
            "level": "Level 5",
            "type": "Number Theory",
            "solution": "$\\boxed{\\frac{1}{2}}$",
        },
        {"problem": "Easy?", "level": "Level 2", "type": "Algebra", "solution": "$\\boxed{3}$"},
    ]
    items = load_benchmark("math_hard", path=str(_jsonl(tmp_path / "hard.jsonl", hard)))
    assert [(s.gold, s.metadata["subject"]) for s in items] == [("\\frac{1}{2}", "Number Theory")]
    assert items[0].id.startswith("math_hard-") and len(items[0].id) == len("math_hard-") + 12


def test_gsm8k_parquet_export(tmp_path: Path) -> None:
    rows = [{"question": "q0", "answer": "a\n#### 1,000"}, {"question": "q1", "answer": "b\n#### 7"}]
    _parquet(tmp_path / "main" / "test-00000-of-00001.parquet", rows)
    items = load_benchmark("gsm8k", path=str(tmp_path))
    assert [(s.id, s.gold) for s in items] == [("gsm8k-test-0000", "1000"), ("gsm8k-test-0001", "7")]


@needs_shared
def test_mmlu_hf_export_matches_the_csv_files(tmp_path: Path) -> None:
    rows = []
    for subject in ("abstract_algebra", "anatomy"):
        with (BENCHMARKS / "mmlu" / "test" / f"{subject}_test.csv").open(newline="", encoding="utf-8") as fh:
            for fields in list(csv.reader(fh))[:4]:
                rows.append(
                    {
                        "question": fields[0],
                        "subject": subject,
                        "choices": fields[1:5],
                        "answer": "ABCD".index(fields[5]),
                    }
                )
    export = load_benchmark(
        "mmlu", path=str(_parquet(tmp_path / "all" / "test-00000-of-00001.parquet", rows).parent.parent)
    )
    from_csv = [s for s in load_benchmark("mmlu") if s.id in {e.id for e in export}]
    assert export == from_csv and len(export) == 8


@needs_shared
def test_truthfulqa_hf_export_matches_mc_task(tmp_path: Path) -> None:
    raw = json.loads(
        (BENCHMARKS / "truthfulqa" / "data" / "v0" / "mc_task.json").read_text(encoding="utf-8")
    )[:6]
    rows = [
        {
            "question": r["question"],
            "mc1_targets": {"choices": list(r["mc1_targets"]), "labels": list(r["mc1_targets"].values())},
        }
        for r in raw
    ]
    export = load_benchmark("truthfulqa", path=str(_parquet(tmp_path / "mc.parquet", rows)))
    assert export == load_benchmark("truthfulqa")[:6]
    with pytest.raises(ValueError, match="generation set"):
        load_benchmark("truthfulqa", path=str(BENCHMARKS / "truthfulqa" / "TruthfulQA.csv"))


def test_mmlu_pro_and_gpqa_exports(tmp_path: Path) -> None:
    pro = [
        {
            "question_id": 5,
            "question": "q",
            "options": ["a", "b", "c"],
            "answer": "C",
            "answer_index": 2,
            "cot_content": "",
            "category": "math",
            "src": "x",
        }
    ]
    items = load_benchmark("mmlu_pro", path=str(_jsonl(tmp_path / "pro.jsonl", pro)))
    assert [(s.id, s.gold, s.choices) for s in items] == [("mmlu_pro-5", "C", ("a", "b", "c"))]
    bad = [dict(pro[0], answer="D")]
    with pytest.raises(ValueError, match="not one of the 3 option letters"):
        load_benchmark("mmlu_pro", path=str(_jsonl(tmp_path / "bad.jsonl", bad)))
    file = tmp_path / "gpqa_main.csv"
    with file.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(_gpqa_rows(1)[0]))
        writer.writeheader()
        writer.writerows(_gpqa_rows(30))
    gpqa = load_benchmark("gpqa_main", path=str(file))
    assert [s.id for s in gpqa[:2]] == ["gpqa-rec0000", "gpqa-rec0001"]
    assert all(s.choices[ord(s.gold) - 65] == f"right {i}" for i, s in enumerate(gpqa))
    assert len({s.gold for s in gpqa}) == 4  # the correct answer lands in every position


class FakeDatasets(types.ModuleType):
    """Stands in for Hugging Face `datasets`: serves rows per (id, config, split), records the calls."""

    def __init__(self, tables: dict[tuple[str, str | None, str], list[dict[str, Any]]]) -> None:
        super().__init__("datasets")
        self.tables, self.calls = tables, []

    def load_dataset(
        self, name: str, config: str | None = None, split: str = "", data_dir: str | None = None
    ) -> Any:
        self.calls.append((name, config, split))
        if (name, config, split) not in self.tables:
            raise ValueError(f"no split {split}")
        return self.tables[(name, config, split)]


def test_every_benchmark_loads_from_the_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeDatasets(
        {
            ("openai/gsm8k", "main", "train"): [{"question": "q", "answer": "x\n#### 3"}],
            ("HuggingFaceH4/MATH-500", None, "test"): [
                {
                    "problem": "p",
                    "solution": "\\boxed{1}",
                    "answer": "1",
                    "subject": "Algebra",
                    "level": 2,
                    "unique_id": "test/algebra/1.json",
                }
            ],
            ("lighteval/MATH-Hard", None, "train"): [
                {"problem": "p", "level": "Level 5", "type": "Algebra", "solution": "\\boxed{2}"}
            ],
            ("cais/mmlu", "all", "dev"): [
                {"question": "q", "subject": "anatomy", "choices": ["a", "b", "c", "d"], "answer": 3}
            ],
            ("TIGER-Lab/MMLU-Pro", None, "validation"): [
                {
                    "question_id": 1,
                    "question": "q",
                    "options": list("abcde"),
                    "answer": "E",
                    "answer_index": 4,
                    "cot_content": "c",
                    "category": "law",
                    "src": "s",
                }
            ],
            ("truthfulqa/truthful_qa", "multiple_choice", "validation"): [
                {"question": "q", "mc1_targets": {"choices": ["yes", "no", "maybe"], "labels": [1, 0, 0]}}
            ],
            ("Idavidrein/gpqa", "gpqa_diamond", "train"): _gpqa_rows(2),
        }
    )
    monkeypatch.setitem(sys.modules, "datasets", fake)
    monkeypatch.setenv("DEBATE_SWEEP_BENCHMARKS", str(tmp_path))  # an empty folder: no local copy
    assert load_benchmark("gsm8k", "train")[0].gold == "3"
    assert load_benchmark("math500")[0].id == "math500-algebra-1"
    assert load_benchmark("math_hard", "train")[0].gold == "2"
    assert [(s.id, s.gold) for s in load_benchmark("mmlu", "dev")] == [("mmlu-dev-anatomy-0000", "D")]
    assert load_benchmark("mmlu_pro", "validation")[0].metadata["cot_content"] == "c"
    tqa = load_benchmark("truthfulqa")[0]
    assert tqa.choices[ord(tqa.gold) - 65] == "yes"
    assert [s.id for s in load_benchmark("gpqa_diamond")] == ["gpqa-rec0000", "gpqa-rec0001"]
    assert ("truthfulqa/truthful_qa", "multiple_choice", "validation") in fake.calls
    with pytest.raises(FileNotFoundError, match="rumad:dev"):
        load_benchmark("mmlu", "validation")  # the hub fails: the hint names the offline dev split


def test_option_shuffle_is_per_item_and_gold_follows() -> None:
    assert shuffle_order("b", "item-1", 6) == shuffle_order("b", "item-1", 6)
    orders = {tuple(shuffle_order("b", f"item-{i}", 4)) for i in range(50)}
    assert len(orders) > 10
    sample = choice_sample("b", "item-1", "q", ["right", "w1", "w2", "w3"], 0, {}, shuffle=True)
    assert sample.choices[ord(sample.gold) - 65] == "right"
    assert [["right", "w1", "w2", "w3"][i] for i in sample.metadata["option_order"]] == list(sample.choices)
    plain = choice_sample("b", "item-1", "q", ["w0", " right ", "w2"], 1, {}, shuffle=False)
    assert (plain.gold, plain.choices) == ("B", ("w0", "right", "w2"))
    with pytest.raises(ValueError):
        choice_sample("b", "x", "q", ["only"], 0, {}, shuffle=False)


def test_format_blocks() -> None:
    assert format_block("gsm8k") == (
        "Task type: GSM8K grade-school math. Answer format: provide only the final numeric value in the JSON "
        "answer field. Do not include units, commas, or explanatory text in the answer field."
    )
    assert "most truthful option" in format_block("truthfulqa")
    assert format_block("mmlu_pro").startswith("Task type: MMLU-Pro multiple-choice.")
    assert (
        format_block("choice", "rumad")
        == "Put your final choice in the form \\boxed{answer} at the end of your response."
    )
    assert format_block("gsm8k", "rumad").startswith("Your final answer should be a single numerical number")
    for kind in KINDS:
        for style in STYLES:
            assert format_block(kind, style)
    assert pear_task("math")[0] == "competition math"
    with pytest.raises(ValueError, match="known kinds"):
        format_block("poetry")
    with pytest.raises(ValueError, match="unknown format style"):
        format_block("math", "socratic")
