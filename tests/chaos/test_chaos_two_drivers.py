"""Two drivers on one output dir: the second is refused at once in one line (through the real CLI
too), or, with --join, helps as a worker; together they store every episode exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.chaos.conftest import planned, sweep_config
from tests.chaos.harness import Drivers, assert_exactly_once, run_now
from tests.conftest import ROOT, sweep_cmd

pytestmark = pytest.mark.chaos


def wait_for_owner(out: Path, pid: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if json.loads((out / ".sweep.lock").read_text()).get("pid") == pid:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise TimeoutError("the first driver never took the output dir")


def wait_for_claim(out: Path, pid: int, timeout: float = 300) -> None:
    """Until a driver with `pid` holds a claim on some episode."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for claim in (out / "claims").glob("[!.]*"):
            try:
                if json.loads(claim.read_text()).get("pid") == pid:
                    return
            except (OSError, ValueError):
                continue
        time.sleep(0.05)
    raise TimeoutError(f"driver {pid} claimed no episode in {timeout} s")


def test_a_second_driver_is_refused_or_joins_as_a_worker(tmp_path: Path, drivers: Drivers) -> None:
    path = sweep_config(tmp_path, limit=30, latency=0.05)
    out = tmp_path / "out"
    owner_log, refused_log, worker_log = (tmp_path / f"{n}.log" for n in ("owner", "refused", "worker"))
    owner = drivers.start(["run", str(path)], owner_log)
    wait_for_owner(out, owner.pid)
    # The owner is paused (SIGSTOP: alive, holding the dir) until the worker has claimed episodes of
    # its own: on a quick machine it otherwise finished its 120 episodes before the CLI check started.
    # Paused only once it runs episodes: paused in its start-up, it could hold the call cache's sqlite
    # lock (creating the database) and the worker would stop at "database is locked" (a loaded run did).
    wait_for_claim(out, owner.pid)
    os.kill(owner.pid, signal.SIGSTOP)
    try:
        assert drivers.run(["run", str(path)], refused_log) == 2
        line = refused_log.read_text().strip()
        assert line.startswith(f"error: output_dir {out}: in use by another driver (pid {owner.pid} ")
        assert "--join" in line and len(line.splitlines()) == 1
        cli = subprocess.run(
            sweep_cmd("run", str(path)), cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        assert cli.returncode == 2 and cli.stderr.strip().splitlines() == [line], cli.stderr

        worker = drivers.start(["run", str(path), "--join"], worker_log)
        wait_for_claim(out, worker.pid)
    finally:
        os.kill(owner.pid, signal.SIGCONT)
    worker.join(300)
    owner.join(300)
    assert (owner.exitcode, worker.exitcode) == (0, 0), (
        owner_log.read_text()[-2000:] + worker_log.read_text()[-2000:]
    )
    assert "worker: done with the unclaimed episodes" in worker_log.read_text()
    want = planned(path)
    (by_owner,), (by_worker,) = run_now(owner_log), run_now(worker_log)
    assert by_owner + by_worker == len(want) and by_worker > 0  # shared, and no episode ran twice
    assert_exactly_once(out, want)


def test_a_second_study_driver_is_refused_unless_it_joins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sweep.cli import main
    from sweep.store.ownership import DirLock

    out = tmp_path / "study-out"
    args = [
        "study",
        str(ROOT / "examples" / "study_random_simulated.yaml"),
        "--out",
        str(out),
        "--no-tracking",
    ]
    held = DirLock.for_output(out, "another study")
    held.acquire()
    try:
        assert main(args) == 2
        assert capsys.readouterr().err.startswith(f"error: output_dir {out}: in use by another driver")
        assert main([*args, "--join"]) == 2  # joining needs the same study
        assert "runs another config" in capsys.readouterr().err
    finally:
        held.release()
    assert sorted(p.name for p in out.iterdir()) == [".sweep.lock"]  # nothing else was written
