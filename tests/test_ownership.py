"""One driver per output dir: the lock refuses a second owner in one line, lets a joiner in as a
worker, and is free again once its holder is gone; episode claims give each episode to exactly one
driver, and a dead driver's claims are taken over."""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sweep.store.ownership import (
    HEARTBEAT_S,
    LOCK_FILE,
    STALE_REMOTE_S,
    Claims,
    DirLock,
    OutputBusy,
    driver_alive,
    me,
)


def test_a_second_owner_is_refused_in_one_line_naming_the_owner(tmp_path: Path) -> None:
    first = DirLock.for_output(tmp_path, "sweep-a")
    assert first.acquire() == "owner"
    info = json.loads((tmp_path / LOCK_FILE).read_text())
    assert (
        info["pid"] == os.getpid() and info["host"] == socket.gethostname() and info["sweep_id"] == "sweep-a"
    )
    with pytest.raises(OutputBusy) as e:
        DirLock.for_output(tmp_path, "sweep-a").acquire()
    text = str(e.value)
    assert f"pid {os.getpid()} on {socket.gethostname()}" in text and "--join" in text and "\n" not in text
    first.release()
    again = DirLock.for_output(tmp_path, "sweep-a")
    assert again.acquire() == "owner"
    again.release()


def test_a_joiner_becomes_a_worker_only_with_the_same_config(tmp_path: Path) -> None:
    owner = DirLock.for_output(tmp_path, "sweep-a")
    owner.acquire()
    assert not owner.workers_alive()
    worker = DirLock.for_output(tmp_path, "sweep-a")
    assert worker.acquire(join=True) == "worker" and owner.workers_alive()
    with pytest.raises(OutputBusy, match="runs another config .sweep id sweep-a, yours sweep-b."):
        DirLock.for_output(tmp_path, "sweep-b").acquire(join=True)
    worker.release()
    assert not owner.workers_alive()
    owner.release()


