"""Sweep driver: CLI, config, Ray scheduling, Parquet results and MLflow tracking."""

from sweep.tracking import checkpoints as _checkpoints  # noqa: F401 - registers runs:/ checkpoint URIs
