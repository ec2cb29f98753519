"""CPU of each thread of a whole `sweep run` (user and system seconds, from `/proc/self/task/*/stat`):
the event loop's thread against the call cache's and the Parquet parts' writer threads, whose GIL
hand-offs show up as system time on both sides. Linux only.

One untimed run first (first-use imports), then the measured one: `examples/simulated.yaml`, in-process,
cache on, tracking off, latency 0. `--root` imports `sweep` from another checkout (a `git worktree` of
an older commit), so two commits can be compared with the same script.

    .venv/bin/python bench/threads.py --items 400
    git worktree add --detach /tmp/wt-old 3301e11 && .venv/bin/python bench/threads.py --root /tmp/wt-old
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def task_times() -> dict[int, tuple[float, float]]:
    """{thread id: (user s, system s)} of this process's live threads."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        out[int(tid)] = (int(fields[11]) / TICK, int(fields[12]) / TICK)  # utime, stime: fields 14, 15
    return out


class Poll:
    """Polls every thread's CPU until stopped; a thread's last reading before it ends is its total."""

    def __init__(self, every_s: float = 0.25) -> None:
        self.every_s, self.last, self.names = every_s, {}, {}  # type: ignore[var-annotated]
        self.first = task_times()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-poll", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.last.update(task_times())
            self.names.update({t.native_id: t.name for t in threading.enumerate()})

    def __enter__(self) -> Poll:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.last.update(task_times())

    def rows(self) -> list[tuple[str, float, float]]:
        """(thread name, user s, system s) of each thread seen, the time it had before subtracted."""
        out = []
        for tid, (user, system) in self.last.items():
            u0, s0 = self.first.get(tid, (0.0, 0.0))
            out.append((self.names.get(tid, f"thread {tid}"), user - u0, system - s0))
        return sorted(out, key=lambda r: -(r[1] + r[2]))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=int, default=400, help="items per dataset")
    p.add_argument("--root", default=str(Path(__file__).resolve().parents[1]), help="the checkout to import")
    a = p.parse_args(argv)
    os.chdir(a.root)
    sys.path.insert(0, a.root)
    from rich.console import Console

    from sweep.config.sweep import load_config
    from sweep.run.plan import build_plan
    from sweep.run.runner import run_sweep

    cfg = load_config("examples/simulated.yaml", [f"datasets.0.limit={a.items}", "tracking.enabled=false"])
    out = Path(tempfile.mkdtemp(prefix="bench-threads-"))
    quiet = Console(file=open(os.devnull, "w"))  # noqa: SIM115 - closed at exit
    try:
        for run in ("warm", "measured"):
            run_cfg = cfg.model_copy(update={"output_dir": str(out / run)})
            plan = build_plan(run_cfg)
            with Poll() as poll:
                wall = time.perf_counter()
                outcome = run_sweep(run_cfg, plan, console=quiet)
                wall = time.perf_counter() - wall
    finally:
        shutil.rmtree(out, ignore_errors=True)
    assert outcome.stats is not None
    print(
        f"{a.root}: {outcome.stats.calls:,} calls in {wall:.2f} s ({outcome.stats.calls / wall:,.0f} calls/s)"
    )
    print(f"{'thread':28s} {'user s':>7s} {'system s':>9s} {'µs/call':>8s}")
    for name, user, system in poll.rows():
        if user + system >= 0.01:
            print(f"{name:28s} {user:7.2f} {system:9.2f} {1e6 * (user + system) / outcome.stats.calls:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
