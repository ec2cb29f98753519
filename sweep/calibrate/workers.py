"""Calibration's episodes on several processes: an `Evaluator` with `workers` > 1 splits a large run's
episodes into that many shards, one per process of a shared pool, and puts their outcomes back in
order. Episodes seed their calls by (seed, dataset, item, round, agent, phase), never by the order
they run in, so a sharded run gives exactly the single-process results (a test compares).

A shard is described, not shipped: the worker gets the evaluator's settings (`Evaluator.for_worker`:
no loaded items), keeps one evaluator per setting (datasets loaded once per process), rebuilds the
run's job list from the rows and the backends' picklable maker (`PopulationBackends`, `V1Backends`),
and runs every n-th job from its offset. A run whose backends cannot be pickled (a test's lambda), or
too small to pay for the processes, stays in-process. A run of rows that all score by expectation
(`Evaluator.expected`) sends about half of them to one worker and scores the rest itself. This module
knows the evaluator only by what it calls (`for_worker`, `jobs`, `episodes`, `expected_results`,
`samples`), so it imports none of the calibration's."""

from __future__ import annotations

import asyncio
import atexit
import multiprocessing
import pickle
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

MIN_SHARDED = 100  # episodes: below this a run stays in-process (its shards would cost more than they save)
_pool: tuple[int, ProcessPoolExecutor] | None = None
_evaluators: dict[tuple[Any, ...], Any] = {}  # in a worker: one evaluator per setting


def shardable(make_backend: Callable[[str], Any], episodes: int, workers: int) -> bool:
    """Whether a run of `episodes` with these backends goes to `workers` processes."""
    return workers >= 2 and episodes >= MIN_SHARDED and picklable(make_backend)


def picklable(make_backend: Callable[[str], Any]) -> bool:
    """Whether these backends can be rebuilt in a worker."""
    try:
        pickle.dumps(make_backend)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False
    return True


def pool(workers: int) -> ProcessPoolExecutor:
    """The shared pool of `workers` processes (spawned: no inherited event loop or locks)."""
    global _pool
    if _pool is None or _pool[0] != workers:
        if _pool is not None:
            _pool[1].shutdown(cancel_futures=True)
        ctx = multiprocessing.get_context("spawn")
        _pool = (workers, ProcessPoolExecutor(workers, mp_context=ctx))
    return _pool[1]


def stop() -> None:
    """Stop the pool's processes now, work in hand and all (an interrupted run waits for none)."""
    global _pool
    if _pool is None:
        return
    executor, _pool = _pool[1], None
    if hasattr(executor, "terminate_workers"):  # Python 3.14 on
        executor.terminate_workers()
        return
    for process in list((getattr(executor, "_processes", None) or {}).values()):
        process.terminate()  # before 3.14 the pool offers no public way to stop a running task
    executor.shutdown(wait=False, cancel_futures=True)


@atexit.register
def _close() -> None:
    if _pool is not None:
        _pool[1].shutdown(cancel_futures=True)


async def sharded(
    evaluator: Any, rows: Sequence[Any], make_backend: Callable[[str], Any], episodes: int
) -> list[Any]:
    """Every episode's outcome of the run (`episodes` of them, in job order), over `evaluator.workers`
    processes."""
    n, loop = evaluator.workers, asyncio.get_running_loop()
    setting = evaluator.for_worker()
    try:
        shards = await asyncio.gather(
            *(
                loop.run_in_executor(pool(n), run_shard, setting, list(rows), make_backend, k, n)
                for k in range(n)
            )
        )
    except BaseException:  # cancelled (Ctrl-C, SIGTERM) or a worker failed: stop the other shards too
        stop()
        raise
    return [shards[j % n][j // n] for j in range(episodes)]


def _evaluator(setting: Any) -> Any:
    """In a worker: its evaluator for `setting`, kept (datasets load once per process)."""
    t = setting.targets
    key = (
        t.digest,
        t.path,
        tuple(setting.seeds),
        setting.limit,
        setting.expected,
        tuple(sorted(setting.checkpoints.items())),
    )
    return _evaluators.setdefault(key, setting)


def run_shard(setting: Any, rows: list[Any], make_backend: Callable[[str], Any], k: int, n: int) -> list[Any]:
    """In a worker: the outcomes of jobs k, k + n, k + 2n, ... of the run, in that order."""
    evaluator = _evaluator(setting)
    jobs, _ = evaluator.jobs(rows, make_backend)
    return list(asyncio.run(evaluator.episodes(rows, jobs[k::n])))


async def estimated(
    evaluator: Any, quiet: Sequence[Any], make_backend: Callable[[str], Any]
) -> dict[str, Any]:
    """The rows of `quiet` (`evaluate.Quiet`) scored by expectation, about half of the work in a worker
    process while this one does the rest; each row's result is the one this process would give."""

    def cost(q: Any) -> int:  # seats times items
        return len(q.seats) * len(evaluator.samples(q.row.dataset))

    sides: tuple[list[Any], list[Any]] = ([], [])
    load = [0, 0]
    for q in sorted(quiet, key=cost, reverse=True):
        side = int(load[1] < load[0])  # the heaviest first, each to the lighter side
        sides[side].append(q)
        load[side] += cost(q)
    mine, theirs = sides
    loop = asyncio.get_running_loop()
    setting, rows = evaluator.for_worker(), [q.row for q in theirs]
    future = loop.run_in_executor(pool(evaluator.workers), run_estimates, setting, rows, make_backend)
    try:
        out = evaluator.expected_results(mine)
        return out | await future
    except BaseException:  # cancelled (Ctrl-C, SIGTERM) or the worker failed: stop it too
        stop()
        raise


def run_estimates(setting: Any, rows: list[Any], make_backend: Callable[[str], Any]) -> dict[str, Any]:
    """In a worker: `rows` scored by expectation."""
    evaluator = _evaluator(setting)
    return dict(evaluator.expected_results(evaluator.jobs(rows, make_backend)[1]))
