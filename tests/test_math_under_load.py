"""The math grader gives the same verdicts with every core busy: the worker's CPU budget is charged to
the check alone (its start-up and a fresh child's first page faults are not), and a timed-out check is
retried once, so machine load never turns a verdict into 'unparsable'."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from data.grading import mathcheck, mathgrade
from data.grading.mathcheck import MathChecker, _cpu_seconds
from data.grading.mathgrade import MathGrader

CORPUS = Path(__file__).parent / "corpus" / "differential_math.jsonl"
MATH500 = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "math500" / "test.jsonl"
MATH500_ITEMS = 150  # each graded against the next item's gold, as the test that once flaked under load


def _pairs() -> list[tuple[str, str]]:
    """(output, gold) pairs: the differential math cases, and MATH-500 answers against other golds."""
    cases = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    pairs = [(c["output"], gold) for c in cases for gold in [c["gold"], *c["not"]]]
    if MATH500.is_file():
        golds = [json.loads(line)["answer"] for line in MATH500.read_text(encoding="utf-8").splitlines()]
        golds = golds[: MATH500_ITEMS + 1]
        pairs += [(f"\\boxed{{{other}}}", gold) for gold, other in zip(golds, golds[1:], strict=False)]
    return pairs


def _grade_all(
    pairs: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], MathChecker]:
    """Every pair's verdict and reason, from a fresh worker and an empty verdict cache."""
    fresh = MathChecker()
    monkeypatch.setattr(mathcheck, "_CHECKER", (os.getpid(), fresh))
    monkeypatch.setattr(mathgrade, "_verdict_cache", {})
    try:
        fresh.start()
        grader = MathGrader()
        graded = [grader.explain(output, gold) for output, gold in pairs]
    finally:
        fresh.close()
    return [f"{g.verdict}:{g.reason}" for g in graded], fresh


@pytest.fixture
def busy_cores() -> Iterator[list[subprocess.Popen[bytes]]]:
    """One busy-loop process per core, stopped by PID afterwards."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(max(2, os.cpu_count() or 2))
    ]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_math_verdicts_do_not_depend_on_load(
    busy_cores: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    pairs = _pairs()
    for proc in busy_cores:  # quiet first: pause the loops (SIGSTOP), so the reference run has the cores
        proc.send_signal(19)
    quiet, _ = _grade_all(pairs, monkeypatch)
    for proc in busy_cores:
        proc.send_signal(18)  # SIGCONT: every core busy from here on
    loaded, checker = _grade_all(pairs, monkeypatch)
    burnt = [_cpu_seconds(p.pid) for p in busy_cores]
    differences = [(pairs[i], a, b) for i, (a, b) in enumerate(zip(quiet, loaded, strict=True)) if a != b]
    print(
        f"\n{len(pairs)} math gradings, quiet and with {len(busy_cores)} busy loops "
        f"(CPU s each: {', '.join(f'{b:.1f}' for b in burnt if b is not None)}): {len(differences)} differ, "
        f"{checker.retries} retried, {sum(v.endswith(':timeout') for v in loaded)} timed out"
    )
    assert all(b is None or b > 1.0 for b in burnt), "the busy loops did not load the machine"
    assert differences == []
    assert not any(v.endswith(":timeout") for v in quiet + loaded)
