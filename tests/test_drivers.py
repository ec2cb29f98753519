"""`sweep run --drivers N`: local `--join` workers share one sweep and store exactly what one driver
stores; configs they cannot serve are refused before anything is written; a stopped owner stops its
workers; a worker that fails is named, with its log."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from sweep.cli import main
from sweep.config.sweep import load_config
from sweep.run.drivers import LocalWorkers
from tests.conftest import sweep_cmd
from tests.test_in_process import config_file, tables


def write_config(tmp_path: Path, name: str, latency_s: float, limit: int, **extra: Any) -> Path:
    """`test_in_process`'s small sweep with cot and clique only, and `latency_s` per engine batch."""
    models = {
        "strong": {"engine": "simulated", "args": {"skill": 0.8, "latency_s": latency_s}},
        "weak": {
            "engine": "simulated",
            "args": {"skill": 0.4, "malformed_rate": 0.1, "latency_s": latency_s},
        },
    }
    methods = ["cot", {"name": "fixed", "args": {"topology": "clique"}}]
    settings = {"models": models, "methods": methods, "concurrency": 2}
    return config_file(
        tmp_path, name, **{**settings, "datasets": [{"name": "arith", "limit": limit}], **extra}
    )


def processes_mentioning(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


@pytest.mark.slow
def test_two_drivers_store_what_one_driver_stores(tmp_path: Path) -> None:
    from sweep.run.runner import run_sweep

    # 0.1 s per engine batch: the owner's episodes last long enough for the worker to start and join.
    path = write_config(tmp_path, "two", latency_s=0.1, limit=10)
    proc = subprocess.run(
        sweep_cmd("run", str(path), "--drivers", "2"), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.search(r"^2 drivers: 40 episodes, [\d,]+ calls in", proc.stderr, re.M), proc.stderr[-2000:]
    assert "40 run now" in proc.stdout
    log = (tmp_path / "two" / "drivers" / "worker-1.log").read_text()
    ran = re.search(r"^(\d+) episodes, [\d,]+ calls in", log, re.M)
    assert ran is not None and int(ran.group(1)) >= 1, log[-2000:]  # the worker did run episodes
    assert "worker: done with the unclaimed episodes" in log and "accuracy" not in log  # the owner summarises

    one = load_config(path, [], str(tmp_path / "one"))
    assert run_sweep(one).stats is not None
    # Which driver first asks a call two methods share (round 0) decides where the cache answers it.
    cache = ("cache_hit", "cache_hits")
    for a, b in zip(tables(tmp_path / "one"), tables(tmp_path / "two"), strict=True):
        assert a.height and a.drop(cache, strict=False).equals(b.drop(cache, strict=False))
    assert not processes_mentioning(str(tmp_path / "two"))  # the worker is gone


def test_drivers_the_config_cannot_use_are_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ray_engines = write_config(tmp_path, "ray", 0.0, 2, ray={"in_process": False})
    assert main(["run", str(ray_engines), "--drivers", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --drivers 2: model(s) strong, weak run in Ray actors") and "\n" not in err
    assert "--join" in err and not (tmp_path / "ray").exists()

    plain = write_config(tmp_path, "many", 0.0, 2)
    assert main(["run", str(plain), "--drivers", "65"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --drivers: must be an int in [1, 64], got 65" and not (tmp_path / "many").exists()

    matched = write_config(
        tmp_path, "match", 0.0, 2, methods=["cot", {"name": "consistency", "args": {"match": "cot"}}]
    )
    assert main(["run", str(matched), "--drivers", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "consistency entries matched" in err and not (tmp_path / "match").exists()


@pytest.mark.slow
def test_a_stopped_owner_stops_its_workers(tmp_path: Path) -> None:
    path = write_config(
        tmp_path, "stop", latency_s=0.5, limit=40
    )  # minutes of work: it is stopped long before
    owner = subprocess.Popen(
        sweep_cmd("run", str(path), "--drivers", "2"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    marker, log = (
        str(tmp_path / "stop" / "config.resolved.yaml"),
        tmp_path / "stop" / "drivers" / "worker-1.log",
    )
    try:
        deadline = time.monotonic() + 120
        while "progress:" not in (log.read_text() if log.exists() else ""):  # the worker runs episodes
            assert time.monotonic() < deadline and owner.poll() is None, "the worker never started"
            time.sleep(0.2)
        assert processes_mentioning(marker)
        owner.send_signal(signal.SIGTERM)
        _, err = owner.communicate(timeout=60)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
    assert owner.returncode == 1 and b"interrupted" in err
    assert not processes_mentioning(marker)
    assert "interrupted" in log.read_text()


def test_a_worker_that_fails_is_named_with_its_error(tmp_path: Path) -> None:
    workers = LocalWorkers(tmp_path / "missing.yaml", tmp_path, 1)
    workers.start(Console(file=io.StringIO()))
    failures = workers.finish(timeout_s=120)
    assert len(failures) == 1
    assert failures[0].startswith("driver worker 1 exited with status 2: error: ")
    assert "missing.yaml" in failures[0] and f"(log: {tmp_path}/drivers/worker-1.log)" in failures[0]
