"""Starting or attaching to Ray. A local Ray binds to 127.0.0.1 only.

Start-up is retried: on a loaded machine Ray's node can miss its own fixed 30 s start-up window
("The current node timed out during startup"). A failed local start is cleaned up (its processes
stopped by PID, found by the attempt's private temp dir) before the next attempt; when every attempt
fails, or `timeout_s` has passed, `RayStartError` says what happened and what to change."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Ray binds the machine's routable address unless told otherwise; these must be set before Ray starts
# its processes (they inherit the environment). Users can still override them.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

TEMP_ROOT = Path("/tmp/ray")  # short: Ray's socket paths under the temp dir have a length limit


class RayStartError(RuntimeError):
    """Ray could not be started or reached; the message names the fix."""


# Ray starts its workers at nice 15, so an engine actor got ~3 % of a core beside any ordinary
# process: under load the main job's llama.cpp actor took ~20 min for 6 short replies. The engines are
# the work here; they run at the driver's priority. (`ray start` takes it as RAY_worker_niceness=0.)
SYSTEM_CONFIG = {"worker_niceness": 0}


def init_ray(
    address: str | None = None,
    num_cpus: int | None = None,
    timeout_s: float = 300.0,
    attempts: int = 3,
    sleep: Callable[[float], None] = time.sleep,
    log_file: Path | None = None,
) -> dict[str, Any]:
    """Attach to `address` (or RAY_ADDRESS, as `ray job submit` sets it), else start a private local
    Ray; up to `attempts` tries within `timeout_s`. Ray's own log lines go to `log_file` when given
    (`log_to_file`). Returns a short description of what it did (`log`: where its lines are)."""
    import ray

    log = log_to_file(log_file) if log_file is not None else "the terminal"
    if ray.is_initialized():
        return {"mode": "existing", "log": log}
    address = address or os.environ.get("RAY_ADDRESS")
    started, errors = time.monotonic(), []
    for attempt in range(1, max(1, attempts) + 1):
        temp_dir = None if address else _new_temp_dir()
        try:
            if address:
                ray.init(address=address, log_to_driver=False)
                return {"mode": "cluster", "address": address, "attempts": attempt, "log": log}
            _quiet_token_notice()
            # address="local" never attaches to a stray cluster someone else started on this machine.
            ray.init(
                address="local",
                num_cpus=num_cpus,
                include_dashboard=False,
                log_to_driver=False,
                _temp_dir=temp_dir,
                _system_config=SYSTEM_CONFIG,
            )
            # The workers' own output (log_to_driver=False keeps it off the terminal) is in the session dir.
            log += f" (workers': {temp_dir}/session_latest/logs)"
            return {"mode": "local", "attempts": attempt, "temp_dir": temp_dir, "log": log}
        except Exception as e:  # noqa: BLE001 - Ray raises many kinds; each is retried, then reported
            errors.append(f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}")
            _clean_up(ray, temp_dir)
        elapsed = time.monotonic() - started
        if attempt < attempts and elapsed < timeout_s:
            sleep(min(5.0 * attempt, max(0.0, timeout_s - elapsed)))
        else:
            break
    where = f"Ray at {address}" if address else "a local Ray"
    fix = (
        "check the address and that the cluster is up"
        if address
        else "the machine may be overloaded: retry when it is quieter, raise ray.start_attempts or "
        "ray.start_timeout_s, or run the engines in-process (ray.in_process: true)"
    )
    raise RayStartError(
        f"could not start {where} after {len(errors)} attempt(s) in {time.monotonic() - started:.0f} s "
        f"(last error: {errors[-1]}); {fix}"
    )


def _new_temp_dir() -> str:
    TEMP_ROOT.mkdir(parents=True, exist_ok=True)
    return tempfile.mkdtemp(prefix="sweep-", dir=TEMP_ROOT)


def _clean_up(ray: Any, temp_dir: str | None) -> None:
    """Undo a failed attempt: Ray's driver state, then (local) the processes it started, by PID."""
    with contextlib.suppress(Exception):
        ray.shutdown()
    if temp_dir is None:
        return
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
        pids = pids_mentioning(temp_dir)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline and pids_mentioning(temp_dir):
            time.sleep(0.1)
    shutil.rmtree(temp_dir, ignore_errors=True)


def pids_mentioning(marker: str) -> list[int]:
    """Processes other than this one whose command line contains `marker` (a Ray temp dir: every
    process of that Ray node names it)."""
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


_OURS = "_sweep_ray_log"  # marks the file handler `log_to_file` added
LINE_FORMAT = "%(asctime)s\t%(levelname)s %(filename)s:%(lineno)s -- %(message)s"  # as Ray writes them


def log_to_file(path: Path) -> str:
    """Send the driver's "ray" logger (ray.init's INFO lines, Ray's warnings) to `path` instead of the
    terminal; its errors still reach the terminal too. Idempotent: a later call moves the file.
    Returns the path as text, or says why the lines stay on the terminal (the place is not writable)."""
    log = logging.getLogger("ray")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8")
    except OSError as e:
        return f"the terminal ({path} not writable: {e.strerror or e})"
    handler.setFormatter(logging.Formatter(LINE_FORMAT))
    setattr(handler, _OURS, True)
    for old in list(log.handlers):
        if getattr(old, _OURS, False):
            log.removeHandler(old)
            old.close()
        elif isinstance(old, logging.StreamHandler) and not isinstance(old, logging.FileHandler):
            old.setLevel(max(old.level, logging.ERROR))  # Ray's console handler: errors only
    log.addHandler(handler)
    return str(path)


def _drop_token_notice(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("Token authentication is enabled for this Ray cluster")


def _quiet_token_notice() -> None:
    """Ray 2.60 turns token auth on for every new local cluster and says so on every start. For the
    private 127.0.0.1 cluster this package starts that is noise; auth stays on, the notice goes."""
    log = logging.getLogger("ray._private.authentication.authentication_token_setup")
    if _drop_token_notice not in log.filters:
        log.addFilter(_drop_token_notice)


def shutdown_ray() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()
