"""Sweep driver: CLI, config, Ray scheduling, Parquet results and MLflow tracking."""

from sweep import checkpoints as _checkpoints  # noqa: F401 - registers runs:/ checkpoint URIs
