"""`sweep run --drivers N`: the owner of an output dir starts N-1 local workers, each a
`sweep run --join` process on the sweep's resolved config, so one machine's cores share the driver's
work (prompts, parsing, rows, the cache) the way `--join` shares it between machines.

A driver is one Python process: its event loop, episode bookkeeping and in-process engines hold one
core however many episodes are in flight. Workers claim episodes as their turn comes (`Claims`), so
nothing runs twice and the results are the ones one driver stores. Each worker builds its own
engines, so the option is for engines that live in the driver process (the simulated engine, or
`ray.in_process: true`); engines in Ray actors are shared between machines with `--join` instead.
Workers log to `OUTPUT_DIR/drivers/worker-K.log`; the owner stops them when it stops."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import polars as pl
from rich.console import Console

from sweep.config.sweep import ConfigError, SweepConfig
from sweep.engines.pool import in_process
from sweep.run.progress import per_second
from sweep.run.scheduler import RunStats
from sweep.store.results import ResultStore

MAX_DRIVERS = 64
STOP_GRACE_S = 15.0  # a stopped worker's time to release its claims before it is killed
ROOT = Path(__file__).resolve().parents[1]  # the project: workers import `sweep` from here too


def check_drivers(cfg: SweepConfig, drivers: int, address: str | None = None) -> None:
    """ConfigError naming `--drivers` when `drivers` cannot run this config."""
    if isinstance(drivers, bool) or not isinstance(drivers, int) or not 1 <= drivers <= MAX_DRIVERS:
        raise ConfigError(f"--drivers: must be an int in [1, {MAX_DRIVERS}], got {drivers!r}")
    if drivers == 1:
        return
    remote = sorted({m for m in cfg.team() if not in_process(cfg, m, address)})
    if remote:
        raise ConfigError(
            f"--drivers {drivers}: model(s) {', '.join(remote)} run in Ray actors, and each driver would "
            "start its own; use --drivers with in-process engines (ray.in_process: true), or start "
            "`sweep run --join` on other machines"
        )
    if any(e.name == "consistency" and e.args.get("match") for e in cfg.methods):
        raise ConfigError(
            f"--drivers {drivers}: consistency entries matched to another method's cost run in two passes "
            "with one driver; drop --drivers, or give them a fixed m"
        )


class LocalWorkers:
    """N-1 `sweep run --join` processes on `config` (the owner's resolved config file)."""

    def __init__(self, config: Path, out_dir: Path, count: int) -> None:
        self.config, self.count = config, count
        self.log_dir = out_dir / "drivers"
        self.procs: list[subprocess.Popen[bytes]] = []
        self._logs: list[IO[bytes]] = []

    def start(self, console: Console) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
        }
        cmd = [sys.executable, "-m", "sweep", "run", str(self.config), "--join", "--no-tracking"]
        for k in range(1, self.count + 1):
            log = open(self.log_dir / f"worker-{k}.log", "wb")  # noqa: SIM115 - open while the worker runs
            self._logs.append(log)
            self.procs.append(
                subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
            )
        console.print(
            f"drivers: {self.count + 1} (this one and {self.count} worker(s), logs in {self.log_dir})"
        )

    def join(
        self, store: ResultStore, stats: RunStats, before: set[str], t0: float, console: Console
    ) -> RunStats:
        """Wait for the workers to exit (each does once no episode is left unclaimed); then the
        run's totals count every driver's episodes stored since (`before`: the ids stored then), as
        one driver's would, and its failures name the workers that failed."""
        failures = self.finish()
        cols = ["calls", "cache_hits", "correct", "prompt_tokens", "completion_tokens"]
        new = store.episodes(cols).filter(~pl.col("episode_id").is_in(list(before)))
        calls, hits, correct, prompt, completion = (int(new[c].sum()) for c in cols)
        stats.done, stats.calls, stats.cache_hits, stats.correct = new.height, calls, hits, correct
        stats.tokens, stats.wall_s = prompt + completion, time.monotonic() - t0
        stats.failures += failures
        console.print(
            f"{self.count + 1} drivers: {stats.done} episodes, {stats.calls:,} calls in {stats.wall_s:.1f} s "
            f"({per_second(stats.calls, stats.wall_s)} calls/s)"
        )
        return stats

    def finish(self, timeout_s: float | None = None) -> list[str]:
        """Wait for the workers to exit (they do once no episode is left unclaimed; `timeout_s`: at
        most that long, then they are stopped); one failure line per worker that exited non-zero or
        had to be stopped."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        failures = []
        for k, p in enumerate(self.procs, 1):
            try:
                rc = p.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._stop([p])
                rc = None
            if rc != 0:
                why = "did not exit in time and was stopped" if rc is None else f"exited with status {rc}"
                failures.append(
                    f"driver worker {k} {why}: {self._tail(k)} (log: {self.log_dir}/worker-{k}.log)"
                )
        self._close_logs()
        return failures

    def stop(self) -> None:
        """Stop every worker still running (SIGTERM, then SIGKILL after `STOP_GRACE_S`)."""
        self._stop(self.procs)
        self._close_logs()

    def _stop(self, procs: list[subprocess.Popen[bytes]]) -> None:
        live = [p for p in procs if p.poll() is None]
        for p in live:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for p in live:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def _tail(self, k: int) -> str:
        """The worker's last non-empty log line (its error), cut to 300 characters."""
        try:
            lines = (self.log_dir / f"worker-{k}.log").read_text(errors="replace").strip().splitlines()
        except OSError:
            return "no log"
        return lines[-1][:300] if lines else "empty log"

    def _close_logs(self) -> None:
        for log in self._logs:
            log.close()
        self._logs = []
