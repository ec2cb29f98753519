"""One driver per output dir (or study storage) at a time, and opt-in workers that help it.

- `DirLock`: an exclusive `flock` on a lock file (`<output_dir>/.sweep.lock`) held for the driver's
  life, with the owner's host, pid, process start time and sweep id written in it. The kernel drops
  the lock when its holder dies (SIGKILL included), so a stale lock is one nobody holds; a lock file
  that names another host (where `flock` may not reach, e.g. NFS) counts as held while its owner
  touches it every `HEARTBEAT_S`. A second driver is refused at once with one line (`OutputBusy`),
  unless it asked to join: then it becomes a worker (a shared `flock` on `.sweep.workers`).
- `Claims`: before an episode runs, its driver claims it by creating `claims/<episode_id>` (atomic:
  a hard link to the driver's record, written once per run as `claims/.driver-<uuid>`, so a claim
  appears whole or not at all and costs no new file). A claim of a driver that is gone is taken
  over, so owner and workers never run one episode twice, and nothing a dead driver claimed is lost."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from sweep.config.errors import ConfigError

HEARTBEAT_S = 30.0
STALE_REMOTE_S = 120.0  # a lock file of another host not touched for this long is stale
LOCK_FILE, WORKERS_FILE, CLAIMS_DIR = ".sweep.lock", ".sweep.workers", "claims"


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux), which tells a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2 :].split()[19])  # field 22 of proc(5)


def me() -> dict[str, Any]:
    """This process as a driver: host, pid and start time (computed now: a forked child differs)."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "started": start_ticks(os.getpid())}


