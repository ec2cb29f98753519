"""MLflow tracking for the sweep driver: one parent run per sweep, one child run per group
(method spec x dataset x seed), each group's params and metrics logged in batches."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import polars as pl
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, Run, RunTag
from mlflow.exceptions import MlflowException

from sweep.config.sweep import SweepConfig
from sweep.run.plan import Plan
from sweep.run.scheduler import RunStats
from sweep.store.results import ResultStore
from sweep.tracking.choice import TrackingChoice, tracker_for
from sweep.tracking.metrics import (
    TABLE_COLUMNS,
    as_reported,
    diagnostic_metrics,
    group_metrics,
    method_table,
    readable_tags,
    runs_view,
    table_markdown,
)
from sweep.tracking.mlflow_io import TAG_PARENT
from sweep.tracking.mlflow_io import flatten_params as flatten_params  # re-exported
from sweep.tracking.mlflow_io import log_batch as log_batch  # re-exported
from sweep.tracking.mlflow_io import read_runs as read_runs  # re-exported
from sweep.tracking.mlflow_io import runs as _runs
from sweep.tracking.ui import VIEW_TAG

TAG_SWEEP_ID = "debate_sweep.sweep_id"
TAG_ROLE = "debate_sweep.role"  # "sweep" (parent) | "group" (child): keeps parent look-ups off children
TAG_GROUP = "debate_sweep.group"
TAG_N_EPISODES = "debate_sweep.n_episodes"
TAG_RUN_NAME = "mlflow.runName"
KIND_TAG = "mlflow.experimentKind"  # runs, not traces: the experiment opens on its runs table


def population_params(plan: Plan, seats: Iterable[str]) -> dict[str, str]:
    """`population.<model>` (the population's name) and `population_digest.<model>` (its content
    digest, which the group's episode ids hash) for each of the seats' models on a population file."""
    params: dict[str, str] = {}
    for m in sorted(set(seats) & plan.populations.keys()):
        name, digest = plan.populations[m]
        params |= flatten_params({f"population.{m}": name, f"population_digest.{m}": digest})
    return params


class Tracker:
    """Logs a sweep to MLflow through `MlflowClient` (no global active run). Driver only: one driver
    per sweep, since children found at `start_sweep` are cached."""

    def __init__(self, tracking_uri: str, experiment: str, out_dir: Path) -> None:
        os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
        self.uri = tracking_uri
        self.client = MlflowClient(tracking_uri=tracking_uri)
        self.out_dir = Path(out_dir).resolve()
        self.experiment_id = self._experiment(experiment)
        self.parent_id: str | None = None
        self.sweep_id: str | None = None
        self._children: dict[str, Run] = {}

    def _experiment(self, name: str) -> str:
        exp = self.client.get_experiment_by_name(name)
        if exp is None:
            # Without an explicit artifact_location, sqlite-backed artifacts land in ./mlruns of the CWD.
            location = (self.out_dir / "mlartifacts").as_uri()
            try:
                tags = {KIND_TAG: "custom_model_development"}
                return self.client.create_experiment(name, artifact_location=location, tags=tags)
            except MlflowException:
                exp = self.client.get_experiment_by_name(name)  # another driver created it meanwhile
                if exp is None:
                    raise
        if exp.lifecycle_stage == "deleted":
            self.client.restore_experiment(exp.experiment_id)
        if KIND_TAG not in exp.tags:  # else MLflow 3 may open it on the (empty) GenAI traces page
            self.client.set_experiment_tag(exp.experiment_id, KIND_TAG, "custom_model_development")
        return exp.experiment_id

    def _batch(self, run_id: str, metrics: list[Metric], params: list[Param], tags: list[RunTag]) -> None:
        log_batch(self.client, run_id, metrics, params, tags)

    def start_sweep(
        self, sweep_id: str, name: str, params: Mapping[str, str], tags: Mapping[str, str] | None = None
    ) -> str:
        """The parent run id: the experiment's run for `sweep_id` if there is one, else a new run."""
        if "`" in sweep_id or "'" in sweep_id:
            raise ValueError(f"sweep_id may not contain quotes: {sweep_id!r}")
        found = list(
            _runs(
                self.client,
                self.experiment_id,
                f"tags.`{TAG_SWEEP_ID}` = '{sweep_id}' and tags.`{TAG_ROLE}` = 'sweep'",
            )
        )
        extra = [RunTag(k, str(v)) for k, v in (tags or {}).items()]
        if found:
            run = min(found, key=lambda r: r.info.start_time)  # should two exist, always pick the same
            self.client.update_run(run.info.run_id, status="RUNNING")
            self._batch(run.info.run_id, [], [], extra)
        else:
            base = {TAG_SWEEP_ID: sweep_id, TAG_ROLE: "sweep"}
            run = self.client.create_run(self.experiment_id, tags=base, run_name=name)
            self._batch(run.info.run_id, [], [Param(k, v) for k, v in params.items()], extra)
        self.parent_id, self.sweep_id = run.info.run_id, sweep_id
        self._children = {
            r.data.tags[TAG_GROUP]: r
            for r in _runs(self.client, self.experiment_id, f"tags.`{TAG_PARENT}` = '{self.parent_id}'")
            if TAG_GROUP in r.data.tags
        }
        return self.parent_id

    def log_sweep(self, cfg: SweepConfig, plan: Plan, store: ResultStore, stats: RunStats | None) -> str:
        """The whole sweep: the parent run, a child per group with stored episodes, and the parent's
        summary metrics; returns the parent run id. Streams: only groups with new episodes are
        logged, their rows split out of the store one part at a time."""
        from sweep.store.group_rows import split_by_group, stored_by_group

        params = flatten_params(cfg.model_dump(mode="json", exclude={"tracking"}))
        parent = self.start_sweep(cfg.identity(), cfg.name, params)
        # What `sweep mlflow` opens: the children flat, with metric columns (the UI's default is neither).
        self.client.set_experiment_tag(self.experiment_id, VIEW_TAG + parent, json.dumps(runs_view(parent)))
        stored = stored_by_group(plan, store)
        counts = dict(stored.group_by("_group").len().iter_rows())
        due = [gi for gi, g in enumerate(plan.groups) if counts.get(gi, 0) not in (0, self._logged(g.key))]
        with tempfile.TemporaryDirectory(prefix="debate-sweep-") as tmp:
            for gi, folder in split_by_group(store, stored, due, Path(tmp)).items():
                g = plan.groups[gi]
                gparams = flatten_params(
                    {"method": g.method_spec, "dataset": g.dataset.model_dump(), "seed": g.seed}
                )
                gparams |= population_params(plan, g.seats)
                episodes, rounds = (pl.read_parquet(folder / f"{t}.parquet") for t in ("episodes", "rounds"))
                self._log_folder(g.key, g.run_name, gparams, folder, episodes, rounds)
        done = store.episodes(["sweep_id", *TABLE_COLUMNS]).filter(pl.col("sweep_id") == cfg.identity())
        self._log_table(parent, done)
        # No accuracy here: pooled over every method it would sit in the runs table's accuracy column
        # beside the children's as if it were one more method; the parent's table has each method's.
        metrics = {
            "episodes_done": float(done.height),
            "cache_hits_this_run": float(stats.cache_hits if stats else 0),
        }
        self.finish_sweep("FAILED" if stats and stats.failures else "FINISHED", metrics)
        return parent

    def _log_table(self, parent: str, episodes: pl.DataFrame) -> None:
        """Method x dataset (accuracy mean ± std over seeds, tokens, cost) on the parent: as its
        description (the run page shows it first) and as a table artifact. Not as metrics: a key
        per method and dataset (`accuracy_mean/fixed_topology_ring/arith_test`) reads badly, and the
        children carry each method's plain `accuracy` with its method and dataset as tags."""
        if episodes.height == 0:
            return
        table = method_table(episodes)
        text = table_markdown(table)
        self._batch(parent, [], [], [RunTag("mlflow.note.content", text)])
        self.client.log_text(parent, text, "results_table.md")
        self.client.log_table(parent, data=table.to_pandas(), artifact_file="results_table.json")

    def _logged(self, group_key: str) -> int | None:
        """How many episodes the group's child run was last logged with (None: no child yet)."""
        child = self._children.get(group_key)
        n = child.data.tags.get(TAG_N_EPISODES) if child is not None else None
        return int(n) if n is not None and n.isdigit() else None

    def _parent(self) -> str:
        if self.parent_id is None:
            raise RuntimeError("start_sweep must be called first")
        return self.parent_id

    def log_group(
        self,
        group_key: str,
        run_name: str,
        params: Mapping[str, str],
        episodes: pl.DataFrame,
        turns: pl.DataFrame,
        rounds: pl.DataFrame | None = None,
    ) -> str | None:
        """Log a group's metrics and tables to its child run; None when there is nothing new. Without
        `rounds`, the group's rows are read from the `rounds/` table of the store at `out_dir`."""
        self._parent()
        if episodes.height == 0 or self._logged(group_key) == episodes.height:
            return None
        if rounds is None:
            rounds = (
                ResultStore(self.out_dir).rounds().filter(pl.col("episode_id").is_in(episodes["episode_id"]))
            )
        with tempfile.TemporaryDirectory(prefix="debate-sweep-") as tmp:
            episodes.write_parquet(Path(tmp) / "episodes.parquet")
            turns.write_parquet(Path(tmp) / "turns.parquet")
            rounds.write_parquet(Path(tmp) / "rounds.parquet")
            return self._log_folder(group_key, run_name, params, Path(tmp), episodes, rounds)

    def _log_folder(
        self,
        key: str,
        run_name: str,
        params: Mapping[str, str],
        folder: Path,
        episodes: pl.DataFrame,
        rounds: pl.DataFrame,
    ) -> str:
        """Log a group's child run: the Parquet files in `folder` as artifacts, metrics from its
        `episodes` and `rounds`, then the n_episodes tag."""
        parent = self._parent()
        child = self._children.get(key)
        if child is None:
            tags = {TAG_PARENT: parent, TAG_GROUP: key, TAG_ROLE: "group", **readable_tags(run_name, params)}
            child = self.client.create_run(self.experiment_id, tags=tags, run_name=run_name)
        else:
            self.client.update_run(child.info.run_id, status="RUNNING")
        run_id = child.info.run_id
        # Artifacts before the n_episodes tag: a crash in between leaves the tag stale, so a rerun redoes it.
        self.client.log_artifacts(run_id, str(folder), "results")
        scalars, per_round = group_metrics(episodes)
        points = [(k, v, 0) for k, v in scalars.items()]
        points += [("accuracy_round", v, r) for r, v in enumerate(per_round)]
        points += diagnostic_metrics(episodes, rounds)
        now = int(time.time() * 1000)
        # Rounded as `sweep report` prints them, so MLflow shows the report's numbers.
        metrics = [Metric(k, as_reported(k, v), now, step) for k, v, step in points]
        # Params are immutable in MLflow: only keys this run lacks (all of them on creation).
        new_params = [Param(k, v) for k, v in params.items() if k not in child.data.params]
        self._batch(run_id, metrics, new_params, [RunTag(TAG_N_EPISODES, str(episodes.height))])
        self.client.set_terminated(run_id, "FINISHED")
        self._children[key] = self.client.get_run(run_id)
        return run_id

    def finish_sweep(self, status: str = "FINISHED", metrics: Mapping[str, float] | None = None) -> None:
        """Log summary metrics and a small summary.json on the parent, then end it with `status`."""
        parent = self._parent()
        metrics = dict(metrics or {})
        now = int(time.time() * 1000)
        self._batch(parent, [Metric(k, float(v), now, 0) for k, v in metrics.items()], [], [])
        summary = {
            "sweep_id": self.sweep_id,
            "status": status,
            "metrics": metrics,
            "groups": {k: int(r.data.tags.get(TAG_N_EPISODES, 0)) for k, r in sorted(self._children.items())},
        }
        self.client.log_dict(parent, summary, "summary.json")
        self.client.set_terminated(parent, status)


class NullTracker:
    """Tracking off: every call of `Tracker`, logging nothing (`tests/test_null_trackers.py` holds the
    two to the same methods and arguments)."""

    uri: str | None = None

    def start_sweep(
        self, sweep_id: str, name: str, params: Mapping[str, str], tags: Mapping[str, str] | None = None
    ) -> str:
        return ""

    def log_sweep(self, cfg: SweepConfig, plan: Plan, store: ResultStore, stats: RunStats | None) -> None:
        return None

    def log_group(
        self,
        group_key: str,
        run_name: str,
        params: Mapping[str, str],
        episodes: pl.DataFrame,
        turns: pl.DataFrame,
        rounds: pl.DataFrame | None = None,
    ) -> str | None:
        return None

    def finish_sweep(self, status: str = "FINISHED", metrics: Mapping[str, float] | None = None) -> None:
        return None


def sweep_tracker(cfg: SweepConfig, tracking: TrackingChoice) -> Tracker | NullTracker:
    """The sweep's tracker for the command's choice: MLflow at its store, or the null twin."""
    out = Path(cfg.output_dir).resolve()
    return tracker_for(tracking, lambda uri: Tracker(uri, tracking.experiment, out), NullTracker)
