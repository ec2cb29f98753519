"""How long the first math check in a fresh process takes. Each run starts a new Python process that
imports the graders, makes a `MathGrader` and times its first `explain` call; the figure is the median
over `--runs` processes (each process's import time is printed too).

Cases (`--case`, default all):
- `poly`: `\\boxed{x^2+2x+1}` against `(x+1)^2`, the issue's example, settled by the exact fast path
  (`data.grading.mathfast`) without sympy;
- `sympy`: `\\boxed{\\sin^2 x+\\cos^2 x}` against `1`, which only math-verify decides: the first check
  waits for the worker's start (sympy's imports and warm-up);
- `sympy-later`: the same check 3 s after the grader is made (what a sweep sees: the grader is made
  before the episode's model calls), so the background start has had time to finish.

    .venv/bin/python bench/grader_first_call.py --runs 7

The goal: the first check of a common answer within 0.3 s on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "poly": ("\\boxed{x^2+2x+1}", "(x+1)^2", 0.0),
    "sympy": ("\\boxed{\\sin^2 x+\\cos^2 x}", "1", 0.0),
    "sympy-later": ("\\boxed{\\sin^2 x+\\cos^2 x}", "1", 3.0),
}
# Runs in the child: times the import, making the grader, and the first check.
CHILD = """
import json, sys, time
t0 = time.perf_counter()
from data.grading.graders import MathGrader
t1 = time.perf_counter()
grader = MathGrader()
time.sleep(float(sys.argv[3]))
t2 = time.perf_counter()
graded = grader.explain(sys.argv[1], sys.argv[2])
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "check_s": t3 - t2, "verdict": graded.verdict}))
"""


def one_run(output: str, gold: str, wait: float) -> dict[str, float | str]:
    """Time the first check in one fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, output, gold, str(wait)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    result: dict[str, float | str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per case (default 7)")
    parser.add_argument("--case", choices=[*CASES, "all"], default="all")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    for name in CASES if args.case == "all" else [args.case]:
        output, gold, wait = CASES[name]
        runs = [one_run(output, gold, wait) for _ in range(args.runs)]
        checks = [float(r["check_s"]) for r in runs]
        imports = [float(r["import_s"]) for r in runs]
        verdicts = sorted({str(r["verdict"]) for r in runs})
        print(
            f"{name:12s} first check: median {statistics.median(checks) * 1000:7.1f} ms "
            f"(min {min(checks) * 1000:.1f}, max {max(checks) * 1000:.1f}) over {args.runs} fresh processes; "
            f"import of data.grading.graders median {statistics.median(imports) * 1000:.0f} ms; verdict {', '.join(verdicts)}"
        )


if __name__ == "__main__":
    main()
