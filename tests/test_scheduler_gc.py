"""The scheduler collects garbage less often while episodes run, and puts the GC back as it was: after
the run, after a failing one, and only once the last of several concurrent runs is done."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.registry import build_backend
from sweep.engines.pool import build_agents
from sweep.run.plan import build_plan
from sweep.run.scheduler import EPISODE_GC_THRESHOLD, fewer_collections, run_tasks
from tests.results_helpers import sweep_config


@pytest.fixture
def untuned() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    yield before
    gc.set_threshold(*before)
    gc.unfreeze()


def test_inside_tuned_then_restored(untuned: tuple[int, int, int]) -> None:
    with fewer_collections():
        assert gc.get_threshold() == EPISODE_GC_THRESHOLD
        assert gc.get_freeze_count() > 0  # what existed on entry is out of the collector's view
    assert gc.get_threshold() == untuned and gc.get_freeze_count() == 0


def test_restored_after_an_error(untuned: tuple[int, int, int]) -> None:
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("an episode phase that fails")
    assert gc.get_threshold() == untuned and gc.get_freeze_count() == 0


def test_overlapping_runs_restore_once_the_last_ends(untuned: tuple[int, int, int]) -> None:
    first, second = fewer_collections(), fewer_collections()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first to start ends first: the second is still running
    assert gc.get_threshold() == EPISODE_GC_THRESHOLD
    second.__exit__(None, None, None)
    assert gc.get_threshold() == untuned and gc.get_freeze_count() == 0


def test_run_tasks_runs_its_episodes_tuned(untuned: tuple[int, int, int], tmp_path: Path) -> None:
    cfg = sweep_config("simulated", tmp_path / "out", "datasets.0.limit=2", "seeds=[0]")
    plan = build_plan(cfg)
    used = {m: cfg.models[m] for g in plan.groups for m in g.seats}
    agents = build_agents(used, {m: build_backend(s.engine, m, dict(s.args)) for m, s in used.items()}, None)
    seen: list[tuple[int, int, int]] = []
    stats = asyncio.run(run_tasks(plan.tasks, agents, lambda *a: seen.append(gc.get_threshold()), 4))
    assert stats.done == len(plan.tasks) > 0 and not stats.failures
    assert set(seen) == {EPISODE_GC_THRESHOLD}
    assert gc.get_threshold() == untuned and gc.get_freeze_count() == 0
