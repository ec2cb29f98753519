"""`sweep data check`: the summary line, exit codes 0/1/2, and no heavy framework imported."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sweep import data_cli

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT.parent / "shared" / "benchmarks"
needs_shared = pytest.mark.skipif(not BENCHMARKS.is_dir(), reason=f"shared benchmarks absent at {BENCHMARKS}")


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="sweep")
    data_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    return data_cli.run(parser.parse_args(["data", "check", *argv]))


@needs_shared
def test_check_passes_on_a_shared_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("gsm8k", "--path", str(BENCHMARKS / "gsm8k" / "test.jsonl")) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "gsm8k test: 1319 records: 1319 correct, 0 wrong, 0 unparsable"
    assert out[1].strip() == "graded: gold answer 1319, solution 1319"


@needs_shared
def test_check_runs_a_partition_split(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("gpqa_diamond", "--split", "cpp:dev") == 0
    assert capsys.readouterr().out.startswith(
        "gpqa_diamond cpp:dev: 50 records: 50 correct, 0 wrong, 0 unparsable"
    )


def test_check_fails_on_a_wrong_gold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        {
            "problem": "p1",
            "solution": "so $\\boxed{\\frac{1}{2}}$",
            "answer": "0.5",
            "unique_id": "test/algebra/1.json",
        },
        {"problem": "p2", "solution": "so $\\boxed{7}$", "answer": "6", "unique_id": "test/algebra/2.json"},
    ]
    file = tmp_path / "test.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert _run("math500", "--path", str(file)) == 1
    out = capsys.readouterr().out
    assert "2 records: 1 correct, 1 wrong, 0 unparsable" in out
    assert "wrong: math500-algebra-2 (solution)" in out and "p2" not in out  # ids, never question text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("gsm8kk",), "did you mean 'gsm8k'"),
        (("mmlu-pro",), "did you mean 'mmlu_pro'"),
        (("math500", "--path", "/no/such/file.jsonl"), "no such file or folder"),
        (("gsm8k", "--split", "tset"), "did you mean 'test'"),
    ],
)
def test_check_usage_errors_exit_2(
    argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(*argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_data_cli_imports_no_heavy_framework(tmp_path: Path) -> None:
    file = tmp_path / "test.jsonl"
    file.write_text(json.dumps({"question": "q", "answer": "x\n#### 4"}) + "\n", encoding="utf-8")
    code = (
        "import sys; from sweep import data_cli; "
        f"rc = data_cli.main(['check', 'gsm8k', '--path', {str(file)!r}]); "
        "bad = [m for m in ('ray', 'mlflow', 'optuna', 'vllm', 'datasets') if m in sys.modules]; "
        "assert not bad, bad; sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("gsm8k test: 1 records: 1 correct, 0 wrong, 0 unparsable")
