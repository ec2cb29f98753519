"""The pieces of `sweep cluster`: free ports for every Ray process, a private token, starting a Ray
head with them (`ray start --head`, retried) and stopping exactly that head's processes by PID.

Every port is picked free at start, none is Ray's default: another Ray on the machine (a user's, a
test session's) holds those, and a Ray process that finds its port taken does not always fail — the
dashboard agent stays up without its HTTP server, and every `ray job submit` then gets "No available
agent to submit job". Two metrics servers take theirs from the environment, not from flags. The
head's processes are found by a variable naming its private temp dir in their environment (every
process it starts inherits it: workers, a job's driver; the Ray client server does not name the temp
dir on its command line), and by that dir on their command line."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sweep.engines.ray_runtime import TEMP_ROOT, pids_mentioning

TEMP_PREFIX = "sweep-cluster-"  # a head's temp dir: TEMP_ROOT/sweep-cluster-XXXX (short: socket paths)
# `ray start` flags for every listening port of a head besides the workers'; `port` is the GCS.
PORT_FLAGS = (
    "port",
    "dashboard-port",
    "node-manager-port",
    "object-manager-port",
    "dashboard-agent-listen-port",
    "dashboard-agent-grpc-port",
    "runtime-env-agent-port",
    "metrics-export-port",
    "ray-client-server-port",
)
ENV_PORTS = ("AUTOSCALER_METRIC_PORT", "DASHBOARD_METRIC_PORT")  # defaults 44217 and 44227
MARK = "SWEEP_CLUSTER_DIR"  # in the environment of every process of a head: its temp dir
# Workers bind ports of their own: a window of free ports below the kernel's ephemeral range (where
# outgoing connections would take them) and above Ray's default 10002-19999 (another Ray's workers).
WORKER_WINDOW = 1000
WORKER_SEARCH = (20000, 32767)
READY_S = 120.0  # the dashboard and its job agent answer within this after `ray start` returns


class StartFailed(RuntimeError):
    """The head did not start or did not stop; the message names the fix (exit 1)."""


def ray_bin() -> Path:
    """The `ray` script of this environment (beside its python)."""
    return Path(sys.executable).parent / "ray"


def new_token(path: Path) -> Path:
    """A private token at `path` (mode 0600), kept if already there: a shell that still has the
    exports of an earlier head then keeps working with the next one."""
    if not path.is_file() or not path.read_text().strip():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32))  # 256 bits, as `ray get-auth-token --generate` makes
    return path


def free_ports(n: int) -> list[int]:
    """`n` distinct free loopback ports, all held until every one is known (the kernel may hand a
    just-released port out again)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def worker_window() -> tuple[int, int]:
    """(min, max) of `WORKER_WINDOW` consecutive ports free now, searched from a random start."""
    low, high = WORKER_SEARCH
    starts = list(range(low, high - WORKER_WINDOW + 1, WORKER_WINDOW // 4))
    first = secrets.randbelow(len(starts))
    for start in starts[first:] + starts[:first]:
        if all(_free(p) for p in range(start, start + WORKER_WINDOW)):
            return start, start + WORKER_WINDOW - 1
    raise StartFailed(
        f"no {WORKER_WINDOW} consecutive free ports in {low}-{high} for Ray's workers; stop what holds them"
    )


def head_env(token: Path, temp_dir: str, ports: dict[str, int]) -> dict[str, str]:
    """The environment of the head and of every job it runs: token auth from `token`, loopback only,
    no usage stats, workers at normal priority, this environment's python first on PATH, the
    metrics ports of `ports` and the mark that finds its processes."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_TOKEN", "RAY_ADDRESS")}
    path = env.get("PATH", "")
    return (
        env
        | {k: str(ports[k]) for k in ENV_PORTS}
        | {
            MARK: temp_dir,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN_PATH": str(token),  # RAY_AUTH_TOKEN would win over it: dropped above
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # every socket on 127.0.0.1
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_worker_niceness": "0",  # engines at the driver's priority, as ray_cluster.yaml does
            "PATH": os.pathsep.join([str(ray_bin().parent), *(p for p in path.split(os.pathsep) if p)]),
        }
    )


def start_head(token: Path, num_cpus: int | None, attempts: int = 3) -> dict[str, Any]:
    """Start a head on fresh ports and a fresh temp dir, up to `attempts` times (on a loaded machine
    Ray can miss its own start-up window); returns what `down` and `status` need. A failed attempt,
    or one cut short (Ctrl-C), is stopped before anything else: no head is left without a record."""
    TEMP_ROOT.mkdir(parents=True, exist_ok=True)
    errors = []
    for _ in range(attempts):
        temp_dir = tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=TEMP_ROOT)
        try:
            error, state = _attempt(token, num_cpus, temp_dir)
        except BaseException:
            stop(temp_dir)
            raise
        if not error:
            return state
        errors.append(error)
        stop(temp_dir)
    raise StartFailed(
        f"ray start failed {attempts} times (last: {errors[-1]}); the machine may be overloaded: "
        "retry when it is quieter"
    )


def _attempt(token: Path, num_cpus: int | None, temp_dir: str) -> tuple[str, dict[str, Any]]:
    """('', the head's state) once it answers, else (what went wrong, {})."""
    names = PORT_FLAGS + ENV_PORTS
    ports = dict(zip(names, free_ports(len(names)), strict=True))
    workers = worker_window()
    cmd = [str(ray_bin()), "start", "--head", "--dashboard-host=127.0.0.1", "--disable-usage-stats"]
    cmd += [f"--{flag}={ports[flag]}" for flag in PORT_FLAGS]
    cmd += [f"--min-worker-port={workers[0]}", f"--max-worker-port={workers[1]}", f"--temp-dir={temp_dir}"]
    cmd += [f"--num-cpus={num_cpus}"] if num_cpus else []
    env = head_env(token, temp_dir, ports)
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        return "ray start did not return in 180 s", {}
    if proc.returncode != 0:
        return _last_line(proc.stderr or proc.stdout), {}
    error = _wait_ready(ports, token)
    return error, {} if error else {
        "temp_dir": temp_dir,
        "ports": ports,
        "worker_ports": list(workers),
        "token": str(token),
    }


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def _wait_ready(ports: dict[str, int], token: Path) -> str:
    """'' once the dashboard (with the token) and its job agent answer, else what did not."""
    bearer = {"Authorization": f"Bearer {token.read_text().strip()}"}
    checks = [
        (f"http://127.0.0.1:{ports['dashboard-port']}/api/version", bearer),
        (f"http://127.0.0.1:{ports['dashboard-agent-listen-port']}/api/healthz", {}),
    ]
    deadline = time.monotonic() + READY_S
    while checks and time.monotonic() < deadline:
        url, headers = checks[0]
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as r:
                if r.status == 200:
                    checks.pop(0)
                    continue
        except OSError:
            pass
        time.sleep(0.5)
    return f"{checks[0][0]} did not answer in {READY_S:.0f} s" if checks else ""


def processes(temp_dir: str) -> list[int]:
    """The head's processes (marked, or naming `temp_dir`) and every process below them."""
    if not Path(temp_dir).name.startswith(TEMP_PREFIX):
        return []  # not a dir this module made: never match someone else's processes
    roots = set(pids_mentioning(temp_dir)) | set(_marked(temp_dir))
    children: dict[int, list[int]] = {}
    for pid, ppid in _parents():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(roots), list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and child != os.getpid():
                found.add(child)
                todo.append(child)
    return sorted(found)


def _marked(temp_dir: str) -> Iterator[int]:
    """Processes of this user whose environment holds MARK=temp_dir (others' cannot be read)."""
    mark = f"{MARK}={temp_dir}".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError):
                if mark in (entry / "environ").read_bytes().split(b"\0"):
                    yield int(entry.name)


def _parents() -> Iterator[tuple[int, int]]:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                # The name in (...) may hold spaces: the parent's pid is the 2nd field after it.
                yield int(entry.name), int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])


