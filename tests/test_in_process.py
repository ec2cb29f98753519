"""Where engines run and when they start: in-process and Ray-actor sweeps store identical results;
engines start on the first call the cache cannot answer (a finished or fully cached sweep starts
none); an engine that cannot start stops the run once, with its reason; the scheduler keeps at most
`concurrency` episodes in flight and pulls tasks lazily."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from actors import registry
from sweep.config.sweep import load_config
from sweep.engines.pool import EngineStartError
from sweep.run.plan import build_plan
from sweep.store.results import ResultStore
from tests.conftest import RayHead

TIMING = ("latency_s", "finished_at")  # the only columns allowed to differ between two runs


def config(tmp_path: Path, name: str, **extra: Any) -> Any:
    return load_config(config_file(tmp_path, name, **extra))


def config_file(tmp_path: Path, name: str, **extra: Any) -> Path:
    """`tmp_path/NAME.yaml`: a small simulated sweep into `tmp_path/NAME`; `extra` replaces top-level keys."""
    cfg = {
        "name": "t",
        "output_dir": str(tmp_path / name),
        "models": {
            "strong": {"engine": "simulated", "args": {"skill": 0.8, "malformed_rate": 0.1}},
            "weak": {"engine": "simulated", "args": {"skill": 0.4}},
        },
        "agents": ["strong", {"model": "weak", "count": 2}],
        "datasets": [{"name": "arith", "limit": 5}],
        "methods": ["cot", {"name": "fixed", "args": {"topology": "clique"}}, "pear"],
        "rounds": 2,
        "seeds": [0, 1],
        "tracking": {"enabled": False},
        "concurrency": 4,
        **extra,
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def tables(out: Path) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    store = ResultStore(out)
    ep = store.episodes().drop(*TIMING, "sweep_id").sort("episode_id")
    tu = store.turns().drop("latency_s").sort("episode_id", "round", "phase", "agent")
    ro = store.rounds().sort("episode_id", "round")
    return ep, tu, ro


@pytest.mark.ray
def test_in_process_and_ray_actors_store_identical_results(tmp_path: Path, ray_driver: RayHead) -> None:
    from sweep.run.runner import run_sweep

    local = run_sweep(config(tmp_path, "local"))
    remote = run_sweep(config(tmp_path, "remote", ray={"in_process": False}))
    assert local.stats is not None and remote.stats is not None
    assert local.stats.done == remote.stats.done == 30 and not local.stats.failures
    for a, b in zip(tables(local.out_dir), tables(remote.out_dir), strict=True):
        assert a.height > 0 and a.equals(b)


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every engine built, by model name."""
    built: list[str] = []
    real = registry.build_backend

    def counting(engine: str, model: str, args: dict[str, Any] | None = None) -> Any:
        built.append(model)
        return real(engine, model, args)

    monkeypatch.setattr(registry, "build_backend", counting)
    return built


def test_engines_start_only_for_calls_the_cache_cannot_answer(tmp_path: Path, starts: list[str]) -> None:
    from sweep.run.runner import run_sweep

    cfg = config(tmp_path, "out")
    first = run_sweep(cfg)
    assert sorted(starts) == ["strong", "weak"] and first.stats is not None
    before = tables(first.out_dir)

    starts.clear()
    assert run_sweep(cfg).stats is None and starts == []  # finished: nothing to run, nothing started

    for table in ("episodes", "turns", "rounds"):
        shutil.rmtree(first.out_dir / table)
    again = run_sweep(cfg)  # every call is in the cache
    assert again.stats is not None and again.stats.done == 30 and starts == []
    assert again.stats.cache_hits == again.stats.calls
    after = tables(first.out_dir)
    assert before[0].drop("cache_hits").equals(after[0].drop("cache_hits"))


def test_an_engine_that_cannot_start_stops_the_run_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sweep.run.runner import run_sweep

    tries: list[str] = []

    def broken(engine: str, model: str, args: dict[str, Any] | None = None) -> Any:
        tries.append(model)
        raise OSError("no such model file")

    monkeypatch.setattr(registry, "build_backend", broken)
    with pytest.raises(EngineStartError, match="no such model file"):
        run_sweep(config(tmp_path, "out"))
    assert len(tries) <= 2  # once per model at most, not once per episode
    assert ResultStore(tmp_path / "out").done_ids() == set()


def test_the_scheduler_keeps_at_most_concurrency_episodes_in_flight(tmp_path: Path) -> None:
    from sweep.engines.pool import EnginePool
    from sweep.run.scheduler import run_tasks

    cfg = config(
        tmp_path, "out", models={"sim": {"engine": "simulated", "args": {"latency_s": 0.001}}}, agents=["sim"]
    )
    plan = build_plan(cfg)
    taken, finished, worst = [0], [0], [0]

    def lazily() -> Any:
        for t in plan.tasks:
            taken[0] += 1
            worst[0] = max(worst[0], taken[0] - finished[0])
            yield t

    def done(*_: Any) -> None:
        finished[0] += 1

    with EnginePool(cfg, ["sim"]) as pool:
        stats = asyncio.run(run_tasks(lazily(), pool.agents, done, 3, total=len(plan.tasks)))
    assert stats.done == stats.total == len(plan.tasks) == 30
    assert worst[0] == 3  # never a task taken before a worker was free for it


def test_the_scheduler_skips_what_another_driver_claimed(tmp_path: Path) -> None:
    from sweep.engines.pool import EnginePool
    from sweep.run.scheduler import run_tasks

    cfg = config(tmp_path, "out", models={"sim": {"engine": "simulated"}}, agents=["sim"])
    tasks = list(build_plan(cfg).tasks)
    asked: list[str] = []
    ran: list[str] = []

    def claim(task: Any) -> bool:
        asked.append(task.episode_id)
        return len(asked) % 3 != 0  # every third one is another driver's

    with EnginePool(cfg, ["sim"]) as pool:
        stats = asyncio.run(
            run_tasks(iter(tasks), pool.agents, lambda t, *_: ran.append(t.episode_id), 2, claim=claim)
        )
    assert sorted(asked) == sorted(t.episode_id for t in tasks)  # each asked once, as its turn came
    assert stats.skipped == 10 and stats.done == 20 and set(ran) == set(asked) - set(asked[2::3])


def test_a_joined_worker_runs_only_what_no_live_driver_holds(tmp_path: Path) -> None:
    import json
    import socket
    import subprocess
    import sys

    from sweep.run.runner import run_sweep
    from sweep.store.ownership import DirLock, start_ticks

    cfg = config(tmp_path, "out")
    ids = [t.episode_id for t in build_plan(cfg).tasks]
    owner = DirLock.for_output(tmp_path / "out", cfg.identity())
    owner.acquire()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        held = {"host": socket.gethostname(), "pid": sleeper.pid, "started": start_ticks(sleeper.pid)}
        (tmp_path / "out" / "claims").mkdir(parents=True)
        for eid in ids[:4]:
            (tmp_path / "out" / "claims" / eid).write_text(json.dumps(held))
        outcome = run_sweep(cfg, join=True)
    finally:
        sleeper.kill()
        sleeper.wait()
        owner.release()
    assert outcome.stats is not None and outcome.stats.done == len(ids) - 4
    assert ResultStore(tmp_path / "out").done_ids() == set(ids[4:])  # the held ones were left alone
