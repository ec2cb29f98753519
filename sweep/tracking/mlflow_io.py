"""MLflow's limits, kept: params flattened to its keys and lengths, and batches cut to its per-call
limits; and runs read back, page by page. Shared by sweeps, studies and trainings."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from typing import Any

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, Run, RunTag, ViewType
from mlflow.utils.validation import (
    MAX_ENTITIES_PER_BATCH,
    MAX_METRICS_PER_BATCH,
    MAX_PARAM_VAL_LENGTH,
    MAX_PARAMS_TAGS_PER_BATCH,
)

# MLflow announces creating and upgrading a sqlite store at INFO, on the user's terminal in the middle
# of a run's output; the store's warnings and errors still show.
logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)


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


def log_batch(
    client: MlflowClient, run_id: str, metrics: list[Metric], params: list[Param], tags: list[RunTag]
) -> None:
    """Log in as few `log_batch` calls as MLflow's per-batch limits allow (params + tags, metrics,
    entities in all)."""
    pairs: list[Param | RunTag] = [*params, *tags]
    metrics = list(metrics)
    while True:
        part, pairs = pairs[:MAX_PARAMS_TAGS_PER_BATCH], pairs[MAX_PARAMS_TAGS_PER_BATCH:]
        room = min(MAX_METRICS_PER_BATCH, MAX_ENTITIES_PER_BATCH - len(part))
        batch, metrics = metrics[:room], metrics[room:]
        client.log_batch(
            run_id,
            metrics=batch,
            params=[p for p in part if isinstance(p, Param)],
            tags=[t for t in part if isinstance(t, RunTag)],
        )
        if not pairs and not metrics:
            return


TAG_PARENT = "mlflow.parentRunId"


def runs(client: MlflowClient, experiment_id: str, filter_string: str) -> Iterator[Run]:
    """Every active run of an experiment that `filter_string` selects, page by page."""
    token = None
    while True:
        page = client.search_runs(
            [experiment_id], filter_string, run_view_type=ViewType.ACTIVE_ONLY, page_token=token
        )
        yield from page
        token = page.token
        if not token:
            return


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
        for r in runs(client, exp.experiment_id, "")
    ]
    rows.sort(key=lambda r: (r["parent_run_id"] is not None, r["start_time"]))
    return rows
