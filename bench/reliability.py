"""How fast the driver says no: a second `sweep run` on a busy output dir, and bad configs.

1. busy: this process owns an output dir (the lock a running driver holds); `sweep run` on it, as a
   fresh subprocess, `--runs` times: wall seconds from start to its exit 2.
2. fuzz: every case of tests/fuzz_cases.py validated in-process (`sweep run`, stopped where a
   run would start): the slowest case and the total; then `--cli` cases through the CLI subprocess.

    .venv/bin/python bench/reliability.py --runs 5 --cli 10
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import sweep.cli  # noqa: E402
import sweep.run.cli  # noqa: E402
from sweep.store.ownership import DirLock  # noqa: E402
from tests.fuzz_cases import all_cases  # noqa: E402
from tests.test_config_fuzz import accept, materialise  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def busy(runs: int) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="busy-") as tmp:
        out = Path(tmp) / "out"
        lock = DirLock.for_output(out, "someone")
        lock.acquire()
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "sweep", "run", str(ROOT / "examples/simulated.yaml"), "--out", str(out)],
                capture_output=True, text=True, env=ENV, cwd=ROOT,
            )  # fmt: skip
            times.append(time.perf_counter() - t0)
            assert proc.returncode == 2 and "in use by another driver" in proc.stderr, proc.stderr
        lock.release()
    return times


def fuzz(cli: int) -> tuple[float, float, str, list[float]]:
    sweep.run.cli.preflight = accept  # type: ignore[assignment]
    cases = all_cases()
    slowest, total, name = 0.0, 0.0, ""
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        for i, case in enumerate(cases):
            d = Path(tmp) / f"c{i}"
            d.mkdir()
            argv = materialise(case, d)
            argv = ["run", *argv[1:]] if argv[0] == "validate" else argv
            os.chdir(d)
            t0 = time.perf_counter()
            with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
                sweep.cli.main(argv)
            took = time.perf_counter() - t0
            total += took
            if took > slowest:
                slowest, name = took, case.name
        os.chdir(ROOT)
        subprocess_times = []
        for case in cases[:: max(1, len(cases) // cli)][:cli]:
            d = Path(tmp) / f"cli-{len(subprocess_times)}"
            d.mkdir()
            argv = materialise(case, d)
            argv = ["run", *argv[1:], "--address", "127.0.0.1:9"] if argv[0] == "validate" else argv
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "sweep", *argv], cwd=d, capture_output=True, env=ENV)
            subprocess_times.append(time.perf_counter() - t0)
            print(f"  cli {case.name}: {subprocess_times[-1]:.2f} s")
    return slowest, total, f"{name} (of {len(cases)})", subprocess_times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--cli", type=int, default=10)
    args = p.parse_args()
    times = busy(args.runs)
    print(f"busy output dir, `sweep run` refused: median {statistics.median(times):.2f} s, max {max(times):.2f} s "
          f"over {len(times)} runs")  # fmt: skip
    slowest, total, name, cli = fuzz(args.cli)
    print(f"fuzz in-process: {total:.1f} s in all, slowest case {slowest * 1000:.0f} ms: {name}")
    print(
        f"fuzz through the CLI: median {statistics.median(cli):.2f} s, max {max(cli):.2f} s over {len(cli)} cases"
    )


if __name__ == "__main__":
    main()
