"""Fit a population to a targets file's `fit:` rows with an Optuna study, resumably.

The study lives in `OUT/study.journal` (the project's journal storage, `sweep.study.storage`); its
sampler draws by trial slot (`sweep.study.seeding`), so a rerun after a kill neither repeats a
configuration nor loses a finished trial: a trial its dead driver left running is failed and its
values enqueued again, and the rerun runs only the trials still missing of `--trials`. The first
trial of a new study is its start: the packaged population (`populations/<name>.yaml`) when there is
one, else the single-agent rows, improved by a coordinate search (`sweep.calibrate.warm`); the trials after
it search 8 % of each parameter's range either side of that start (`space.NEAR`, CMA-ES by
default), and the start is kept in the study so a rerun searches the same space.

Objective (minimised): the mean over fit rows of ((predicted - published accuracy) / max(std, 2))^2,
accuracies in percent, on the items the predictions run (each dataset entry's own subset; with
`fit_limit`, its first `fit_limit` of them): a row that never debates at
its expected accuracy (`sweep.calibrate.expected`), a debate row on episodes of `fit_seeds`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import optuna
from optuna.trial import TrialState

from actors.population import VERSION
from actors.populations import Population, PopulationError, load, resolve
from debate.spec import stable_hash
from sweep.calibrate.backends import population_backends
from sweep.calibrate.evaluate import Evaluator, MakeBackend, RowResult, row_method
from sweep.calibrate.space import population_of, space, start_values, suggest, values_of
from sweep.calibrate.targets import Row, Targets
from sweep.calibrate.warm import warm_start
from sweep.config.errors import ConfigError
from sweep.store.ownership import me
from sweep.study.seeding import SlotSampler
from sweep.study.storage import StudyLock, abandon, open_storage, recover_stale

JOURNAL = "study.journal"
STUDY = "calibrate"
MIN_STD = 2.0  # points: a row's std below this (or none given) counts as this
SAMPLERS = ("tpe", "cmaes")


@dataclass(frozen=True)
class FitSettings:
    """How the fit runs: `trials` in all (a rerun runs those missing), the sampler and its seed, the
    seeds and items per dataset each trial evaluates, and an optional time limit in minutes."""

    fit_seeds: tuple[int, ...]
    trials: int = 10
    sampler: str = "cmaes"
    seed: int = 0
    fit_limit: int | None = None  # None: each dataset entry's own subset (the predictions' items)
    timeout_min: float | None = None
    expected: bool = True  # rows that never debate score their expected accuracy (`Evaluator.expected`)
    workers: int = 1  # processes a large evaluation's episodes are split over (same results)
    joint_moves: bool = False  # the start's search also moves skill and spread together (`warm`)


@dataclass(frozen=True)
class FitResult:
    """The best trial's population and objective, the trials this call ran and the study's total."""

    population: Population
    value: float
    number: int
    ran: int
    complete: int


def objective(rows: Sequence[Row], results: Mapping[str, RowResult]) -> float:
    """Mean over `rows` of ((predicted - published) / max(std, 2))^2 (accuracies in percent)."""
    if not rows:
        raise ValueError("no fit rows to score")
    total = 0.0
    for row in rows:
        scale = max(row.std if row.std is not None else 0.0, MIN_STD)
        total += ((results[row.key].acc - row.acc) / scale) ** 2
    return total / len(rows)


def fingerprint(targets: Targets, settings: FitSettings) -> str:
    """What makes two fits' objective values comparable: the targets' content, the fit's seeds and
    items, the space and the population model's version (a study's start is kept in the study). A
    study in OUT made under another fingerprint is refused."""
    dims = {k: [d.low, d.high] for k, d in space(targets).items()}
    setup = {"seeds": list(settings.fit_seeds), "limit": settings.fit_limit, "space": dims, "model": VERSION}
    if settings.expected:  # absent from the fingerprints of fits made before it existed
        setup["expected"] = True
    return stable_hash({"targets": targets.digest, **setup})


def _open(out: Path, targets: Targets, settings: FitSettings, lock: StudyLock) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with lock:
        study = optuna.create_study(
            storage=open_storage(f"journal:{out / JOURNAL}"),
            study_name=STUDY,
            direction="minimize",
            sampler=SlotSampler(settings.sampler, {"seed": settings.seed}),
            load_if_exists=True,
        )
        found = study.user_attrs.get("fingerprint")
        if found is None:
            study.set_user_attr("fingerprint", fingerprint(targets, settings))
            study.set_user_attr("targets", str(targets.path))
        elif found != fingerprint(targets, settings):
            raise ConfigError(
                f"--out: {out} holds a fit of other targets, fit seeds, items or space; "
                "rerun with the settings it was started with, or give a new --out"
            )
    return study


def first_values(
    targets: Targets,
    evaluator: Evaluator,
    backends: Callable[[Population], MakeBackend],
    say: Callable[[str], None],
    joint_moves: bool = False,
) -> tuple[dict[str, float], str]:
    """Where the fit starts: a coordinate search (`sweep.calibrate.warm`) from the packaged population
    when there is one (and it loads), else from the single-agent fit rows; and a line naming it."""
    path = resolve(targets.population)
    values, source = start_values(targets), "the single-agent fit rows"
    if path.is_file():
        try:
            values, source = values_of(load(targets.population), targets), str(path)
        except PopulationError as e:
            say(f"warning: not starting from {path}: {e}")
    say(f"start: a coordinate search from {source}")
    found = warm_start(targets, evaluator, backends, values, objective, say, joint_moves)
    return found, f"a coordinate search from {source}"


def _start(
    study: optuna.Study,
    targets: Targets,
    evaluator: Evaluator,
    backends: Callable[[Population], MakeBackend],
    say: Callable[[str], None],
    joint_moves: bool = False,
) -> dict[str, float]:
    """The study's start (kept in its user attrs, so a rerun searches the same space), found and
    enqueued as the first trial when the study is new."""
    kept = study.user_attrs.get("start")
    if isinstance(kept, dict):
        return {str(k): float(v) for k, v in kept.items()}
    values, source = first_values(targets, evaluator, backends, say, joint_moves)
    study.set_user_attr("start", values)
    study.enqueue_trial(values, user_attrs={"source": source})
    say(f"trial 1 starts from {source}")
    return values


def best(study: optuna.Study, targets: Targets) -> tuple[Population, float, int] | None:
    """The best finished trial's population, objective and number (None before any)."""
    if not study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        return None
    t = study.best_trial
    assert t.value is not None
    desc = f"fitted by sweep calibrate to {Path(str(targets.path)).name} (trial {t.number}, objective {t.value:.4g})"
    return population_of(t.params, targets, desc), t.value, t.number


