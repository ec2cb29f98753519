"""Whether a command logs to MLflow, and where: decided once per command, from its `--no-tracking`
and `--tracking-uri` flags and its config's `tracking:` section, and then handed down to whatever
logs or checks the store. `tracker_for` turns the choice into a tracker, the real one or its null
twin (same methods, logging nothing), so no code below the command asks "is tracking on?" again."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
N = TypeVar("N")

DEFAULT_EXPERIMENT = "debate-sweep"


def default_tracking_uri(out_dir: Path, *given: str | None) -> str:
    """The first URI `given` (a command's `--tracking-uri`, then the config's `tracking.uri`), else
    MLFLOW_TRACKING_URI, else a sqlite file in `out_dir` (absolute, so the CWD never matters)."""
    chosen = next((uri for uri in given if uri), None) or os.environ.get("MLFLOW_TRACKING_URI")
    return chosen or f"sqlite:///{Path(out_dir).resolve() / 'mlflow.db'}"


@dataclass(frozen=True)
class TrackingChoice:
    """A command's tracking: the store's URI (None: tracking is off) and the MLflow experiment."""

    uri: str | None
    experiment: str = DEFAULT_EXPERIMENT

    @property
    def on(self) -> bool:
        return self.uri is not None


OFF = TrackingChoice(None)


def choose_tracking(
    out_dir: Path,
    enabled: bool = True,
    configured: str | None = None,
    experiment: str = DEFAULT_EXPERIMENT,
    *,
    no_tracking: bool = False,
    flag_uri: str | None = None,
) -> TrackingChoice:
    """The choice of a command writing to `out_dir`: off when `--no-tracking` is given or the config
    says `enabled: false`; else the store `default_tracking_uri` names (flag, config, environment,
    `out_dir/mlflow.db`) and the config's experiment."""
    if no_tracking or not enabled:
        return TrackingChoice(None, experiment)
    return TrackingChoice(default_tracking_uri(out_dir, flag_uri, configured), experiment)


def tracker_for(choice: TrackingChoice, real: Callable[[str], T], null: Callable[[], N]) -> T | N:
    """`real(uri)` when the choice logs, else `null()`: the command's one tracker."""
    return real(choice.uri) if choice.uri is not None else null()
