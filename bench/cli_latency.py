"""How fast the quick commands answer: `sweep --help`, `--version`, `list methods`, `validate` and
`plan` on examples/simulated.yaml, each run `--runs` times as a fresh subprocess of the venv's `sweep`
(what a user types); wall seconds from start to exit, median and max, and the heavy frameworks each
one imported (none of ray, mlflow, optuna, torch may load for these).

    .venv/bin/python bench/cli_latency.py --runs 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = (
    ["--help"],
    ["--version"],
    ["list", "methods"],
    ["validate", "examples/simulated.yaml"],
    ["plan", "examples/simulated.yaml"],
)
HEAVY = ("ray", "mlflow", "optuna", "torch", "llama_cpp", "vllm")
# Runs the CLI as the console script does, then names the heavy modules it left in sys.modules.
PROBE = (
    "import sys\nfrom sweep.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
    f"print('heavy:', ','.join(m for m in {HEAVY!r} if m in sys.modules) or '-', file=sys.stderr)"
)


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def heavy_imports(args: list[str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return proc.stderr.strip().rsplit("heavy:", 1)[-1].strip()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    sweep = str(Path(sys.executable).parent / "sweep")
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores, {args.runs} runs each")
    print("| command | median s | max s | heavy imports |\n| --- | --- | --- | --- |")
    for cmd in COMMANDS:
        times = [wall([sweep, *cmd]) for _ in range(args.runs)]
        print(
            f"| `sweep {' '.join(cmd)}` | {statistics.median(times):.2f} | {max(times):.2f} "
            f"| {heavy_imports(cmd)} |"
        )


if __name__ == "__main__":
    main()
