"""Two commits' `sweep run` side by side, runs interleaved (A B A B ...), so that a machine whose speed
drifts — a shared VM, other work — slows both alike: the whole `run_sweep` call as `bench/overhead.py`'s
last layer makes it (examples/simulated.yaml, in-process, cache on, tracking off, latency 0), each run a
fresh process on a fresh output dir. Prints each commit's min and median wall and CPU ms per call.

    .venv/bin/python bench/ab.py 70505e2 HEAD --runs 5 --items 100
    .venv/bin/python bench/ab.py HEAD . --runs 3        # "." is the working tree, uncommitted changes included

Each commit is checked out with `git worktree add --detach` into a temp dir (removed at the end) and
run with this checkout's interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RUN = """
import json, os, shutil, sys, tempfile, time
sys.path.insert(0, os.getcwd())
import pyarrow as pa
from rich.console import Console
try:  # sweep/ in rooms; a commit from before them has the modules at its top
    from sweep.config.sweep import load_config
    from sweep.run.plan import build_plan
    from sweep.run.runner import run_sweep
except ImportError:
    from sweep.config import load_config
    from sweep.plan import build_plan
    from sweep.runner import run_sweep
pa.array([0])  # pyarrow's first array imports pandas: a start-up cost, as in bench/overhead.py
cfg = load_config("examples/simulated.yaml", [f"datasets.0.limit={sys.argv[1]}", "tracking.enabled=false"])
out = tempfile.mkdtemp(prefix="bench-ab-")
cfg = cfg.model_copy(update={"output_dir": out + "/run"})
plan, quiet = build_plan(cfg), Console(file=open(os.devnull, "w"), stderr=False)
w, c = time.perf_counter(), time.process_time()
outcome = run_sweep(cfg, plan, console=quiet)
w, c = time.perf_counter() - w, time.process_time() - c
shutil.rmtree(out)
assert outcome.stats is not None and not outcome.stats.failures
print(json.dumps({"calls": outcome.stats.calls, "wall": w, "cpu": c}))
"""


def one_run(tree: Path, items: int) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", RUN, str(items)], cwd=tree, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"error: the run in {tree} failed:\n{proc.stderr[-2000:]}")
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "revs", nargs=2, help="two commits (anything `git worktree add` takes), or '.' for the working tree"
    )
    p.add_argument("--runs", type=int, default=5, help="runs of each commit (interleaved)")
    p.add_argument(
        "--items", type=int, default=100, help="items of examples/simulated.yaml (episodes = 10 x items)"
    )
    a = p.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-ab-trees-"))
    trees: list[Path] = []
    try:
        for i, rev in enumerate(a.revs):
            if rev == ".":
                trees.append(ROOT)
                continue
            tree = tmp / f"t{i}"
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), rev], check=True
            )
            trees.append(tree)
        print(f"load average before: {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores")
        runs: list[list[dict[str, float]]] = [[], []]
        for _ in range(a.runs):
            for k, tree in enumerate(trees):
                runs[k].append(one_run(tree, a.items))
        print(
            f"{'commit':12s} {'calls':>7s} {'wall ms/call min':>17s} {'median':>7s} {'cpu ms/call min':>16s} {'median':>7s} {'calls/s best':>13s}"
        )
        for rev, rs in zip(a.revs, runs, strict=True):
            calls = rs[0]["calls"]
            wall = [1000 * r["wall"] / calls for r in rs]
            cpu = [1000 * r["cpu"] / calls for r in rs]
            print(
                f"{rev:12s} {calls:7.0f} {min(wall):17.3f} {statistics.median(wall):7.3f} "
                f"{min(cpu):16.3f} {statistics.median(cpu):7.3f} {1000 / min(wall):13.0f}"
            )
        print(f"load average after: {os.getloadavg()[0]:.2f} (1 min)")
    finally:
        for tree in trees:
            if tree != ROOT:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False
                )
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
