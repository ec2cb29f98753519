"""Sweep driver: CLI, config, Ray scheduling, Parquet results and MLflow tracking."""