def _eta(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m // 60}h{m % 60:02d}m" if m >= 60 else f"{m}m{s:02d}s"


def fit(
    targets: Targets,
    out: Path,
    settings: FitSettings,
    say: Callable[[str], None],
    backends: Callable[[Population], MakeBackend] = population_backends,
) -> FitResult:
    """Run (or resume) the study in `out` until it holds `settings.trials` finished trials or the
    time limit is reached; the best population so far. `out` must be owned by the caller."""
    rows = list(targets.fit_rows())
    evaluator = Evaluator(
        targets, settings.fit_seeds, settings.fit_limit, expected=settings.expected, workers=settings.workers
    )
    for row in rows:  # every dataset loads and every method builds before the first trial
        evaluator.samples(row.dataset)
        row_method(row, {})
    lock = StudyLock(out / f".{STUDY}.lock")
    study = _open(out, targets, settings, lock)
    # A new study's search: minutes, unlocked.
    first = _start(study, targets, evaluator, backends, say, settings.joint_moves)
    start, ran = time.monotonic(), 0
    limit_s = None if settings.timeout_min is None else settings.timeout_min * 60
    while True:
        with lock:
            for stale in recover_stale(study, set(), 0.0):
                say(stale.line().replace("[yellow]", "").replace("[/]", ""))
            complete = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
            if complete >= settings.trials or (limit_s is not None and time.monotonic() - start >= limit_s):
                break
            trial = study.ask()
            trial.set_user_attr("driver", me())
            trial.set_user_attr("heartbeat", time.time())
        try:
            population = suggest(trial, targets, first)
            results = evaluator.run(rows, backends(population))
            value = objective(rows, results)
        except KeyboardInterrupt:
            abandon(study, trial, "interrupted", retry=True)  # the rerun runs these values again
            raise
        except BaseException as e:
            trial.set_user_attr("error", f"{type(e).__name__}: {e}"[:500])
            study.tell(trial, state=TrialState.FAIL)
            raise
        trial.set_user_attr("predicted", json.dumps({k: round(r.acc, 3) for k, r in results.items()}))
        study.tell(trial, value)
        ran += 1
        so_far = best(study, targets)
        assert so_far is not None
        left = settings.trials - complete - 1
        per_trial = (time.monotonic() - start) / ran
        eta = (
            per_trial * left
            if limit_s is None
            else min(per_trial * left, limit_s - (time.monotonic() - start))
        )
        say(
            f"trial {complete + 1}/{settings.trials}: objective {value:.4g}, best {so_far[1]:.4g} "
            f"(trial {so_far[2]}); {evaluator.throughput.rate:.0f} episodes/s; ETA {_eta(max(eta, 0.0))}"
        )
    found = best(study, targets)
    if found is None:
        raise ConfigError("--timeout: no trial finished in the time given; raise --timeout")
    complete = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
    return FitResult(found[0], found[1], found[2], ran, complete)
