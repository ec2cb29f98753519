"""Calibration's episodes on several processes: an `Evaluator` with `workers` > 1 splits a large run's
episodes into that many shards, one per process of a shared pool, and puts their outcomes back in
order. Episodes seed their calls by (seed, dataset, item, round, agent, phase), never by the order
they run in, so a sharded run gives exactly the single-process results (a test compares).

A shard is described, not shipped: the worker rebuilds the evaluator (datasets loaded once per
process) and the run's job list from the targets, the rows and the backends' picklable maker
(`PopulationBackends`, `V1Backends`), and runs every n-th job from its offset. A run whose backends
cannot be pickled (a test's lambda), or too small to pay for the processes, stays in-process."""

from __future__ import annotations

import asyncio
import atexit
import multiprocessing
import pickle
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sweep.calibrate.evaluate import Evaluator, MakeBackend, Outcome
    from sweep.calibrate.targets import Row, Targets

MIN_SHARDED = 400  # episodes: below this a run stays in-process (a process pool costs seconds)
_pool: tuple[int, ProcessPoolExecutor] | None = None
_evaluators: dict[tuple[Any, ...], Evaluator] = {}  # in a worker: one per evaluator setting


def shardable(make_backend: Callable[[str], Any], episodes: int, workers: int) -> bool:
    """Whether a run of `episodes` with these backends goes to `workers` processes."""
    if workers < 2 or episodes < MIN_SHARDED:
        return False
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
    evaluator: Evaluator, rows: Sequence[Row], make_backend: MakeBackend, episodes: int
) -> list[Outcome]:
    """Every episode of the run (`episodes` of them, in job order), over `evaluator.workers` processes."""
    n, loop = evaluator.workers, asyncio.get_running_loop()
    setting = (
        evaluator.targets,
        tuple(evaluator.seeds),
        evaluator.limit,
        evaluator.expected,
        dict(evaluator.checkpoints),
    )
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
    out: list[Outcome] = [shards[j % n][j // n] for j in range(episodes)]
    return out


def run_shard(
    setting: tuple[Targets, tuple[int, ...], int | None, bool, Mapping[str, str]],
    rows: list[Row],
    make_backend: MakeBackend,
    k: int,
    n: int,
) -> list[Outcome]:
    """In a worker: the outcomes of jobs k, k + n, k + 2n, ... of the run, in that order."""
    from sweep.calibrate.evaluate import Evaluator

    targets, seeds, limit, expected, checkpoints = setting
    key = (targets.digest, targets.path, seeds, limit, expected, tuple(sorted(checkpoints.items())))
    if key not in _evaluators:
        _evaluators[key] = Evaluator(targets, seeds, limit, expected=expected, checkpoints=checkpoints)
    evaluator = _evaluators[key]
    jobs, _ = evaluator.jobs(rows, make_backend)
    return asyncio.run(evaluator.episodes(rows, jobs[k::n]))
