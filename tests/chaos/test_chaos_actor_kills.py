"""Engine actors SIGKILLed mid-sweep (on the session's Ray): the episodes they were serving fail and
are recorded as failed, Ray restarts the actors, and a rerun stores every episode exactly once."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

import sweep.engines.actors
import sweep.run.runner
from sweep.config.sweep import load_config
from sweep.run.plan import build_plan
from tests.chaos.conftest import sweep_config
from tests.chaos.harness import assert_exactly_once
from tests.conftest import RayHead

pytestmark = [pytest.mark.chaos, pytest.mark.ray]

KILL_AFTER = (4, 12, 24)  # episodes recorded when each kill happens


def test_engine_actor_kills_lose_and_duplicate_nothing(
    tmp_path: Path, ray_driver: RayHead, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray

    path = sweep_config(tmp_path, limit=20, latency=0.15)
    raw = load_config(path)
    models = {"sim": raw.models["sim"].model_copy(update={"replicas": 2})}
    ray_opts = raw.ray.model_copy(update={"in_process": False})  # the simulated engine in Ray actors too
    cfg = raw.model_copy(update={"models": models, "ray": ray_opts})
    started: list[Any] = []
    kills: list[int] = []
    recorded = [0]

    def start_engines(specs: Any, **kwargs: Any) -> Any:
        backends = real_start(specs, **kwargs)
        started.append(backends["sim"])
        return backends

    def recorder(*args: Any, **kwargs: Any) -> Any:
        record = real_recorder(*args, **kwargs)

        def on_episode(*episode: Any) -> None:
            record(*episode)
            recorded[0] += 1
            if len(started) == 1 and len(kills) < len(KILL_AFTER) and recorded[0] == KILL_AFTER[len(kills)]:
                actor = started[0].actors[len(kills) % 2]  # alternate: each replica stays within its restarts
                pid = ray.get(actor.ready.remote(), timeout=300)["pid"]
                os.kill(pid, signal.SIGKILL)
                kills.append(pid)

        return on_episode

    real_start, real_recorder = sweep.engines.actors.start_engines, sweep.run.runner.Recorder
    monkeypatch.setattr(sweep.engines.actors, "start_engines", start_engines)
    monkeypatch.setattr(sweep.run.runner, "Recorder", recorder)
    plan = build_plan(cfg)
    outcomes = [sweep.run.runner.run_sweep(cfg, plan)]
    assert len(kills) == len(KILL_AFTER) and len(set(kills)) == len(kills)  # 3 kills of live actor processes
    while outcomes[-1].stats is not None and outcomes[-1].stats.failures and len(outcomes) < 4:
        outcomes.append(sweep.run.runner.run_sweep(cfg, plan))
    last = outcomes[-1]
    assert last.stats is None or not last.stats.failures, last.stats.failures[:3]
    failed_first = outcomes[0].stats.failures if outcomes[0].stats else []
    assert all("Actor" in f or "actor" in f for f in failed_first), failed_first[:3]  # failed for the kills
    assert_exactly_once(Path(cfg.output_dir), {t.episode_id for t in plan.tasks})
    print(
        f"chaos: {len(kills)} actor kills, {len(failed_first)} episodes failed with them, {len(outcomes)} runs"
    )