def driver_alive(driver: dict[str, Any]) -> bool | None:
    """Whether a driver on this host still runs; None for a driver on another host."""
    if driver.get("host") != socket.gethostname():
        return None
    try:
        pid = int(driver.get("pid", -1))
    except (TypeError, ValueError):
        return False
    if pid <= 0:
        return False
    if pid == os.getpid():
        return driver.get("started") in (None, start_ticks(pid))
    if Path("/proc").is_dir():
        started = start_ticks(pid)
        return started is not None and driver.get("started") in (None, started)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OutputBusy(ConfigError):
    """Another live driver owns the output dir (or storage): exit 2, one line, nothing written."""


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class DirLock:
    """`lock = DirLock(path, what, sweep_id)`; `lock.acquire(join)` returns "owner" or "worker" (or
    raises `OutputBusy`); `lock.release()` lets go. `what` names the thing in messages."""

    def __init__(self, path: Path, what: str, sweep_id: str = "", fix: str | None = None) -> None:
        self.path, self.what, self.sweep_id, self.fix = Path(path), what, sweep_id, fix
        self.role: str | None = None
        self.acquired_at = 0.0
        self.workers_alive_at_start = False
        self._fd: int | None = None
        self._workers_fd: int | None = None
        self._stop = threading.Event()

    @classmethod
    def for_output(cls, out_dir: Path, sweep_id: str = "", fix: str | None = None) -> DirLock:
        return cls(Path(out_dir) / LOCK_FILE, f"output_dir {Path(out_dir)}", sweep_id, fix)

    def acquire(self, join: bool = False) -> str:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            flocked = True
        except BlockingIOError:
            os.close(fd)
            return self._busy(join)
        except OSError:  # a filesystem without flock (some NFS setups): the owner's record decides
            flocked = False
        owner = _read_json(self.path)
        alive = driver_alive(owner) if owner.get("host") else False
        fresh = time.time() - self.path.stat().st_mtime < STALE_REMOTE_S
        if (alive is None and fresh) or (alive and not flocked and owner.get("pid") != os.getpid()):
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            return self._busy(join)
        self._fd, self.role, self.acquired_at = fd, "owner", time.time()
        info = {**me(), "sweep_id": self.sweep_id, "since": time.strftime("%Y-%m-%d %H:%M:%S")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self.workers_alive_at_start = self.workers_alive()
        threading.Thread(target=self._beat, daemon=True, name="dir-lock-heartbeat").start()
        return "owner"

    def _busy(self, join: bool) -> str:
        owner = _read_json(self.path)
        who = f"pid {owner.get('pid', '?')} on {owner.get('host', '?')} since {owner.get('since', '?')}"
        if not join or self.fix:  # a `fix` is given by writers that cannot join
            fix = (
                self.fix
                or "wait for it to finish, use another output dir (--out), or add --join to help it as a worker"
            )
            raise OutputBusy(f"{self.what}: in use by another driver ({who}); {fix}")
        theirs = owner.get("sweep_id")
        if theirs and self.sweep_id and theirs != self.sweep_id:
            raise OutputBusy(
                f"{self.what}: the driver there ({who}) runs another config (sweep id {theirs}, yours "
                f"{self.sweep_id}); --join only with the same config and --set overrides"
            )
        wfd = os.open(self.path.with_name(WORKERS_FILE), os.O_RDWR | os.O_CREAT, 0o644)
        with contextlib.suppress(OSError):  # without flock, the owner just cannot see its workers
            fcntl.flock(wfd, fcntl.LOCK_SH)
        self._workers_fd, self.role, self.acquired_at = wfd, "worker", time.time()
        return "worker"

    def workers_alive(self) -> bool:
        """Whether some worker holds its shared lock on this dir now."""
        path = self.path.with_name(WORKERS_FILE)
        if not path.exists():
            return False
        fd = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        finally:
            os.close(fd)  # closing drops the probe's lock
        return False

    def clean_before(self) -> float | None:
        """A time before which every leftover (temp file, uncommitted part) is a crash's: when an
        owner took the lock and no worker was there, nobody could still be writing them."""
        if self.role == "owner" and not self.workers_alive_at_start:
            return self.acquired_at
        return None

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            with contextlib.suppress(OSError):
                os.utime(self.path)

    def release(self) -> None:
        self._stop.set()
        for fd in (self._fd, self._workers_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)
        self._fd = self._workers_fd = None
        self.role = None


class Claims:
    """Episode claims under `<output_dir>/claims/` (see the module docstring)."""

    def __init__(self, out_dir: Path) -> None:
        self.dir = Path(out_dir) / CLAIMS_DIR
        self.dir.mkdir(parents=True, exist_ok=True)
        self.driver = me()
        self.mine: set[str] = set()
        # Every claim is a hard link to this record: one inode per run, not one per episode (a new
        # file cost ~0.5 ms here, a link ~20 us). Touched while claiming, so another host's reader
        # sees a claim as recent while its driver still claims.
        self._record: Path | None = None
        self._touched = 0.0

    def take(self, episode_id: str) -> bool:
        """Claim `episode_id` for this driver; False when a live driver holds it."""
        path = self.dir / episode_id
        for _ in range(3):
            if self._create(path):
                self.mine.add(episode_id)
                return True
            holder = _read_json(path)
            if self._is_me(holder):
                self.mine.add(episode_id)
                return True
            if not self._stale(path, holder):
                return False
            aside = self.dir / f".stale-{episode_id}-{uuid.uuid4().hex[:8]}"
            with contextlib.suppress(FileNotFoundError):  # another driver took it over first
                path.rename(aside)
                aside.unlink()
        return False

    def _create(self, path: Path, again: bool = True) -> bool:
        record = self._fresh_record()
        try:
            os.link(record, path)  # fails if the claim exists: the claim appears whole or not at all
        except FileExistsError:
            return False
        except OSError as e:
            # The record has the most links the file system allows, or was removed: write a new one.
            gone = isinstance(e, FileNotFoundError) and not record.exists()
            if not again or not (e.errno == errno.EMLINK or gone):
                raise
            self._record = None
            return self._create(path, again=False)
        return True

    def _fresh_record(self) -> Path:
        """This driver's record (written on first use, or once the last one is full), touched at most
        every `HEARTBEAT_S`."""
        now = time.monotonic()
        if self._record is None:
            record = self.dir / f".driver-{uuid.uuid4().hex}"
            record.write_text(json.dumps(self.driver), encoding="utf-8")
            self._record, self._touched = record, now
        elif now - self._touched > HEARTBEAT_S:
            try:
                os.utime(self._record)
            except FileNotFoundError:  # removed (claims/ cleaned by hand) between touches: write anew
                self._record = None
                return self._fresh_record()
            self._touched = now
        return self._record

    @staticmethod
    def _stale(path: Path, holder: dict[str, Any]) -> bool:
        alive = driver_alive(holder) if holder else False
        if alive is None:  # another host: trust the claim while it is recent
            with contextlib.suppress(FileNotFoundError):
                return time.time() - path.stat().st_mtime > STALE_REMOTE_S * 30
        return not alive

    def _is_me(self, holder: dict[str, Any]) -> bool:
        """Whether a claim is this driver's (made by this process, maybe by an earlier run in it)."""
        return bool(holder) and all(holder.get(k) == v for k, v in self.driver.items())

    def claimed(self) -> set[str]:
        """The episode ids with a claim file, whoever holds it (a listing: no file is read)."""
        return {p.name for p in self.dir.iterdir() if not p.name.startswith(".")}

    def held_by_others(self, episode_ids: set[str]) -> set[str]:
        """Those of `episode_ids` claimed by another driver that is still alive."""
        held = set()
        for eid in episode_ids - self.mine:
            path = self.dir / eid
            if not path.exists():
                continue
            holder = _read_json(path)
            if not self._is_me(holder) and not self._stale(path, holder):
                held.add(eid)
        return held

    def release(self, episode_ids: set[str]) -> None:
        """Drop this driver's claims on `episode_ids` (episodes it gave up on), so others may run them."""
        for eid in episode_ids & self.mine:
            with contextlib.suppress(FileNotFoundError):
                (self.dir / eid).unlink()
            self.mine.discard(eid)

    def clear(self) -> None:
        """Remove every claim: the sweep is complete."""
        for path in self.dir.iterdir():
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        with contextlib.suppress(OSError):
            self.dir.rmdir()
