"""Declarative Optuna search spaces (YAML)."""
