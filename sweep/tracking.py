"""MLflow tracking for the sweep driver: one parent run per sweep, one child run per group
(method spec x dataset x seed), each group's params and metrics logged in batches."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import polars as pl
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, Run, RunTag, ViewType
from mlflow.exceptions import MlflowException
from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH, MAX_PARAMS_TAGS_PER_BATCH

from sweep.results import ResultStore

TAG_SWEEP_ID = "debate_sweep.sweep_id"
TAG_ROLE = "debate_sweep.role"  # "sweep" (parent) | "group" (child): keeps parent look-ups off children
TAG_GROUP = "debate_sweep.group"
TAG_N_EPISODES = "debate_sweep.n_episodes"
TAG_PARENT = "mlflow.parentRunId"
TAG_RUN_NAME = "mlflow.runName"


def default_tracking_uri(out_dir: Path) -> str:
    """MLFLOW_TRACKING_URI if set, else a sqlite file in `out_dir` (absolute, so the CWD never matters)."""
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return env
    return f"sqlite:///{Path(out_dir).resolve() / 'mlflow.db'}"


def flatten_params(d: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested mappings as "a.b.c" keys with string values; lists/tuples as JSON; values cut to
    MLflow's param length limit."""
    out: dict[str, str] = {}
    for key, value in d.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            out.update(flatten_params(value, name))
            continue
        text = json.dumps(list(value), default=str) if isinstance(value, list | tuple) else str(value)
        out[name] = text[:MAX_PARAM_VAL_LENGTH]
    return out


def group_metrics(episodes: pl.DataFrame) -> tuple[dict[str, float], list[float]]:
    """Scalar metrics of a group's episode rows, and the accuracy after each round (index = round)."""
    n = episodes.height
    calls = int(episodes["calls"].sum())
    prompt = int(episodes["prompt_tokens"].sum())
    completion = int(episodes["completion_tokens"].sum())
    failures = int(episodes["parse_failures"].sum())
    scalars = {
        "accuracy": int(episodes["correct"].sum()) / n,
        "n_episodes": float(n),
        "calls_per_task": calls / n,
        "prompt_tokens_per_task": prompt / n,
        "completion_tokens_per_task": completion / n,
        "tokens_per_task": (prompt + completion) / n,
        "cached_tokens_per_task": float(episodes["cached_tokens"].sum()) / n,
        "cost_per_task": float(episodes["cost"].sum()) / n,
        "latency_s_per_task": float(episodes["latency_s"].sum()) / n,
        "parse_failures_per_task": failures / n,
        "parse_failure_rate": failures / calls if calls else 0.0,
        "cache_hits": float(episodes["cache_hits"].sum()),
        "cache_hit_rate": float(episodes["cache_hits"].sum()) / calls if calls else 0.0,
    }
    # Episodes may stop after different numbers of rounds: each round's accuracy is over the
    # episodes that reached it.
    hits: list[int] = []
    seen: list[int] = []
    for flags in episodes["round_correct"].to_list():
        for r, ok in enumerate(flags or []):
            if r == len(hits):
                hits.append(0)
                seen.append(0)
            hits[r] += bool(ok)
            seen[r] += 1
    return scalars, [h / s for h, s in zip(hits, seen, strict=True)]


# Diagnostics logged per group (means over episodes, nulls skipped) and per round (as steps).
DIAGNOSTIC_SCALARS = (
    "w2r", "r2w", "net", "cross_ans", "src_conf", "acceptance", "influence_entropy", "answer_entropy",
    "agreement",
)  # fmt: skip
DIAGNOSTIC_COUNTS = ("w2r_count", "r2w_count", "changed", "critiques", "verdicts", "accepted")
ROUND_SERIES = (*DIAGNOSTIC_SCALARS, "correct", "changed", "calls", "tokens")


def _mean(frame: pl.DataFrame, col: str) -> float | None:
    if col not in frame.columns or frame[col].null_count() == frame.height:
        return None
    value = frame[col].drop_nans().mean() if frame[col].dtype.is_float() else frame[col].mean()
    return None if value is None else float(value)  # type: ignore[arg-type]


def diagnostic_metrics(episodes: pl.DataFrame, rounds: pl.DataFrame | None) -> list[tuple[str, float, int]]:
    """(name, value, step) of a group's diagnostics: the episodes' summary columns averaged over
    episodes (`<count>_per_task` for counts), and each round's mean as `<name>_round` at step = round.
    A quantity no episode defines is not logged."""
    out = [(c, v, 0) for c in DIAGNOSTIC_SCALARS if (v := _mean(episodes, c)) is not None]
    out += [(f"{c}_per_task", v, 0) for c in DIAGNOSTIC_COUNTS if (v := _mean(episodes, c)) is not None]
    if rounds is None or rounds.height == 0:
        return out
    for r, frame in sorted(rounds.partition_by("round", as_dict=True).items()):
        step = int(r[0])
        out += [(f"{c}_round", v, step) for c in ROUND_SERIES if (v := _mean(frame, c)) is not None]
    return out


