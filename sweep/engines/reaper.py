"""Everything a driver started stops when the driver stops, even on SIGKILL.

A local Ray's GCS and raylet share the driver's fate, but their children (the dashboard agent, the
runtime-env agent, workers) outlive a killed driver by a minute or more. `watch_descendants()` starts
one small reaper process per driver (its own session, so a terminal's Ctrl-C does not reach it) and
tells it, through a pipe, every process descended from the driver at that moment (pid and start time,
so a reused pid is never touched). When the pipe closes — the driver exited, however it exited — the
reaper sends SIGTERM to those still alive, and SIGKILL to those alive `grace_s` later.

Run as `python -m sweep.engines.reaper DRIVER_PID [GRACE_S]`; only the driver talks to it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

_reaper: subprocess.Popen[bytes] | None = None
_told: set[tuple[int, int]] = set()


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start ticks) of `pid`, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[19])


def descendants(root: int) -> list[tuple[int, int]]:
    """(pid, start ticks) of every live process below `root` (Linux /proc; empty elsewhere)."""
    children: dict[int, list[tuple[int, int]]] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    for entry in proc.iterdir():
        if entry.name.isdigit() and (st := _stat(int(entry.name))) is not None:
            children.setdefault(st[0], []).append((int(entry.name), st[1]))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child[0])
    return found


def watch_descendants(grace_s: float = 3.0) -> int:
    """Hand every current descendant of this process to the reaper (started on first use); returns
    how many were new. Best effort: a driver without /proc or without a reaper still runs."""
    global _reaper
    mine = [
        d for d in descendants(os.getpid()) if d not in _told and (_reaper is None or d[0] != _reaper.pid)
    ]
    if not mine:
        return 0
    try:
        if _reaper is None or _reaper.poll() is not None:
            _reaper = subprocess.Popen(
                [sys.executable, "-m", "sweep.engines.reaper", str(os.getpid()), str(grace_s)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
            mine = [d for d in mine if d[0] != _reaper.pid]
        assert _reaper.stdin is not None
        _reaper.stdin.write("".join(f"{pid} {ticks}\n" for pid, ticks in mine).encode())
        _reaper.stdin.flush()
    except (OSError, ValueError):
        return 0
    _told.update(mine)
    return len(mine)


def reap(targets: set[tuple[int, int]], grace_s: float) -> list[int]:
    """SIGTERM the `targets` still alive (same start time), SIGKILL them after `grace_s`; returns
    the pids it signalled."""
    alive = lambda: [pid for pid, ticks in targets if (st := _stat(pid)) is not None and st[1] == ticks]  # noqa: E731
    hit = alive()
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 1.0)):
        for pid in alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while alive() and time.monotonic() < deadline:
            time.sleep(0.1)
    return hit


def _serve(stream: IO[bytes], grace_s: float) -> None:
    targets: set[tuple[int, int]] = set()
    for line in stream:  # ends when the driver's end of the pipe closes
        with contextlib.suppress(ValueError):
            pid, ticks = (int(x) for x in line.split())
            targets.add((pid, ticks))
    reap(targets, grace_s)


def main(argv: list[str]) -> int:
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # a closing terminal must not stop the cleanup
    grace_s = float(argv[1]) if len(argv) > 1 else 3.0
    _serve(sys.stdin.buffer, grace_s)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