def stop(temp_dir: str) -> int:
    """Stop the head's processes and remove its temp dir; returns how many were running. The GCS
    goes last: the others exit on SIGTERM within seconds once it is there to answer, while the GCS
    itself lingers on SIGTERM (>15 s measured) and holds nothing a local head keeps. StartFailed
    when some outlive SIGKILL (another user's, say)."""
    first = processes(temp_dir)
    for sig, gcs, wait in (
        (signal.SIGTERM, False, 10.0),
        (signal.SIGTERM, True, 2.0),
        (signal.SIGKILL, True, 5.0),
    ):
        pids = [p for p in processes(temp_dir) if gcs or _comm(p) != "gcs_server"]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline and any(_running(p) for p in pids):
            time.sleep(0.2)
    left = [p for p in first if _running(p)]
    if left:
        raise StartFailed(f"processes {left} of the head in {temp_dir} would not stop; stop them by hand")
    if Path(temp_dir).name.startswith(TEMP_PREFIX):
        shutil.rmtree(temp_dir, ignore_errors=True)
    return len(first)


def _running(pid: int) -> bool:
    """True while `pid` exists and is not a zombie (a killed child not yet reaped is gone for us)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def alive(temp_dir: str) -> bool:
    """True when the head's GCS and raylet are both running."""
    names = {_comm(p) for p in processes(temp_dir) if _running(p)}
    return "gcs_server" in names and "raylet" in names
