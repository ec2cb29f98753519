"""A study in MLflow: one parent run per study (found again on resume), one child run per finished
trial with its params, objective values and diagnostics, and on the parent the best params (or the
Pareto set) and the plots — optimization history, accuracy against tokens with its Pareto front,
parameter importances, and Optuna's Pareto front for multi-objective studies — as PNG artifacts."""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

import optuna
from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from optuna.trial import FrozenTrial, TrialState

from debate.spec import stable_hash
from sweep.study.config import StudySetup
from sweep.study.storage import StudyLock, best_trials, driver_alive
from sweep.tracking.tracker import TAG_PARENT, TAG_ROLE, Tracker, flatten_params, log_batch

TAG_STUDY = "debate_sweep.study"
TAG_TRIAL = "debate_sweep.trial"
TAG_STATE = "debate_sweep.trial_state"


def study_summary(study: optuna.Study, objectives: list[str]) -> dict[str, Any]:
    """Counts by state and the best trial (or the Pareto set) with values, params and metrics."""
    counts: dict[str, int] = {}
    for t in study.get_trials(deepcopy=False):
        counts[t.state.name] = counts.get(t.state.name, 0) + 1
    best = [
        {
            "number": t.number,
            "values": dict(zip(objectives, t.values, strict=True)),
            "params": t.params,
            "metrics": t.user_attrs.get("metrics", {}),
        }
        for t in best_trials(study)
    ]
    return {
        "study": study.study_name,
        "objectives": objectives,
        "trials": counts,
        "pareto" if len(objectives) > 1 else "best": best,
    }


