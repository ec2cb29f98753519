"""Drivers to kill: `sweep run` as the CLI runs it (validation, preflight, the output-dir lock, claims,
the call cache, Parquet, MLflow), with the engines built in the driver process instead of on Ray, so a
driver starts in a fraction of a second and dozens can be killed in one test.

Drivers are forked from a forkserver that imported all of this once (`Drivers`): a fork of the
pytest process itself could inherit Ray's threads. A driver may be told to stop itself (SIGSTOP) at
an exact moment — half-way through writing a Parquet part, inside MLflow logging, between writing a
claim and linking it, between taking the lock and saying who holds it — for the test to SIGKILL it
there."""

from __future__ import annotations

import functools
import multiprocessing
import os
import re
import signal
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import pyarrow.parquet as pq

import sweep.cli
import sweep.run.runner
import sweep.store.ownership
import sweep.store.results
import sweep.tracking.tracker
from actors.registry import build_backend
from sweep.engines.pool import EnginePool, build_agents
from sweep.store.cache import CallCache
from sweep.store.repair import check_cache

STOP_POINTS = ("parquet", "mlflow", "claim", "lock")


class LocalPool(EnginePool):
    """`EnginePool` without Ray: the same cache check, cache and agents, engines in this process."""

    def __enter__(self) -> LocalPool:
        out = Path(self.cfg.output_dir).resolve()
        if self.cfg.cache:
            check_cache(out / "llm_cache.sqlite")
        specs = {m: self.cfg.models[m] for m in self.models}
        self.backends = {m: build_backend(s.engine, s.model or m, dict(s.args)) for m, s in specs.items()}
        self.cache = CallCache(out / "llm_cache.sqlite") if self.cfg.cache else None
        self.agents = build_agents(specs, self.backends, self.cache)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.cache is not None:
            self.cache.close()


def _stop_self() -> None:
    os.kill(os.getpid(), signal.SIGSTOP)