def _runs(client: MlflowClient, experiment_id: str, filter_string: str) -> Iterator[Run]:
    token = None
    while True:
        page = client.search_runs(
            [experiment_id], filter_string, run_view_type=ViewType.ACTIVE_ONLY, page_token=token
        )
        yield from page
        token = page.token
        if not token:
            return


class Tracker:
    """Logs a sweep to MLflow through `MlflowClient` (no global active run). Driver only: one driver
    per sweep, since children found at `start_sweep` are cached."""

    def __init__(self, tracking_uri: str, experiment: str, out_dir: Path) -> None:
        os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
        self.client = MlflowClient(tracking_uri=tracking_uri)
        self.out_dir = Path(out_dir).resolve()
        self.experiment_id = self._experiment(experiment)
        self.parent_id: str | None = None
        self.sweep_id: str | None = None
        self._children: dict[str, Run] = {}
        self._rounds: pl.DataFrame | None = None  # the store's rounds/, read once when needed

    def _experiment(self, name: str) -> str:
        exp = self.client.get_experiment_by_name(name)
        if exp is None:
            # Without an explicit artifact_location, sqlite-backed artifacts land in ./mlruns of the CWD.
            location = (self.out_dir / "mlartifacts").as_uri()
            try:
                return self.client.create_experiment(name, artifact_location=location)
            except MlflowException:
                exp = self.client.get_experiment_by_name(name)  # another driver created it meanwhile
                if exp is None:
                    raise
        if exp.lifecycle_stage == "deleted":
            self.client.restore_experiment(exp.experiment_id)
        return exp.experiment_id

    def _batch(self, run_id: str, metrics: list[Metric], params: list[Param], tags: list[RunTag]) -> None:
        """One log_batch, split only where MLflow's per-batch limit on params + tags demands it."""
        pairs: list[Param | RunTag] = [*params, *tags]
        chunk = MAX_PARAMS_TAGS_PER_BATCH
        for start in range(0, max(len(pairs), 1), chunk):
            part = pairs[start : start + chunk]
            self.client.log_batch(
                run_id,
                metrics=metrics if start == 0 else [],
                params=[p for p in part if isinstance(p, Param)],
                tags=[t for t in part if isinstance(t, RunTag)],
            )

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
        parent = self._parent()
        child = self._children.get(group_key)
        if episodes.height == 0:
            return None
        if child is not None and child.data.tags.get(TAG_N_EPISODES) == str(episodes.height):
            return None
        if child is None:
            tags = {TAG_PARENT: parent, TAG_GROUP: group_key, TAG_ROLE: "group"}
            child = self.client.create_run(self.experiment_id, tags=tags, run_name=run_name)
        else:
            self.client.update_run(child.info.run_id, status="RUNNING")
        run_id = child.info.run_id
        # Artifacts before the n_episodes tag: a crash in between leaves the tag stale, so a rerun redoes it.
        if rounds is None:
            rounds = self._store_rounds().filter(pl.col("episode_id").is_in(episodes["episode_id"].to_list()))
        with tempfile.TemporaryDirectory(prefix="debate-sweep-") as tmp:
            episodes.write_parquet(Path(tmp) / "episodes.parquet")
            turns.write_parquet(Path(tmp) / "turns.parquet")
            rounds.write_parquet(Path(tmp) / "rounds.parquet")
            self.client.log_artifacts(run_id, tmp, "results")
        scalars, per_round = group_metrics(episodes)
        now = int(time.time() * 1000)
        metrics = [Metric(k, v, now, 0) for k, v in scalars.items()]
        metrics += [Metric("accuracy_round", v, now, r) for r, v in enumerate(per_round)]
        metrics += [Metric(k, v, now, step) for k, v, step in diagnostic_metrics(episodes, rounds)]
        # Params are immutable in MLflow: only keys this run lacks (all of them on creation).
        new_params = [Param(k, v) for k, v in params.items() if k not in child.data.params]
        self._batch(run_id, metrics, new_params, [RunTag(TAG_N_EPISODES, str(episodes.height))])
        self.client.set_terminated(run_id, "FINISHED")
        self._children[group_key] = self.client.get_run(run_id)
        return run_id

    def _store_rounds(self) -> pl.DataFrame:
        if self._rounds is None:
            self._rounds = ResultStore(self.out_dir).rounds()
        return self._rounds

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


def read_runs(tracking_uri: str, experiment: str) -> list[dict[str, Any]]:
    """Every active run of `experiment` as a plain dict, parents before children (oldest first)."""
    client = MlflowClient(tracking_uri=tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return []
    rows = [
        {
            "run_id": r.info.run_id,
            "run_name": r.info.run_name,
            "status": r.info.status,
            "parent_run_id": r.data.tags.get(TAG_PARENT),
            "params": dict(r.data.params),
            "metrics": dict(r.data.metrics),
            "tags": dict(r.data.tags),
            "start_time": r.info.start_time,
        }
        for r in _runs(client, exp.experiment_id, "")
    ]
    rows.sort(key=lambda r: (r["parent_run_id"] is not None, r["start_time"]))
    return rows
