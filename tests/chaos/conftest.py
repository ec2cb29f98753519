"""Fixtures of the chaos tests: drivers to kill, and small sweep configs for them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sweep.config.sweep import load_config
from sweep.run.plan import build_plan
from tests.chaos.harness import Drivers


@pytest.fixture(scope="session")
def drivers() -> Iterator[Drivers]:
    yield Drivers()


def sweep_config(tmp: Path, limit: int = 20, latency: float = 0.02, **extra: Any) -> Path:
    """A simulated sweep: 3 agents, cot and a ring debate, `limit` arith items, two seeds."""
    cfg = {
        "name": "chaos",
        "output_dir": str(tmp / "out"),
        "models": {"sim": {"engine": "simulated", "args": {"latency_s": latency, "malformed_rate": 0.1}}},
        "agents": [{"model": "sim", "count": 3}],
        "datasets": [{"name": "arith", "limit": limit}],
        "methods": ["cot", {"name": "fixed", "args": {"topology": "ring"}}],
        "rounds": 1,
        "seeds": [0, 1],
        "concurrency": 4,
        "tracking": {"enabled": False},
        **extra,
    }
    path = tmp / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def planned(path: Path) -> set[str]:
    return {t.episode_id for t in build_plan(load_config(path)).tasks}
