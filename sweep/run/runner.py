"""`sweep run`: plan -> skip what is stored -> start engines on Ray -> run episodes -> Parquet -> MLflow."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from sweep import interrupt
from sweep.config.sweep import SweepConfig
from sweep.engines.pool import EnginePool
from sweep.run.drivers import LocalWorkers, check_drivers
from sweep.run.plan import EpisodeTask, Group, Plan, build_plan
from sweep.run.preflight import TrackingFailed, preflight
from sweep.run.progress import ProgressLines, per_second, shown
from sweep.run.scheduler import RunStats, run_tasks
from sweep.run.summary import summarize
from sweep.store.ownership import Claims, DirLock
from sweep.store.records import Recorder
from sweep.store.repair import MIN_FREE_BYTES, DiskFull, free_bytes, is_disk_full
from sweep.store.results import BufferedWriter, ResultStore
from sweep.store.targets import replace_file
from sweep.tracking import receipt
from sweep.tracking.choice import TrackingChoice, choose_tracking

CONFIG_FILE = "config.resolved.yaml"  # the sweep as run, in its output dir (workers read it)
WAIT_POLL_S = 1.0  # how often an owner looks whether its workers' episodes are stored
# A Parquet part is written at 256 episodes, 4,096 turns or 5 s, whichever comes first. Each part costs
# three files, six fsyncs and the writers' set-up: at 64 episodes the part writer thread took twice the
# CPU per call it takes at 256 (`bench/threads.py`). The turn bound keeps long episodes' buffers small:
# 256 PEAR episodes a part took the 10k PEAR example from 401 to 482 MB (`bench/memory.py`).
PART_EPISODES, PART_TURNS = 256, 4096


@dataclass
class SweepOutcome:
    out_dir: Path
    planned: int
    skipped: int
    stats: RunStats | None
    tracking_uri: str | None
    parent_run_id: str | None
    summary: list[dict[str, Any]] = field(default_factory=list)


def write_resolved_config(cfg: SweepConfig, out: Path) -> None:
    """`<out>/config.resolved.yaml`, whole or not at all. Drivers sharing a dir (an owner and its
    `--join` workers) may write it at once: each through a temp file of its own."""
    out.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)
    replace_file(out / CONFIG_FILE, text.encode("utf-8"))


def run_sweep(
    cfg: SweepConfig,
    plan: Plan | None = None,
    tracking: TrackingChoice | None = None,
    address: str | None = None,
    console: Console | None = None,
    lock: DirLock | None = None,
    join: bool = False,
    drivers: int = 1,
) -> SweepOutcome:
    """Run every episode of the sweep that is not stored yet, then log the sweep to MLflow. The
    output dir is owned for the whole run (`lock`, taken here when not given; `join`: help its
    owner as a worker, which runs only unclaimed episodes and logs nothing; `drivers`: the owner
    starts `drivers - 1` local workers, `sweep.run.drivers`; `tracking`: the command's choice, by
    default the config's `tracking:`)."""
    console = console or Console(stderr=True)
    plan = plan or build_plan(cfg)
    out = Path(cfg.output_dir).resolve()
    if tracking is None:
        tracking = choose_tracking(out, cfg.tracking.enabled, cfg.tracking.uri, cfg.tracking.experiment)
    check_drivers(cfg, drivers, address)
    if lock is not None:
        return _run_owned(cfg, plan, tracking, address, console, lock, drivers)
    preflight(tracking, address or cfg.ray.address)
    lock = DirLock.for_output(out, cfg.identity())
    lock.acquire(join)
    try:
        return _run_owned(cfg, plan, tracking, address, console, lock, drivers)
    finally:
        lock.release()


def _run_owned(
    cfg: SweepConfig,
    plan: Plan,
    tracking: TrackingChoice,
    address: str | None,
    console: Console,
    lock: DirLock,
    drivers: int = 1,
) -> SweepOutcome:
    out = Path(cfg.output_dir).resolve()
    worker = lock.role == "worker"
    if not worker:
        write_resolved_config(cfg, out)
    store = ResultStore(out, orphans_before=lock.clean_before())
    claims = Claims(out)
    done = store.done_ids()
    # Per group, how many of its episodes are still to run; the tasks themselves are made lazily.
    held = claims.held_by_others(claims.claimed() - done)
    left, n_held = _left(plan, done, held)
    n_todo = sum(left.values())
    outcome = SweepOutcome(out, len(plan.tasks), len(plan.tasks) - n_todo - n_held, None, None, None)
    if not n_todo and not n_held:
        console.print(f"[green]all {len(plan.tasks)} episodes are already done[/]: no model call made")
    elif n_todo:
        groups = [g for g in plan.groups if left[g.key]]
        skip = done | held
        todo = (t for g in groups for t in g.tasks() if t.episode_id not in skip)
        workers = None if worker or drivers == 1 else LocalWorkers(out / CONFIG_FILE, out, drivers - 1)
        t0 = time.monotonic()
        try:
            if workers is not None:
                workers.start(console)
            bound = sum(left[g.key] * g.calls() for g in groups)  # calls: an upper bound, for the ETA
            outcome.stats = _run_episodes(cfg, groups, todo, (n_todo, bound), store, address, console, claims)
            if workers is not None:
                outcome.stats = workers.join(store, outcome.stats, done, t0, console)
        except BaseException:
            if workers is not None:
                workers.stop()
            with contextlib.suppress(Exception):  # let a worker (or the rerun) have what we gave up
                claims.release(claims.mine - store.done_ids())
            raise
    if worker:
        # No summary: the owner's is the sweep's (a worker's would be of what is stored so far).
        console.print(
            "worker: done with the unclaimed episodes; the owner summarises the sweep and logs it to MLflow"
        )
        return outcome
    _settle(plan, store, claims, lock, outcome, console)
    try:
        _track(cfg, plan, store, outcome, tracking, console)
    except Exception as e:  # noqa: BLE001 - MLflow's and the network's errors vary; the results are safe
        raise TrackingFailed(
            f"tracking: logging to MLflow failed ({type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}); "
            f"the results are stored in {out}; rerun once the tracking server is back, or pass --no-tracking"
        ) from e
    outcome.summary = summarize(plan, store)
    return outcome


def _track(
    cfg: SweepConfig,
    plan: Plan,
    store: ResultStore,
    outcome: SweepOutcome,
    tracking: TrackingChoice,
    console: Console,
) -> None:
    """Log the sweep to MLflow, unless nothing ran and the store's receipt says MLflow has it all
    already (`sweep.tracking.receipt`): then MLflow is not even imported."""
    if tracking.uri is None:
        return
    out, uri = Path(cfg.output_dir).resolve(), tracking.uri
    facts = (out, uri, tracking.experiment, cfg.identity())
    if outcome.stats is None and (parent := receipt.fresh(*facts, store.part_names())) is not None:
        console.print("mlflow: up to date (nothing new since it was logged)")
        outcome.tracking_uri, outcome.parent_run_id = uri, parent
        return
    from sweep.tracking.tracker import sweep_tracker

    tracker = sweep_tracker(cfg, tracking)
    outcome.tracking_uri = tracker.uri
    outcome.parent_run_id = tracker.log_sweep(cfg, plan, store, outcome.stats)
    if outcome.parent_run_id is not None and not (outcome.stats and outcome.stats.failures):
        receipt.write(*facts, store.part_names(), outcome.parent_run_id)


def _left(plan: Plan, done: set[str], held: set[str]) -> tuple[dict[str, int], int]:
    """Per group, how many of its episodes are still to run here; and how many of the plan's
    episodes other live drivers hold."""
    left, n_held = {}, 0
    for g in plan.groups:
        n = 0
        for t in g.tasks():
            if t.episode_id in held:
                n_held += 1
            elif t.episode_id not in done:
                n += 1
        left[g.key] = n
    return left, n_held


def _settle(
    plan: Plan, store: ResultStore, claims: Claims, lock: DirLock, outcome: SweepOutcome, console: Console
) -> None:
    """Wait for the episodes that live workers are running; episodes left unstored by a driver that
    stopped become failures (a rerun runs them). Claims go once every episode is stored."""
    ids = {t.episode_id for t in plan.tasks}
    said = False
    while held := claims.held_by_others(ids - store.done_ids()):
        if not said:
            console.print(f"waiting for {len(held)} episode(s) that worker(s) are running")
            said = True
        time.sleep(WAIT_POLL_S)
    # Read the store again once no live driver holds a claim: a worker can store its last episodes
    # and exit between the read above and the liveness check, and those are stored, not lost.
    missing = ids - store.done_ids()
    failed = {f.split(":", 1)[0] for f in outcome.stats.failures} if outcome.stats else set()
    claims.release(missing)
    if missing - failed:
        outcome.stats = outcome.stats or RunStats(total=0)
        outcome.stats.failures.append(
            f"{len(missing - failed)} episode(s) claimed by a driver that stopped are not stored; rerun to run them"
        )
    if not missing and not lock.workers_alive():
        claims.clear()


def _run_episodes(
    cfg: SweepConfig,
    groups: list[Group],
    todo: Iterator[EpisodeTask],
    counts: tuple[int, int],
    store: ResultStore,
    address: str | None,
    console: Console,
    claims: Claims,
) -> RunStats:
    used = sorted({m for g in groups for m in g.seats})
    math = any(s.kind == "math" for g in groups for s in g.samples)
    (n_todo, bound), gate = counts, SpaceGate(store.out_dir, claims)
    with (
        EnginePool(cfg, used, address, console, warm_math=math) as pool,
        BufferedWriter(store, PART_EPISODES, background=True, max_turns=PART_TURNS) as writer,
    ):
        cache = pool.cache

        def hits() -> int:
            return cache.hits if cache is not None else 0

        # The engines start on the first call (`sweep.engines.pool`), which says when each is ready to answer.
        lines = ProgressLines(console, n_todo, cfg.progress_every_s, hits, meter=pool.meter)
        lines.stats = RunStats(total=n_todo, calls_bound=bound)
        record = Recorder(writer, cfg.identity(), pool.simulated)
        with shown(console, lines) as show:
            run = run_tasks(todo, pool.agents, record, cfg.concurrency, show, n_todo, gate, bound)
            stats = interrupt.run(run)
    if gate.full is not None:
        raise DiskFull(store.out_dir, f"{gate.full}; {stats.done} episode(s) stored before it stopped")
    # Episodes that ran but could not be stored are failed ones (the writer says why).
    stats.done -= len(writer.failed)
    stats.failures += writer.failed
    rate = f" ({per_second(stats.calls, stats.wall_s)} calls/s)" if stats.wall_s > 0 else ""
    console.print(f"{stats.done} episodes, {stats.calls:,} calls in {stats.wall_s:.1f} s{rate}")
    if pool.cache is not None:
        stats.cache_hits = pool.cache.hits
        console.print(pool.cache_line())
    return stats


class SpaceGate:
    """The scheduler's `claim`: an episode starts once this driver claims it, and none starts
    once the disk holding the results is (nearly) full."""

    def __init__(self, out_dir: Path, claims: Claims) -> None:
        self.out_dir, self.claims = out_dir, claims
        self.full: str | None = None

    def __call__(self, task: Any) -> bool:
        free = free_bytes(self.out_dir)
        if self.full is None and free is not None and free < MIN_FREE_BYTES:
            self.full = f"{free // 1024} KB free, no new episode started"
        if self.full is not None:
            return False
        try:
            return self.claims.take(task.episode_id)
        except OSError as e:
            if not is_disk_full(e):
                raise
            self.full = f"claiming an episode failed ({e.strerror or e})"
            return False
