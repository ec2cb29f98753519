"""`sweep study`: Optuna ask/tell over a debate method's arguments. Engine actors start once and
serve every trial; each trial is the base sweep's episodes under the trial's params, run through
`sweep.run.scheduler.run_tasks` into the shared results store (so episodes already stored, by any trial
or run, are never run again). Several trials run at once; several drivers may share one storage."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import optuna
import polars as pl
from optuna.trial import FrozenTrial, Trial, TrialState
from rich.console import Console

from debate.episode import Agent
from search_spaces import sample
from sweep import interrupt
from sweep.config.sweep import ConfigError, SweepConfig
from sweep.run.plan import EpisodeTask, Plan, build_plan
from sweep.run.scheduler import run_tasks
from sweep.store.ownership import me
from sweep.store.records import Recorder
from sweep.store.results import BufferedWriter, ResultStore
from sweep.study.config import OBJECTIVES, StudySetup
from sweep.study.progress import StudyProgress
from sweep.study.storage import StudyLock, abandon, open_study, recover_stale
from sweep.study.tracking import NullStudyTracker
from sweep.study.training import router_args, train_trial
from sweep.tracking.metrics import diagnostic_metrics, group_metrics

MAX_FAILED_IN_A_ROW = 5  # then the study stops: something is broken beyond one trial's params


@dataclass
class StudyOutcome:
    study: optuna.Study
    ran: list[int] = field(default_factory=list)  # numbers of the trials this driver finished
    recovered: list[int] = field(default_factory=list)  # stale trials failed (and retried once)
    episodes_run: int = 0
    parent_run_id: str | None = None


def trial_metrics(rows: list[dict[str, Any]]) -> tuple[dict[str, float], list[float]]:
    """A trial's scalars (`group_metrics` plus the diagnostics' means) and its accuracy per round."""
    frame = pl.DataFrame(rows, infer_schema_length=None)
    scalars, per_round = group_metrics(frame)
    scalars |= {name: value for name, value, step in diagnostic_metrics(frame, None) if step == 0}
    return scalars, per_round


class StudyRunner:
    """One study driver: engines, agents and the episode ledger shared by its trials in flight."""

    def __init__(self, setup: StudySetup, console: Console, tracker: Any = None) -> None:
        self.setup, self.cfg, self.console = setup, setup.cfg, console
        self.tracker = tracker if tracker is not None else NullStudyTracker()
        self.agents: dict[str, Agent] = {}
        self.simulated: set[str] = set()
        self.store = ResultStore(setup.out)
        self.lock = StudyLock(setup.out / f".{self.cfg.name}.lock")
        self.study = open_study(setup, self.lock)
        self.rows: dict[str, dict[str, Any]] = {}  # finished episodes by id: stored or run here
        self.running: dict[str, asyncio.Future[None]] = {}  # episodes in flight here, by id
        self.inflight: dict[int, Trial] = {}
        self.parts: set[str] = set()  # committed store parts already read into `rows`
        self.failed_in_a_row = 0
        self.outcome = StudyOutcome(self.study)
        self.progress = StudyProgress(
            console, self.cfg.n_trials, self.cfg.parallel, self.cfg.objectives, setup.base.progress_every_s
        )

    def run(self, agents: dict[str, Agent], simulated: set[str]) -> StudyOutcome:
        """Ask, run and tell until the study holds `n_trials` finished or running trials; `agents`
        by model name (`simulated`: the models whose results are labelled simulated)."""
        self.agents, self.simulated = agents, simulated
        self.writer = BufferedWriter(self.store)
        try:
            interrupt.run(self._loop())
        except BaseException:
            self._release_inflight()
            raise
        finally:
            self.writer.close()
        return self.outcome

    async def _loop(self) -> None:
        tasks: set[asyncio.Task[None]] = set()
        beat = asyncio.create_task(self._heartbeat())
        ticker = asyncio.create_task(self._ticker())
        try:
            while True:
                while len(tasks) < self.cfg.parallel and self.failed_in_a_row < MAX_FAILED_IN_A_ROW:
                    trial = self._ask()
                    if trial is None:
                        break
                    tasks.add(asyncio.create_task(self._trial(trial)))
                if not tasks:
                    break
                done, tasks = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                for d in done:
                    d.result()  # a bug in the driver itself stops the study
        finally:
            beat.cancel()
            ticker.cancel()
        if self.failed_in_a_row >= MAX_FAILED_IN_A_ROW:
            raise RuntimeError(f"{self.failed_in_a_row} trials failed in a row; see the errors above")

    def _ask(self) -> Trial | None:
        """The next trial, or None once the study has its `n_trials` (counted under the lock, so
        drivers sharing the storage never overshoot; `ask` takes the trial's sampler slot under it
        too). Stale trials of dead drivers are failed and retried once."""
        # Failed trials do not count (stale ones come back as WAITING, which `ask` pops first).
        counted = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)
        with self.lock:
            for stale in recover_stale(self.study, set(self.inflight), self.cfg.stale_after_s):
                self.console.print(stale.line(), highlight=False)
                self.outcome.recovered.append(stale.number)
            if len(self.study.get_trials(deepcopy=False, states=counted)) >= self.cfg.n_trials:
                return None
            trial = self.study.ask()
            trial.set_user_attr("driver", me())
            trial.set_user_attr("heartbeat", time.time())
        self.inflight[trial.number] = trial
        return trial

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.cfg.heartbeat_s)
            for trial in list(self.inflight.values()):
                # Told meanwhile (or failed by another driver): nothing to keep alive.
                with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
                    trial.set_user_attr("heartbeat", time.time())

    async def _ticker(self) -> None:
        """A progress line whenever the console was silent for the base sweep's `progress_every_s`."""
        while True:
            await asyncio.sleep(1.0)
            self.progress.tick(len(self.inflight), self.outcome.episodes_run)

    async def _trial(self, trial: Trial) -> None:
        t0 = time.perf_counter()
        try:
            params = sample(self.setup.space, trial)
            if self.setup.training is not None and self.setup.cfg.train is not None:  # train, then evaluate
                policy = await train_trial(
                    self.setup.cfg.train,
                    self.setup.training,
                    self.setup.out,
                    trial,
                    params,
                    self.agents,
                    self.console,
                )
                if policy is None:
                    self._tell(trial, TrialState.PRUNED, None)
                    return
                params = {**router_args(params), "checkpoint": policy}
            sweep = self.setup.trial_sweep(params)
            plan = build_plan(sweep)
        except (ConfigError, RuntimeError) as e:
            self._tell(trial, TrialState.FAIL, None, error=str(e))
            return
        pruned, missing = await self._episodes(trial, plan, sweep)
        self.writer.flush()  # the trial's episodes are on disk before the storage says it finished
        rows = [self.rows[t.episode_id] for t in plan.tasks if t.episode_id in self.rows]
        if rows:
            scalars, per_round = trial_metrics(rows)
            trial.set_user_attr("metrics", scalars)
            trial.set_user_attr("accuracy_round", per_round)
        trial.set_user_attr("method", plan.groups[0].method.spec.label())
        trial.set_user_attr("sweep_id", sweep.identity())
        trial.set_user_attr("episodes", len(rows))
        trial.set_user_attr("seconds", round(time.perf_counter() - t0, 2))
        if missing:
            self._tell(
                trial, TrialState.FAIL, None, error=f"{missing} episode(s) failed; see the traceback above"
            )
        elif pruned:
            self._tell(trial, TrialState.PRUNED, None)
        else:
            self._tell(trial, TrialState.COMPLETE, [scalars[OBJECTIVES[o][1]] for o in self.cfg.objectives])

    async def _episodes(self, trial: Trial, plan: Plan, sweep: SweepConfig) -> tuple[bool, int]:
        """Run or reuse every episode of `plan`; report each one's correctness as a step when a
        pruner is set. Returns (pruned, episodes that failed)."""
        self._read_store()
        state = {"pruned": False, "missing": 0}
        sem = asyncio.Semaphore(max(1, sweep.concurrency // self.cfg.parallel))
        stop: Callable[[], bool] = lambda: bool(state["pruned"])  # noqa: E731

        async def one(step: int, task: EpisodeTask) -> None:
            row = await self._episode(task, sweep, sem, stop)
            if row is None:
                state["missing"] += 0 if stop() else 1
                return
            if self.cfg.pruner is not None and not state["pruned"]:
                trial.report(float(row["correct"]), step)
                state["pruned"] = trial.should_prune()

        await asyncio.gather(*(one(i, t) for i, t in enumerate(plan.tasks)))
        return bool(state["pruned"]), int(state["missing"])

    async def _episode(
        self, task: EpisodeTask, sweep: SweepConfig, sem: asyncio.Semaphore, stop: Callable[[], bool]
    ) -> dict[str, Any] | None:
        """The episode's row: stored, run by another trial in flight here, or run now; None if it
        failed or the trial was pruned before it started."""
        eid = task.episode_id
        while eid not in self.rows:
            if eid in self.running:  # the same episode in another trial (same resolved spec)
                await asyncio.shield(self.running[eid])
                continue
            self.running[eid] = asyncio.get_running_loop().create_future()
            try:
                async with sem:
                    if stop():
                        return None
                    record = Recorder(self.writer, sweep.identity(), self.simulated, self._keep)
                    stats = await run_tasks([task], self.agents, record, 1)
                self.writer.flush_if_due()
                self.outcome.episodes_run += stats.done
                if stats.failures or eid not in self.rows:  # not stored (the writer says why): failed
                    return None
            finally:
                self.running.pop(eid).set_result(None)
        return self.rows[eid]

    def _keep(self, row: dict[str, Any]) -> None:
        self.rows[row["episode_id"]] = row

    def _read_store(self) -> None:
        """Add the rows of committed parts not read yet (written by earlier runs or other drivers)."""
        names = sorted(p.name for p in self.store.episodes_dir.glob("part-*.parquet"))
        new = [n for n in names if n not in self.parts]
        for name in new:
            frame = pl.read_parquet(self.store.episodes_dir / name)
            for row in frame.to_dicts():
                self.rows.setdefault(row["episode_id"], row)
        self.parts.update(new)

    def _tell(self, trial: Trial, state: TrialState, values: list[float] | None, error: str = "") -> None:
        if error:
            trial.set_user_attr("error", error[:2000])
        frozen = self.study.tell(trial, values, state=state)
        self.inflight.pop(trial.number, None)
        self.outcome.ran.append(trial.number)
        self.failed_in_a_row = self.failed_in_a_row + 1 if state == TrialState.FAIL else 0
        self.progress.say(_trial_line(frozen, self.cfg.objectives))
        self.progress.say(self.progress.told(self.study, frozen))
        try:
            self.tracker.log_trial(frozen)
        except Exception as e:  # noqa: BLE001 - MLflow's errors vary; the study must go on
            self.console.print(f"mlflow: trial {frozen.number} not logged ({e}); a later run logs it")

    def _release_inflight(self) -> None:
        """On interrupt: fail this driver's running trials and re-enqueue their params for a rerun."""
        for trial in list(self.inflight.values()):
            # Best effort while going down: a rerun recovers a trial left running anyway.
            with contextlib.suppress(Exception):
                abandon(self.study, trial, "interrupted", retry=True)
        self.inflight.clear()


def _trial_line(t: FrozenTrial, objectives: list[str]) -> str:
    """One line per finished trial: its values (a pruned trial's partial accuracy) and params."""
    if t.state == TrialState.COMPLETE:
        values = ", ".join(f"{o} {v:.4g}" for o, v in zip(objectives, t.values or [], strict=False))
    else:
        acc = t.user_attrs.get("metrics", {}).get("accuracy")
        values = f"(accuracy {acc:.4g} so far)" if acc is not None else ""
    params = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in t.params.items())
    error = f" [red]{t.user_attrs['error']}[/]" if "error" in t.user_attrs else ""
    return f"trial {t.number} {t.state.name.lower()} {values} | {params} | {t.user_attrs.get('episodes', 0)} episodes{error}"
