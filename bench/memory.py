"""Does the driver's memory stay flat as a sweep grows? Runs `sweep run` (MLflow on, engines
in-process) on simulated sweeps of 1k, 10k and 100k episodes, each in a fresh process, and prints
each one's maximum resident set size; then the 10k-episode PEAR example.

    .venv/bin/python bench/memory.py                  # ~15 min on 2 quiet cores
    .venv/bin/python bench/memory.py --sizes 1000 10000 --no-pear
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# examples/simulated.yaml is 5 methods x 40 items x 2 seeds; its items and seeds scale it.
SIZES = {1_000: (100, 2), 10_000: (1000, 2), 100_000: (1000, 20)}


def run(config: str, overrides: list[str], out: Path) -> tuple[float, int, int]:
    """(wall s, max RSS in MB, exit code) of one `sweep run` in its own process."""
    cmd = [sys.executable, "-m", "sweep", "run", config, "--out", str(out)]
    for o in overrides:
        cmd += ["--set", o]
    t0 = time.perf_counter()
    with open(out.parent / f"{out.name}.log", "w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - t0, usage.ru_maxrss // 1024, os.waitstatus_to_exitcode(status)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=sorted(SIZES), choices=sorted(SIZES))
    p.add_argument("--no-pear", action="store_true", help="skip examples/pear_simulated.yaml (10k episodes)")
    a = p.parse_args(argv)
    runs: list[tuple[str, str, list[str]]] = []
    for n in a.sizes:
        items, seeds = SIZES[n]
        seed_list = "[" + ",".join(map(str, range(seeds))) + "]"
        runs.append(
            (
                f"simulated {n:,}",
                "examples/simulated.yaml",
                [f"datasets.0.limit={items}", f"seeds={seed_list}"],
            )
        )
    if not a.no_pear:
        runs.append(("pear 10,000", "examples/pear_simulated.yaml", []))
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)
    print(f"{'sweep':16s} {'wall s':>8s} {'max RSS MB':>11s}", flush=True)
    rss = {}
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        for name, config, overrides in runs:
            wall, mb, code = run(config, overrides, Path(tmp) / name.replace(" ", "-").replace(",", ""))
            if code != 0:
                print(f"{name}: exit {code}; see the log", file=sys.stderr)
                return 1
            rss[name] = mb
            print(f"{name:16s} {wall:8.1f} {mb:11d}", flush=True)
    if "simulated 10,000" in rss and "simulated 100,000" in rss:
        change = rss["simulated 100,000"] / rss["simulated 10,000"] - 1
        print(f"10k -> 100k episodes: max RSS {change:+.1%}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
