"""Shared fixtures. One Ray head (`ray start --head`, loopback only) serves the whole test session:
in-process sweeps attach to it, subprocess drivers attach to it, and `ray job submit` targets it."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT.parent / "shared" / "benchmarks"
BIN = Path(sys.executable).parent

# Everything Ray starts in this session stays on 127.0.0.1 and asks for no token (a throw-away cluster).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")


def pytest_configure(config: pytest.Config) -> None:
    """Under CI (the CI env var set, as `.ci/run` does) a missing shared benchmark copy fails the run:
    every test that reads it would otherwise be skipped and the run would pass on nothing."""
    if os.environ.get("CI") and not BENCHMARKS.is_dir():
        raise pytest.UsageError(
            f"CI is set but the shared benchmarks are not at {BENCHMARKS}: put the shared/ folder beside "
            "the checkout (or unset CI to skip those tests locally)"
        )


def free_ports(n: int) -> list[int]:
    """`n` distinct free loopback ports. All sockets stay bound until every port is known: the kernel
    may hand a just-released port out again, and Ray refuses two components on one port."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]


@dataclass(frozen=True)
class RayHead:
    address: str  # GCS address for drivers
    dashboard: str  # http address for `ray job submit`
    temp_dir: str


def _pids_under(marker: str) -> list[int]:
    """Processes whose command line mentions `marker` (our cluster's private temp dir)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            pids.append(int(entry.name))
    return pids


def _stop(marker: str) -> None:
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
        pids = _pids_under(marker)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.time() + wait
        while pids and time.time() < deadline and _pids_under(marker):
            time.sleep(0.2)


def _start_head() -> tuple[str, int, int, subprocess.CompletedProcess[str]]:
    """One `ray start --head` on fresh ports and a fresh temp dir: (temp dir, port, dashboard port, the process)."""
    temp_dir = tempfile.mkdtemp(prefix="rds-", dir="/tmp")  # short: Ray's socket paths have a length limit
    # Every listening port explicit: another Ray on this machine (a user's, a second test session)
    # would otherwise collide on the defaults and the head would time out at startup.
    flags = (
        "node-manager-port",
        "object-manager-port",
        "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port",
        "metrics-export-port",
        "runtime-env-agent-port",
        "ray-client-server-port",
    )
    port, dash, *others = free_ports(2 + len(flags))
    extra_ports = [f"--{flag}={p}" for flag, p in zip(flags, others, strict=True)]
    cmd = [
        str(BIN / "ray"),
        "start",
        "--head",
        f"--port={port}",
        "--dashboard-host=127.0.0.1",
        f"--dashboard-port={dash}",
        "--num-cpus=2",
        "--disable-usage-stats",
        f"--temp-dir={temp_dir}",
        *extra_ports,
    ]
    env = os.environ | {"RAY_worker_niceness": "0"}  # as ray_cluster.yaml starts its nodes
    return temp_dir, port, dash, subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)


@pytest.fixture(scope="session")
def ray_head() -> Iterator[RayHead]:
    """A private Ray head for the session, stopped by PID at the end. Started up to 3 times, as
    `sweep.engines.ray_runtime.init_ray` starts one: on a loaded machine the node can miss Ray's own fixed
    30 s start-up window (seen once in a CI run with two extra busy processes on the 2 cores)."""
    failures = []
    for _ in range(3):
        temp_dir, port, dash, proc = _start_head()
        if proc.returncode == 0:
            break
        _stop(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)
        failures.append(proc.stderr[-1000:])
    else:
        pytest.fail("ray start failed 3 times; the last: " + failures[-1])
    try:
        yield RayHead(f"127.0.0.1:{port}", f"http://127.0.0.1:{dash}", temp_dir)
    finally:
        try:
            import ray

            if ray.is_initialized():
                ray.shutdown()
        finally:
            _stop(temp_dir)
            shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def ray_driver(ray_head: RayHead) -> RayHead:
    """This test process attached to the session's Ray head as a driver."""
    from sweep.engines.ray_runtime import init_ray

    init_ray(ray_head.address)
    return ray_head


def sweep_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "sweep", *args]


@pytest.fixture
def benchmarks() -> Path:
    if not BENCHMARKS.is_dir():
        pytest.skip(f"benchmark files not found at {BENCHMARKS}")
    return BENCHMARKS