def _stop_at(point: str, nth: int) -> None:
    """Arrange for this driver to SIGSTOP itself the `nth` time it reaches `point`."""
    seen = {"n": 0}

    def due() -> bool:
        seen["n"] += 1
        return seen["n"] == nth

    if point == "parquet":
        real = sweep.store.results.write_atomic

        def half_written(table: Any, path: Path) -> None:
            if path.parent.name == "episodes" and due():
                tmp = path.with_name(f".tmp-{path.name}")
                with open(tmp, "wb") as fh:  # a part cut off mid-write, as a kill leaves it
                    pq.write_table(table, fh)
                    fh.truncate(fh.tell() // 2)
                _stop_self()
            real(table, path)

        sweep.store.results.write_atomic = half_written  # type: ignore[assignment]
    elif point == "mlflow":
        real_group = (
            sweep.tracking.tracker.Tracker._log_folder
        )  # every group's child run is logged through it

        def logging(self: Any, *args: Any, **kwargs: Any) -> Any:
            if due():
                _stop_self()
            return real_group(self, *args, **kwargs)

        sweep.tracking.tracker.Tracker._log_folder = logging  # type: ignore[method-assign]
    elif point == "claim":
        real_link = os.link

        def linking(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
            if "/claims/" in str(dst) and due():
                _stop_self()
            real_link(src, dst, *args, **kwargs)

        sweep.store.ownership.os.link = linking  # type: ignore[attr-defined]
    elif point == "lock":
        real_truncate = os.ftruncate

        def truncating(fd: int, length: int) -> None:
            if due():
                _stop_self()
            real_truncate(fd, length)

        sweep.store.ownership.os.ftruncate = truncating  # type: ignore[attr-defined]


def driver(
    argv: list[str], log: str, stop: tuple[str, int] | None = None, env: dict[str, str] | None = None
) -> None:
    """A `sweep` CLI driver (the forkserver's target): output to `log`, exit with the CLI's code."""
    os.environ.update(env or {})
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sweep.run.runner.EnginePool = LocalPool  # type: ignore[misc]
    # Small parts, written often: more moments to be killed in the middle of one.
    sweep.run.runner.PART_EPISODES = 8
    sweep.run.runner.BufferedWriter = functools.partial(  # type: ignore[misc]
        sweep.store.results.BufferedWriter, max_seconds=0.3
    )
    if stop is not None:
        _stop_at(*stop)
    code = 70
    try:
        code = sweep.cli.main(argv)
    finally:
        os._exit(code)


def state(pid: int) -> str | None:
    """The process state letter from /proc (R, S, T for stopped, Z...), None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2]


class Drivers:
    """Starts `driver`s from a forkserver that imported this module once."""

    def __init__(self) -> None:
        self.ctx = multiprocessing.get_context("forkserver")
        self.ctx.set_forkserver_preload(["tests.chaos.harness"])

    def start(
        self,
        argv: list[str],
        log: Path,
        stop: tuple[str, int] | None = None,
        env: dict[str, str] | None = None,
    ) -> Any:
        proc = self.ctx.Process(target=driver, args=(argv, str(log), stop, env))
        proc.start()
        return proc

    def run(self, argv: list[str], log: Path, timeout: float = 300, env: dict[str, str] | None = None) -> int:
        proc = self.start(argv, log, env=env)
        proc.join(timeout)
        if proc.exitcode is None:
            proc.kill()
            proc.join()
            raise TimeoutError(f"driver still running after {timeout} s: {log.read_text()[-2000:]}")
        return int(proc.exitcode)

    @staticmethod
    def kill_when_stopped(proc: Any, timeout: float = 120) -> bool:
        """SIGKILL `proc` once it has stopped itself; False if it exited first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = state(proc.pid)
            if st == "T":
                os.kill(proc.pid, signal.SIGKILL)
                proc.join()
                return True
            if st in (None, "Z") or not proc.is_alive():
                proc.join()
                return False
            time.sleep(0.02)
        proc.kill()
        proc.join()
        raise TimeoutError("the driver neither stopped nor exited")

    @staticmethod
    def kill_after(proc: Any, seconds: float) -> bool:
        """SIGKILL `proc` after `seconds`; False if it had exited by then."""
        proc.join(seconds)
        if not proc.is_alive():
            return False
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        return True


def run_now(log: Path) -> list[int]:
    """The "N run now" counts a driver log reports, one per run."""
    return [int(n) for n in re.findall(r"(\d+) run now", log.read_text())]


def committed_ids(out: Path) -> list[str]:
    """The episode ids of every committed part, duplicates kept."""
    return [
        eid
        for part in sorted((out / "episodes").glob("part-*.parquet"))
        for eid in pq.read_table(part, columns=["episode_id"]).column(0).to_pylist()
    ]


def assert_exactly_once(out: Path, planned: set[str]) -> None:
    """Every planned episode stored once, with all its turns and rounds, and no leftovers of crashes."""
    from sweep.store.results import ResultStore

    ids = committed_ids(out)
    assert len(ids) == len(set(ids)), f"{len(ids) - len(set(ids))} episode(s) stored twice"
    assert set(ids) == planned, f"{len(planned - set(ids))} lost, {len(set(ids) - planned)} unplanned"
    store = ResultStore(out)
    episodes, turns, rounds = store.episodes(), store.turns(), store.rounds()
    calls = dict(zip(episodes["episode_id"].to_list(), episodes["calls"].to_list(), strict=True))
    per_episode = turns.group_by("episode_id").len()
    made = dict(zip(per_episode["episode_id"].to_list(), per_episode["len"].to_list(), strict=True))
    assert made == calls, "turn rows do not match the episodes' calls"
    assert set(rounds["episode_id"].to_list()) == planned, "episodes without their rounds"
    assert not list(out.rglob(".tmp-*")), "temp files left behind"
    for sub in ("turns", "rounds"):
        names = {p.name for p in (out / sub).glob("part-*.parquet")}
        assert names <= {p.name for p in (out / "episodes").glob("part-*.parquet")}, f"orphan {sub} parts"


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    args = [None if x is None else x.encode() for x in (source, target, fstype)]
    if libc.mount(*args, ctypes.c_ulong(flags), None if data is None else data.encode()) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def private_tmpfs(path: Path, size_kb: int) -> None:
    """Mount a tmpfs of `size_kb` at `path`, in a mount namespace of this process alone (as root, or
    in a user namespace where those are allowed). OSError when neither works here."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    newns, newuser = 0x00020000, 0x10000000
    if libc.unshare(newns) != 0:
        uid, gid = os.getuid(), os.getgid()
        if libc.unshare(newuser | newns) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"unshare: {os.strerror(err)}")
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"0 {uid} 1")
        Path("/proc/self/gid_map").write_text(f"0 {gid} 1")
    _mount("none", "/", None, 0x4000 | 0x40000, None)  # MS_REC | MS_PRIVATE: nothing leaks out
    path.mkdir(parents=True, exist_ok=True)
    _mount("tmpfs", str(path), "tmpfs", 0, f"size={size_kb}k")


def full_disk(argv: list[str], out: str, log: str, report: str, small_kb: int, big_kb: int) -> None:
    """Run `sweep` on a tiny tmpfs until it is full, then on a larger one; write what happened to
    `report` (JSON) — the tmpfs vanishes with this process, so the checks are made here."""
    import json
    import traceback

    result: dict[str, Any] = {}
    try:
        private_tmpfs(Path(out), small_kb)
    except OSError as e:
        Path(report).write_text(json.dumps({"unavailable": str(e)}))
        os._exit(0)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sweep.run.runner.EnginePool = LocalPool  # type: ignore[misc]
    try:
        result["first"] = sweep.cli.main(argv)
        result["stored_first"] = len(set(committed_ids(Path(out))))
        result["temp_files"] = [str(p) for p in Path(out).rglob(".tmp-*")]
        _mount("tmpfs", out, "tmpfs", 0x20, f"size={big_kb}k")  # MS_REMOUNT: space freed
        result["second"] = sweep.cli.main(argv)
        result["stored"] = committed_ids(Path(out))
        from sweep.store.results import ResultStore

        result["turns_ok"] = ResultStore(Path(out)).turns().height > 0
    except BaseException:  # noqa: BLE001 - reported to the test, which fails with it
        result["error"] = traceback.format_exc()
    Path(report).write_text(json.dumps(result))
    os._exit(0)
