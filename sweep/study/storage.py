"""Where a study lives and how drivers share it: the Optuna storage (a journal file by default, any
RDB URL), a file lock that serialises asking among drivers on this machine, and the recovery of
trials whose driver died (failed, then their params re-enqueued once as a retry, so their stored
episodes are reused: episode ids depend only on the resolved spec). The sampler draws by trial slot
(`sweep.study.seeding`), so neither a rerun nor a second driver repeats a configuration."""

from __future__ import annotations

import fcntl
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import optuna
from optuna.storages import BaseStorage, JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import FrozenTrial, Trial, TrialState

from sweep.config.sweep import ConfigError
from sweep.store.ownership import driver_alive as driver_alive  # a trial's driver, as a sweep's
from sweep.study.config import StudySetup
from sweep.study.samplers import PRUNERS
from sweep.study.seeding import ABANDONED, KILLS, RETRY_OF, SlotSampler


class StudyLock:
    """An exclusive `flock` on a file next to the results: drivers on this machine take turns to
    count and ask, recover stale trials and create the MLflow parent."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fd: int | None = None

    def __enter__(self) -> StudyLock:
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def open_storage(url: str) -> BaseStorage:
    """`journal:<path>` as a journal file (safe for parallel drivers), anything else as an RDB URL."""
    if url.startswith("journal:"):
        path = Path(url.removeprefix("journal:"))
        path.parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path)))
    try:
        return RDBStorage(url)
    except Exception as e:  # noqa: BLE001 - SQLAlchemy's errors vary by dialect; one line is the point
        raise ConfigError(
            f"storage: cannot open {url!r} ({type(e).__name__}: {str(e).splitlines()[0]})"
        ) from None


def open_study(setup: StudySetup, lock: StudyLock) -> optuna.Study:
    """Create or load the study; a study of that name created from another config is refused."""
    cfg = setup.cfg
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = SlotSampler(cfg.sampler.name, cfg.sampler.args)  # draws by trial slot, not by process
    pruner = PRUNERS.build(cfg.pruner.name, cfg.pruner.args) if cfg.pruner else optuna.pruners.NopPruner()
    with lock:  # one creator at a time: a fresh RDB file hit by several processes at once breaks
        storage = open_storage(setup.storage_url())
        try:
            study = optuna.create_study(
                storage=storage,
                study_name=cfg.name,
                directions=setup.cfg.directions(),
                sampler=sampler,
                pruner=pruner,
                load_if_exists=True,
            )
        except ValueError as e:
            raise ConfigError(
                f"name: study '{cfg.name}' exists with other objectives ({e}); pick a new name"
            ) from None
        found = study.user_attrs.get("fingerprint")
        if found is None:
            study.set_user_attr("fingerprint", setup.fingerprint())
            study.set_user_attr("method", cfg.method.name)
            study.set_user_attr("objectives", cfg.objectives)
            study.set_user_attr("search_space", setup.space.to_dict())
            # Optuna's dashboard and plots then say "accuracy", not "Objective 0".
            with warnings.catch_warnings():  # experimental since Optuna 3.2, stable in use
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                study.set_metric_names(list(cfg.objectives))
        elif found != setup.fingerprint():
            raise ConfigError(
                f"name: study '{cfg.name}' in {setup.storage_url()} was created from another base sweep, "
                "method, space or objectives; use a new name (or output_dir) for this config"
            )
    return study


def is_stale(t: FrozenTrial, stale_after_s: float) -> bool:
    """A running trial whose driver is gone: dead on this host, or silent for `stale_after_s`."""
    driver = t.user_attrs.get("driver")
    alive = driver_alive(driver) if isinstance(driver, dict) else None
    if alive is not None:
        return not alive
    started = t.datetime_start.timestamp() if t.datetime_start else time.time()
    beat = float(t.user_attrs.get("heartbeat", started))
    return time.time() - beat > stale_after_s


@dataclass(frozen=True)
class Recovered:
    """A stale trial `recover_stale` failed; `retry`: the number of its retry's original, when
    re-enqueued; `drew`: whether it had drawn its params."""

    number: int
    drew: bool
    retry: int | None

    def line(self) -> str:
        """What the driver says about it: one line; a warning when it is not retried."""
        if self.retry is not None:
            return f"trial {self.number}: its driver is gone; failed, re-enqueued (a retry of {self.retry})"
        if not self.drew:
            return f"trial {self.number}: its driver went before it drew params; failed, its slot drawn anew"
        return (
            f"[yellow]warning: trial {self.number}: its driver died again running a retry; failed, "
            "not retried a second time[/]"
        )


def abandon(study: optuna.Study, trial: FrozenTrial | Trial, why: str, retry: bool) -> int | None:
    """Fail running `trial` whose driver went (`why`: "killed" or "interrupted"); with `retry` and
    params, enqueue them again, marked as a retry of the first trial that ran them. Returns that
    trial's number when enqueued. Raises `UpdateFinishedTrialError` if it finished meanwhile."""
    now = study._storage.get_trial(trial._trial_id)  # a Trial object's own copy may lag
    params = now.params or now.system_attrs.get("fixed_params") or {}  # a retry that had not drawn yet
    study._storage.set_trial_user_attr(now._trial_id, ABANDONED, why)
    if not retry and params:
        study._storage.set_trial_user_attr(now._trial_id, "error", "its driver died twice on these params")
    study.tell(now.number, state=TrialState.FAIL, skip_if_finished=True)
    if not (retry and params):
        return None
    first = int(now.user_attrs.get(RETRY_OF, now.number))
    kills = int(now.user_attrs.get(KILLS, 0)) + (1 if why == "killed" else 0)
    study.enqueue_trial(params, user_attrs={RETRY_OF: first, KILLS: kills})
    return first


def recover_stale(study: optuna.Study, mine: set[int], stale_after_s: float) -> list[Recovered]:
    """Fail every stale running trial (not one of `mine`) and enqueue its params again, unless a
    driver already died on them once (a trial that kills its driver must not loop). Call under the
    study lock."""
    failed = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if t.number in mine or not is_stale(t, stale_after_s):
            continue
        drew = bool(t.params or t.system_attrs.get("fixed_params"))
        try:  # nothing drawn: it died before sampling, and its slot is drawn again by a fresh ask
            first = abandon(study, t, "killed", retry=int(t.user_attrs.get(KILLS, 0)) == 0)
        except optuna.exceptions.UpdateFinishedTrialError:
            continue  # told by its driver after all
        failed.append(Recovered(t.number, drew, first))
    return failed


def best_trials(study: optuna.Study) -> list[FrozenTrial]:
    """The best trial of a single-objective study, or the Pareto set of a multi-objective one."""
    if not study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        return []
    return list(study.best_trials) if len(study.directions) > 1 else [study.best_trial]