def _pareto(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on accuracy (up) and tokens (down) at once."""
    keep = []
    for i, (acc, tok) in enumerate(points):
        if not any(a >= acc and t <= tok and (a, t) != (acc, tok) for a, t in points):
            keep.append(i)
    return keep


def write_plots(study: optuna.Study, objectives: list[str], out: Path) -> tuple[list[Path], list[str]]:
    """Render the study's plots as PNGs under `out`; returns the files and why any were skipped."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as ovm

    if not study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        return [], ["all plots: no completed trial yet"]
    out.mkdir(parents=True, exist_ok=True)
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # "too few trials for importances" is reported below
    first = (lambda t: t.values[0]) if len(objectives) > 1 else None
    makers: dict[str, Any] = {
        "optimization_history": lambda: ovm.plot_optimization_history(
            study, target=first, target_name=objectives[0]
        ),
        "param_importances": lambda: ovm.plot_param_importances(
            study, target=first, target_name=objectives[0]
        ),
        "accuracy_vs_tokens": lambda: _accuracy_vs_tokens(study, plt),
    }
    if len(objectives) in (2, 3):
        makers["pareto_front"] = lambda: ovm.plot_pareto_front(study, target_names=objectives)
    files, skipped = [], []
    for name, make in makers.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the matplotlib backend is "experimental" in Optuna
                ax = make()
        except (ValueError, RuntimeError, ZeroDivisionError, KeyError, IndexError) as e:
            skipped.append(f"{name}: {e}")
            continue
        fig = ax.figure if hasattr(ax, "figure") else ax.flat[0].figure
        fig.savefig(out / f"{name}.png", dpi=110, bbox_inches="tight")
        plt.close(fig)
        files.append(out / f"{name}.png")
    return files, skipped


def _accuracy_vs_tokens(study: optuna.Study, plt: Any) -> Any:
    trials = [
        t
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if "metrics" in t.user_attrs
    ]
    if len(trials) < 1:
        raise ValueError("no completed trial yet")
    points = [
        (t.user_attrs["metrics"]["accuracy"], t.user_attrs["metrics"]["tokens_per_task"]) for t in trials
    ]
    front = sorted(_pareto(points), key=lambda i: points[i][1])
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    ax.scatter([p[1] for p in points], [p[0] for p in points], c="#9bb", label="trials")
    ax.plot(
        [points[i][1] for i in front], [points[i][0] for i in front], "o-", c="#c33", label="Pareto front"
    )
    labels: dict[tuple[float, float], list[str]] = {}
    for i in front:  # trials with the same outcome (often the same params) share one label
        labels.setdefault(points[i], []).append(f"#{trials[i].number}")
    for (acc, tok), names in labels.items():
        ax.annotate(",".join(names), (tok, acc), fontsize=8, textcoords="offset points", xytext=(4, 4))
    ax.set_xlabel("tokens per task")
    ax.set_ylabel("accuracy")
    ax.set_title(f"{study.study_name}: accuracy against tokens")
    ax.legend()
    return ax


class StudyTracker:
    """Logs one study through `MlflowClient`; several drivers share the parent run, whose id is kept
    in the study's user attrs (set under the study lock)."""

    def __init__(self, uri: str, setup: StudySetup, study: optuna.Study, lock: StudyLock) -> None:
        self.uri = uri
        with lock:  # also serialises creating a fresh sqlite store, which parallel creators corrupt
            self._t = Tracker(uri, setup.cfg.tracking.experiment, setup.out)
            self.client = self._t.client
            self.parent_id = self._parent(setup, study, stable_hash([uri, setup.cfg.tracking.experiment]))
        self.objectives = setup.cfg.objectives
        self.fixed = dict(setup.cfg.method.args)
        self.method = setup.cfg.method.name
        found = self.client.search_runs(
            [self._t.experiment_id], f"tags.`{TAG_PARENT}` = '{self.parent_id}'", max_results=50000
        )
        self.logged = {int(r.data.tags[TAG_TRIAL]) for r in found if TAG_TRIAL in r.data.tags}

    def _parent(self, setup: StudySetup, study: optuna.Study, key: str) -> str:
        attr = f"mlflow_parent_run_id.{key}"
        run_id = study.user_attrs.get(attr)
        if run_id:
            try:
                self.client.update_run(run_id, status="RUNNING")
                return str(run_id)
            except MlflowException:
                pass  # the tracking store was replaced: start a new parent there
        tags = {TAG_ROLE: "study", TAG_STUDY: setup.cfg.name}
        run = self.client.create_run(self._t.experiment_id, tags=tags, run_name=setup.cfg.name)
        params = flatten_params(setup.cfg.model_dump(mode="json", exclude={"tracking", "overrides"}))
        params |= flatten_params({"space": setup.space.to_dict()["params"], "storage": setup.storage_url()})
        self._batch(run.info.run_id, [], [Param(k, v) for k, v in params.items()], [])
        study.set_user_attr(attr, run.info.run_id)
        return str(run.info.run_id)

    def _batch(self, run_id: str, metrics: list[Metric], params: list[Param], tags: list[RunTag]) -> None:
        log_batch(self.client, run_id, metrics, params, tags)

    def log_trial(self, t: FrozenTrial) -> None:
        """A child run for a finished trial (once per trial)."""
        if t.number in self.logged or t.state not in (
            TrialState.COMPLETE,
            TrialState.PRUNED,
            TrialState.FAIL,
        ):
            return
        tags = {
            TAG_PARENT: self.parent_id,
            TAG_ROLE: "trial",
            TAG_TRIAL: str(t.number),
            TAG_STATE: t.state.name,
        }
        run = self.client.create_run(self._t.experiment_id, tags=tags, run_name=f"trial {t.number}")
        args = t.user_attrs.get("method_args") or {
            **self.fixed,
            **t.params,
        }  # a trained trial: its checkpoint
        params = flatten_params(
            {
                "method": {"name": self.method, "args": args},
                "trial": {"number": t.number},
                "reward": t.user_attrs.get("reward", {}),
            }
        )
        now = int(time.time() * 1000)
        metrics = [
            Metric(k, float(v), now, 0) for k, v in t.user_attrs.get("metrics", {}).items() if v is not None
        ]
        metrics += [
            Metric("accuracy_round", float(v), now, r)
            for r, v in enumerate(t.user_attrs.get("accuracy_round", []))
        ]
        metrics += [
            Metric("train_curve", float(v), now, k + 1)
            for k, v in enumerate(t.user_attrs.get("train_curve", []))
        ]
        metrics += [
            Metric(f"objective.{o}", float(v), now, 0)
            for o, v in zip(self.objectives, t.values or [], strict=False)
        ]
        extra = [
            RunTag(f"debate_sweep.{k}", str(t.user_attrs[k])[:5000])
            for k in ("method", "error", "retry_of")
            if k in t.user_attrs
        ]
        self._batch(run.info.run_id, metrics, [Param(k, v) for k, v in params.items()], extra)
        self.client.set_terminated(run.info.run_id, "FAILED" if t.state == TrialState.FAIL else "FINISHED")
        self.logged.add(t.number)

    def sync(self, study: optuna.Study, mine: set[int]) -> int:
        """Log the finished trials without a child run that this driver or a dead one ran (a crash
        between `tell` and logging); live drivers log their own. Returns how many it logged."""
        n = 0
        for t in study.get_trials(deepcopy=False):
            driver = t.user_attrs.get("driver")
            ours = t.number in mine or (isinstance(driver, dict) and driver_alive(driver) is False)
            if ours and t.number not in self.logged and t.state.is_finished():
                self.log_trial(t)
                n += 1
        return n

    def finish(self, study: optuna.Study, plots: list[Path], status: str = "FINISHED") -> dict[str, Any]:
        """Best params or Pareto set, counts and plots on the parent; returns the summary."""
        summary = study_summary(study, self.objectives)
        now = int(time.time() * 1000)
        metrics = [Metric(f"trials_{k.lower()}", float(v), now, 0) for k, v in summary["trials"].items()]
        best = summary.get("best") or []
        if best:
            metrics += [Metric(f"best.{o}", float(v), now, 0) for o, v in best[0]["values"].items()]
        self._batch(self.parent_id, metrics, [], [])
        self.client.log_dict(self.parent_id, summary, "pareto.json" if "pareto" in summary else "best.json")
        for path in plots:
            self.client.log_artifact(self.parent_id, str(path), "plots")
        self.client.set_terminated(self.parent_id, status)
        return summary


class NullStudyTracker:
    """Tracking off: the calls of `StudyTracker`, logging nothing."""

    uri: str | None = None
    parent_id: str | None = None

    def log_trial(self, t: FrozenTrial) -> None:
        return None

    def sync(self, study: optuna.Study, mine: set[int]) -> int:
        return 0

    def finish(self, study: optuna.Study, plots: list[Path], status: str = "FINISHED") -> dict[str, Any]:
        return {}
