"""Math equivalence under a time limit: the client of the math-verify worker process (`data.grading.mathworker`).

sympy can hang (a power tower, a huge factorial) in C code that no signal interrupts, and math-verify's
own timeout uses `signal.alarm` (whole seconds, main thread only). So checks run in a worker process:
the worker stops a check after `cpu_limit` seconds of CPU time, and this client kills a worker whose
check has used `kill_after` seconds of CPU (or runs past `wall_limit`). CPU time, not wall time, decides,
so a verdict does not depend on how busy the machine is; a check that times out is run once more (in a
fresh, warm child when it was killed) before 'timeout' is the answer. The worker's start-up (imports,
warming sympy, a child's first page faults) is never charged to a check. One worker serves a process;
requests from threads are serialized. Linux (`/proc`) reads the worker's CPU time; elsewhere the wall time is used.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Literal

Result = Literal["equal", "different", "unparsed", "gold_unparsed", "timeout", "error"]
WORKER = Path(__file__).with_name("mathworker.py")
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_POLL_S = 0.02


class WorkerUnavailable(RuntimeError):
    """The worker could not start (math-verify not installed, or it died while starting)."""


class MathChecker:
    """Compares LaTeX answers with math-verify in a worker process, each check bounded in CPU time."""

    def __init__(
        self,
        cpu_limit: float = 0.5,
        kill_after: float = 0.8,
        wall_limit: float = 10.0,
        start_limit: float = 180.0,
    ) -> None:
        self.cpu_limit, self.kill_after = cpu_limit, kill_after
        self.wall_limit, self.start_limit = wall_limit, start_limit
        self._proc: subprocess.Popen[bytes] | None = None
        self._child = 0  # pid of the worker's serving child
        self._buffer = b""
        self._ready = False  # the serving child has announced itself
        self._seq = 0
        self._lock = threading.Lock()
        self.kills = 0  # how many children were killed for overrunning (for tests and reports)
        self.retries = 0  # how many checks timed out once and were run again

    def start(self) -> None:
        """Start the worker now rather than at the first check (it takes seconds: sympy imports)."""
        with self._lock:
            self._ensure_started()

    def start_soon(self) -> None:
        """Start the worker in the background and return at once: it warms up while the caller works,
        and the first check that needs it waits only for what is left. Does nothing while it runs."""
        if not self._lock.acquire(blocking=False):
            return  # a check holds the lock: the worker is up or coming up
        try:
            if self._proc is None or self._proc.poll() is not None:
                self._spawn()
        finally:
            self._lock.release()

    def equivalent(
        self, answer: str, gold: str, cpu_limit: float | None = None, kill_after: float | None = None
    ) -> Result:
        """math-verify's verdict on `answer` against `gold` (LaTeX without $ signs); the limits default
        to this checker's. A check that times out is run once more, in a fresh child when the first was
        killed, so one unlucky run (a cold cache, a slow moment) does not decide a verdict."""
        limits = (cpu_limit or self.cpu_limit, kill_after or self.kill_after)
        with self._lock:
            result = self._ask_restarting(answer, gold, *limits)
            if result == "timeout":
                self.retries += 1
                result = self._ask_restarting(answer, gold, *limits)
            return result

    def _ask_restarting(self, answer: str, gold: str, cpu_limit: float, kill_after: float) -> Result:
        for attempt in (1, 2):  # a zygote that died since the last call is restarted once
            try:
                return self._ask(answer, gold, cpu_limit, kill_after)
            except WorkerUnavailable:
                self._stop()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _ask(self, answer: str, gold: str, cpu_limit: float, kill_after: float) -> Result:
        self._ensure_started()
        self._seq += 1
        request = {"seq": self._seq, "answer": answer, "gold": gold, "cpu_limit": cpu_limit}
        line = json.dumps(request) + "\n"
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(line.encode())
            self._proc.stdin.flush()
        except OSError as e:
            raise WorkerUnavailable(f"math worker closed its input ({e})") from None
        start, cpu0 = time.monotonic(), _cpu_seconds(self._child)
        while True:
            for message in self._read_lines(_POLL_S):
                if message.get("seq") == self._seq:
                    return _as_result(message.get("result"))
                if "ready" in message:  # our child died on its own (a crash): a fresh one is up
                    self._child = _pid(message["ready"])
                    return "error"
            now = _cpu_seconds(self._child)
            used = now - cpu0 if now is not None and cpu0 is not None else None
            overran = used is not None and used > kill_after
            if overran or time.monotonic() - start > (self.wall_limit if used is not None else kill_after):
                self._kill_child()
                return "timeout"

    def _kill_child(self) -> None:
        """Kill the serving child and wait for the zygote's next one to announce itself."""
        self.kills += 1
        with contextlib.suppress(ProcessLookupError):  # it may have finished just now
            os.kill(self._child, signal.SIGKILL)
        self._await_ready(self.start_limit)

    def _ensure_started(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            self._spawn()
        if not self._ready:
            self._await_ready(self.start_limit)

    def _spawn(self) -> None:
        self._stop()
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        self._proc = subprocess.Popen(
            [sys.executable, "-I", str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # a Ctrl-C at the terminal is for the caller, who then stops us
        )
        self._buffer = b""
        self._ready = False

    def _await_ready(self, limit: float) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            for message in self._read_lines(0.1):
                if "ready" in message:
                    self._child = _pid(message["ready"])
                    self._ready = True
                    return
        raise WorkerUnavailable(
            f"math worker did not get ready within {limit:.0f} s (is math-verify installed?)"
        )

    def _read_lines(self, wait: float) -> list[dict[str, object]]:
        """Whole JSON lines the worker wrote within `wait` seconds; WorkerUnavailable at its EOF."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], wait)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                raise WorkerUnavailable("math worker exited (is math-verify installed?)")
            self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        messages = []
        for raw in lines:
            try:
                messages.append(json.loads(raw))
            except ValueError:
                continue  # a line cut by a killed child: it answered a request nobody waits for now
        return [m for m in messages if isinstance(m, dict)]

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        try:
            # a worker still warming up reads no input yet: stop it now rather than wait for its warm-up
            proc.wait(timeout=2 if self._ready else 0)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the zygote and its child: the session we started
            proc.wait()

    def worker_cpu_seconds(self) -> float | None:
        """CPU seconds the serving child has used so far (None where /proc is missing or none runs)."""
        return _cpu_seconds(self._child) if self._child else None

    def close(self) -> None:
        """Stop the worker (it also stops by itself when this process exits)."""
        with self._lock:
            self._stop()


def _pid(value: object) -> int:
    if not isinstance(value, int):
        raise WorkerUnavailable(f"math worker announced a bad pid {value!r}")
    return value


def _as_result(value: object) -> Result:
    known = ("equal", "different", "unparsed", "gold_unparsed", "timeout", "error")
    return value if isinstance(value, str) and value in known else "error"  # type: ignore[return-value]


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of `pid` from /proc, or None where /proc is not there."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK


_CHECKER: tuple[int, MathChecker] | None = None
_CHECKER_LOCK = threading.Lock()


def checker() -> MathChecker:
    """This process's shared checker (a forked child gets its own: pipes are not shared across fork)."""
    global _CHECKER
    with _CHECKER_LOCK:
        if _CHECKER is None or _CHECKER[0] != os.getpid():
            _CHECKER = (os.getpid(), MathChecker())
            atexit.register(_CHECKER[1].close)
        return _CHECKER[1]
