"""The `sweep run` command that evaluates a trained policy, printed by `sweep train` as it ends: the
training's base sweep file as written (its own datasets and splits, not the training's `overrides`),
with the checkpoint set on the method by name — or by index where several entries share the name."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import yaml

from debate.methods import build_method
from sweep.config.sweep import ConfigError, read_yaml
from sweep.train.config import TrainSetup

_NOT_COMPARED = ("checkpoint", "init_seed")  # the evaluation sets the first; training fixes neither


def base_file(setup: TrainSetup) -> Path:
    """The base sweep's file, found as `sweep.train.config` finds it."""
    named = Path(setup.cfg.sweep)
    path = named if named.is_absolute() else setup.source.parent / named
    return path if path.is_file() else named


def shown(path: Path, cwd: Path) -> str:
    """`path` relative to `cwd` when it lies under it (as a user types it), else absolute."""
    full = path.resolve()
    return str(full.relative_to(cwd)) if full.is_relative_to(cwd) else str(full)


def yaml_value(value: Any) -> str:
    """`value` as `--set` reads it back: plain where YAML reads the plain text as the same value."""
    text = str(value)
    try:
        same = yaml.safe_load(text) == value and type(yaml.safe_load(text)) is type(value)
    except yaml.YAMLError:
        same = False
    return text if same else json.dumps(value)


def _resolved(name: str, args: dict[str, Any]) -> dict[str, Any] | None:
    """Every argument of method `name` as it runs (defaults filled in), or None if it does not build."""
    try:
        spec = build_method(name, {k: v for k, v in args.items() if k not in _NOT_COMPARED}).spec
    except (ValueError, TypeError):
        return None
    return {k: v for k, v in spec.args if k not in _NOT_COMPARED}


def eval_command(setup: TrainSetup, policy: Path, cwd: Path | None = None) -> str:
    """The exact `sweep run` line that evaluates `policy` on the base sweep's file: the method's entry
    there gets the checkpoint and any router argument the training used that the entry does not."""
    here = (cwd or Path.cwd()).resolve()
    path, name = base_file(setup), setup.cfg.method.name
    trained = _resolved(name, dict(setup.cfg.method.args)) or {}
    try:
        methods = read_yaml(path, "the base sweep YAML", "methods").get("methods")
    except ConfigError:
        methods = None
    entries = [(i, m if isinstance(m, dict) else {"name": m}) for i, m in enumerate(methods or [])]
    ours = [(i, e) for i, e in entries if e.get("name") == name and isinstance(e.get("args", {}), dict)]
    argv = ["sweep", "run", shown(path, here)]
    if not ours:  # the sweep does not run this method: run the trained entry alone
        entry = {"name": name, "args": {**setup.cfg.method.args, "checkpoint": shown(policy, here)}}
        return shlex.join([*argv, "--set", f"methods=[{json.dumps(entry)}]"])

    def differing(entry: dict[str, Any]) -> dict[str, Any]:
        runs = _resolved(name, entry.get("args") or {})
        return dict(trained) if runs is None else {k: v for k, v in trained.items() if runs.get(k) != v}

    # the entry that runs as trained (fewest arguments to set); among equals the last, as a config
    # lists the untrained controller after its ablations
    i, entry = min(reversed(ours), key=lambda ie: len(differing(ie[1])))
    where = f"methods.{name}" if len(ours) == 1 else f"methods.{i}"
    sets = [f"{where}.args.{k}={yaml_value(v)}" for k, v in sorted(differing(entry).items())]
    sets.append(f"{where}.args.checkpoint={yaml_value(shown(policy, here))}")
    return shlex.join([*argv, *(a for s in sets for a in ("--set", s))])