def test_the_lock_of_a_killed_driver_is_free(tmp_path: Path) -> None:
    code = (
        "import sys, time; from pathlib import Path; from sweep.store.ownership import DirLock; "
        "DirLock.for_output(Path(sys.argv[1]), 's').acquire(); print('held', flush=True); time.sleep(600)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        with pytest.raises(OutputBusy, match=f"pid {proc.pid} "):
            DirLock.for_output(tmp_path, "s").acquire()
    finally:
        proc.kill()
        proc.wait()
    lock = DirLock.for_output(tmp_path, "s")
    assert lock.acquire() == "owner"  # the kernel dropped the dead holder's lock
    # Leftovers older than the moment this owner took over are its to clean: nobody else writes.
    assert lock.clean_before() == lock.acquired_at
    lock.release()


def test_a_lock_file_of_another_host_counts_while_it_is_fresh(tmp_path: Path) -> None:
    (tmp_path / LOCK_FILE).write_text(json.dumps({"host": "elsewhere", "pid": 1, "since": "then"}))
    with pytest.raises(OutputBusy, match="pid 1 on elsewhere"):
        DirLock.for_output(tmp_path).acquire()
    old = time.time() - STALE_REMOTE_S - 5
    os.utime(tmp_path / LOCK_FILE, (old, old))
    lock = DirLock.for_output(tmp_path)
    assert lock.acquire() == "owner"
    lock.release()


def test_driver_alive_tells_reused_pids_and_other_hosts_apart() -> None:
    assert driver_alive(me()) is True
    assert driver_alive({**me(), "started": -1}) is False  # same pid, another process
    assert driver_alive({**me(), "host": "elsewhere"}) is None
    assert driver_alive({"host": socket.gethostname(), "pid": 2**22 + 12345}) is False
    assert driver_alive({"host": socket.gethostname(), "pid": "x"}) is False


def test_claims_give_an_episode_to_one_driver_and_dead_ones_lose_theirs(tmp_path: Path) -> None:
    mine = Claims(tmp_path)
    assert mine.take("e1") and mine.take("e1")  # idempotent for its holder
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        live = {"host": socket.gethostname(), "pid": sleeper.pid, "started": _ticks(sleeper.pid)}
        (tmp_path / "claims" / "e2").write_text(json.dumps(live))
        assert not mine.take("e2") and mine.held_by_others({"e1", "e2", "e3"}) == {"e2"}
        assert mine.claimed() == {"e1", "e2"}  # a listing, whoever holds them
    finally:
        sleeper.kill()
        sleeper.wait()
    assert mine.held_by_others({"e2"}) == set()
    assert mine.take("e2")  # the holder died: taken over
    (tmp_path / "claims" / "e3").write_text("")  # a half-made claim (made by an older version)
    assert mine.take("e3")
    again = Claims(tmp_path)  # a later run in this same process: its own claims are not others'
    assert again.held_by_others({"e1", "e2", "e3"}) == set() and again.take("e1")
    mine.release({"e1"})
    assert not (tmp_path / "claims" / "e1").exists() and (tmp_path / "claims" / "e2").exists()
    mine.clear()
    assert not (tmp_path / "claims").exists()


def test_claims_are_links_to_one_record_renewed_when_full_gone_or_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claims = Claims(tmp_path)
    assert claims.take("e1") and claims.take("e2")
    one, two = (os.stat(tmp_path / "claims" / e) for e in ("e1", "e2"))
    assert one.st_ino == two.st_ino and two.st_nlink == 3  # the record and two claims: no file per claim
    assert json.loads((tmp_path / "claims" / "e2").read_text()) == me() and claims.claimed() == {"e1", "e2"}
    record = claims._record
    assert record is not None and record.name.startswith(".driver-")

    os.utime(record, (0, 0))  # an old record: touched once HEARTBEAT_S has passed since the last touch
    claims._touched -= HEARTBEAT_S + 1
    assert claims.take("e3") and time.time() - (tmp_path / "claims" / "e1").stat().st_mtime < 60

    real_link, full = os.link, [True]

    def link(src: Any, dst: Any) -> None:
        if full.pop() if full else False:
            raise OSError(errno.EMLINK, "Too many links")
        real_link(src, dst)

    monkeypatch.setattr(os, "link", link)
    assert claims.take("e4") and claims._record != record  # a full record: a new one
    assert json.loads((tmp_path / "claims" / "e4").read_text()) == me()
    assert claims._record is not None
    claims._record.unlink()  # the record removed (claims/ cleaned by hand): written again
    assert claims.take("e5") and claims.held_by_others({"e1", "e4", "e5"}) == set()
    claims._record.unlink()  # removed again, now when the heartbeat touches it: written again too
    claims._touched -= HEARTBEAT_S + 1
    assert claims.take("e6") and claims._record.exists() and claims.held_by_others({"e6"}) == set()
    claims.clear()
    assert not (tmp_path / "claims").exists()


def _ticks(pid: int) -> int | None:
    from sweep.store.ownership import start_ticks

    return start_ticks(pid)


def _race(root: str, ids: list[str], go: Any, out: Any) -> None:
    claims = Claims(Path(root))
    go.wait()
    out.put([eid for eid in ids if claims.take(eid)])


def test_racing_drivers_claim_each_episode_exactly_once(tmp_path: Path) -> None:
    ids = [f"e{i:03d}" for i in range(200)]
    ctx = multiprocessing.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    # Each process walks the ids in another order, so they collide all the way.
    orders = [ids, ids[::-1], ids[50:] + ids[:50], ids[::2] + ids[1::2]]
    procs = [ctx.Process(target=_race, args=(str(tmp_path), o, go, out)) for o in orders]
    for p in procs:
        p.start()
    go.set()
    won = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    flat = [e for w in won for e in w]
    assert sorted(flat) == ids  # every episode claimed by exactly one driver


def test_a_study_locks_its_output_dir_and_a_storage_file_kept_elsewhere(tmp_path: Path) -> None:
    from sweep.study.cli import study_locks
    from sweep.study.config import load_study
    from tests.conftest import ROOT

    example = ROOT / "examples" / "study_random_simulated.yaml"
    inside = load_study(example, out=str(tmp_path / "a"))
    assert [lk.path for lk in study_locks(inside)] == [tmp_path / "a" / LOCK_FILE]
    journal = tmp_path / "shared" / "study.journal"
    setup = load_study(example, sets=[f"storage=journal:{journal}"], out=str(tmp_path / "b"))
    first = study_locks(setup)
    assert [lk.path for lk in first] == [tmp_path / "b" / LOCK_FILE, journal.with_name("study.journal.owner")]
    for lock in first:
        lock.acquire()
    try:
        # Another output dir on the same storage file: refused by the storage's lock.
        other = load_study(example, sets=[f"storage=journal:{journal}"], out=str(tmp_path / "c"))
        locks = study_locks(other)
        assert locks[0].acquire() == "owner"
        with pytest.raises(OutputBusy, match=f"storage journal:{journal}: in use by another driver"):
            locks[1].acquire()
        locks[0].release()
    finally:
        for lock in first:
            lock.release()


def test_without_flock_the_owners_record_decides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    import sweep.store.ownership

    def no_flock(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")  # as on some NFS mounts

    monkeypatch.setattr(sweep.store.ownership.fcntl, "flock", no_flock)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        live = {"host": socket.gethostname(), "pid": sleeper.pid, "started": _ticks(sleeper.pid)}
        (tmp_path / LOCK_FILE).write_text(json.dumps(live))
        with pytest.raises(OutputBusy, match=f"pid {sleeper.pid} "):
            DirLock.for_output(tmp_path).acquire()
    finally:
        sleeper.kill()
        sleeper.wait()
    lock = DirLock.for_output(tmp_path)
    assert lock.acquire() == "owner"  # its owner is gone
    assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == os.getpid()
    lock.release()


def test_settling_rereads_the_store_after_the_last_worker_is_gone(tmp_path: Path) -> None:
    """The interleaving a loaded CI run hit: the owner reads the store while a worker still runs its
    last episodes, the worker stores them and exits, and only then does the owner see no live holder.
    Those episodes are stored, not lost: no failure, and the claims go."""
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from sweep.run.runner import SweepOutcome, _settle
    from sweep.run.scheduler import RunStats

    ids = {"e1", "e2", "e3"}
    reads = iter([{"e1"}, ids])  # before the worker stored e2 and e3; after it did and exited

    class Store:
        def done_ids(self) -> set[str]:
            return next(reads, ids)

    class FakeClaims:
        released: set[str] | None = None
        cleared = False

        def held_by_others(self, episode_ids: set[str]) -> set[str]:
            return set()  # the worker has exited: it holds nothing any more

        def release(self, episode_ids: set[str]) -> None:
            self.released = set(episode_ids)

        def clear(self) -> None:
            self.cleared = True

    plan = SimpleNamespace(tasks=[SimpleNamespace(episode_id=i) for i in sorted(ids)])
    claims, lock = FakeClaims(), SimpleNamespace(workers_alive=lambda: False)
    outcome = SweepOutcome(tmp_path, 3, 0, RunStats(total=1), None, None)
    _settle(plan, Store(), claims, lock, outcome, Console(file=io.StringIO()))  # type: ignore[arg-type]
    assert outcome.stats is not None and outcome.stats.failures == []
    assert claims.released == set() and claims.cleared
