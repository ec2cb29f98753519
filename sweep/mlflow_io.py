"""MLflow's limits, kept: params flattened to its keys and lengths, and batches cut to its per-call
limits. Shared by sweeps, studies and trainings."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag
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
