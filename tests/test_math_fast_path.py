"""The exact fast path (`data.grading.mathfast`) gives math-verify's verdict wherever it gives one, never
starts sympy, and leaves everything outside its reach to math-verify; a grader starts the math-verify
worker in the background and a process that exits before it is warm does not wait for it."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from data.grading.mathcheck import MathChecker
from data.grading.mathfast import equivalent
from data.grading.mathgrade import extract_answer, normalize, too_costly
from data.grading.mathworker import check

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"


def _corpus_pairs() -> list[tuple[str, str]]:
    pairs = []
    for name in ("grader_cases.jsonl", "differential_math.jsonl"):
        for line in (CORPUS / name).read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            if case["kind"] != "math" or (answer := extract_answer(case["output"])) is None:
                continue
            pairs += [(answer, gold) for gold in [case["gold"], *case.get("not", [])]]
    return pairs


def _generated_pairs(n: int, seed: int = 7) -> list[tuple[str, str]]:
    """Random polynomials and rational functions (with roots and pi) in sympy's own LaTeX, each paired
    with an equal rewriting (expanded, factored, together) and with a slightly different expression."""
    import sympy as sp

    x, y = sp.symbols("x y")
    rng = random.Random(seed)
    atoms = [x, y, sp.sqrt(2), sp.sqrt(3), sp.pi, sp.Rational(1, 2), sp.Integer(3)]
    pairs = []
    for _ in range(n):
        terms = rng.randint(1, 3)
        expr = sum(rng.randint(-3, 3) * rng.choice(atoms) ** rng.randint(1, 3) for _ in range(terms))
        expr = expr * (rng.choice(atoms) + rng.randint(-2, 2))
        if rng.random() < 0.3:
            expr = expr / (x + rng.randint(1, 3))
        same = rng.choice([sp.expand, sp.factor, sp.together, sp.simplify])(expr)
        pairs.append((sp.latex(expr), sp.latex(same)))
        pairs.append((sp.latex(expr), sp.latex(expr + rng.choice(atoms))))
    return pairs


def _agreement(pairs: list[tuple[str, str]]) -> tuple[int, list[str]]:
    """(how many pairs the fast path settles, the ones where it disagrees with math-verify)."""
    settled, disagree = 0, []
    for answer, gold in pairs:
        a, g = normalize(answer), normalize(gold)
        if not a or not g or too_costly(a) or (fast := equivalent(a, g)) is None:
            continue  # the grader refuses a costly answer before either check
        settled += 1
        slow = check(a, g)
        if fast != slow:
            disagree.append(f"{a!r} vs {g!r}: fast {fast}, math-verify {slow}")
    return settled, disagree


def test_fast_verdicts_agree_with_math_verify_on_the_corpus() -> None:
    settled, disagree = _agreement(_corpus_pairs())
    assert settled >= 40, settled  # the fast path does answer corpus checks
    assert disagree == [], "\n".join(disagree)


def test_fast_verdicts_agree_with_math_verify_on_generated_expressions() -> None:
    pairs = _generated_pairs(60)
    settled, disagree = _agreement(pairs)
    assert settled >= 0.8 * len(pairs), (settled, len(pairs))  # sympy's own LaTeX is within reach
    assert disagree == [], "\n".join(disagree)


@pytest.mark.parametrize(
    ("answer", "gold", "verdict"),
    [
        ("x^2+2x+1", "(x+1)^2", "equal"),
        ("\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt{2}}{2}", "equal"),
        ("\\frac{1}{1+\\sqrt{2}}", "\\sqrt{2}-1", "equal"),
        ("\\sqrt{12}", "2\\sqrt{3}", "equal"),
        ("\\sqrt{2}\\sqrt{3}", "\\sqrt{6}", "equal"),
        ("\\pi r^2", "r^2\\pi", "equal"),
        ("X", "x", "equal"),  # math-verify reads letters case-insensitively
        ("3x^{-1}", "\\frac{3}{x}", "equal"),
        ("\\frac{x^2-1}{x-1}", "x+1", "equal"),
        ("2x+3", "2x+4", "different"),
        ("\\frac{665857}{470832}", "\\sqrt{2}", "different"),  # close is not equal
        ("\\pi", "3", "different"),
        ("\\sqrt{8}", "3", "different"),
    ],
)
def test_exact_verdicts(answer: str, gold: str, verdict: str) -> None:
    assert equivalent(answer, gold) == verdict
    assert check(answer, gold) == verdict  # the same as math-verify's


@pytest.mark.parametrize(
    "answer",
    [
        "1.5",  # decimals: math-verify compares to 6 places
        "e^2",  # Euler's number
        "2i",  # the imaginary unit
        "2\\frac{1}{3}",  # a mixed number
        "1/2x",  # 1/(2x) or x/2
        "x(x+1)",  # maybe a function
        "x^23",  # x^2·3 in LaTeX
        "x^n",
        "\\sin x",
        "\\sqrt{x}",
        "\\sqrt{-4}",
        "\\frac{1}{0}",
        "(x+y)^{25}",
        "(x+y+1)^{24}",  # too many terms
        "\\sqrt{99999999999}",
        "1,2",
        "x\\le3",
        "",
    ],
)
def test_out_of_reach_answers_go_to_math_verify(answer: str) -> None:
    started = time.process_time()
    assert equivalent(answer, "x+1") is None
    assert time.process_time() - started < 0.5


def test_the_first_check_never_starts_sympy() -> None:
    code = (
        "import sys, time\n"
        "from data.grading.graders import MathGrader\n"
        "t = time.perf_counter()\n"
        "graded = MathGrader().explain('\\\\boxed{x^2+2x+1}', '(x+1)^2')\n"
        "print(graded.verdict, 'sympy' in sys.modules, round(time.perf_counter() - t, 3))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    verdict, sympy_loaded, seconds = done.stdout.split()
    assert (verdict, sympy_loaded) == ("correct", "False")
    assert float(seconds) < 0.3, seconds


def test_a_grader_starts_the_worker_in_the_background_and_exit_does_not_wait() -> None:
    code = (
        "import time\n"
        "t = time.perf_counter()\n"
        "from data.grading.graders import MathGrader\n"
        "from data.grading.mathcheck import checker\n"
        "MathGrader()\n"
        "print(checker()._proc.pid, round(time.perf_counter() - t, 3), flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    pid, seconds = done.stdout.split()
    assert float(seconds) < 1.0  # making the grader does not wait for the worker
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(int(pid)):
        time.sleep(0.05)
    assert not _alive(int(pid))  # and the worker goes with the process


def test_closing_a_worker_that_is_still_warming_up_does_not_wait_for_it() -> None:
    fresh = MathChecker()
    fresh.start_soon()
    assert fresh._proc is not None
    proc = fresh._proc
    started = time.monotonic()
    fresh.close()
    assert time.monotonic() - started < 0.5  # stopped at once, not after its second of warm-up
    assert proc.poll() is not None


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (FileNotFoundError, IndexError):
        return False
    except OSError:
        return os.path.exists(f"/proc/{pid}")
