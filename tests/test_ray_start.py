"""Ray start-up: retried after a failure (the failed attempt's processes stopped and its temp dir
removed), a clear error once the attempts or the time budget are spent; and, with both cores loaded
by busy processes, `sweep run` still starts — in-process (the default for simulated models) and with
Ray actors (slow: a real local Ray starts under load)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from sweep.engines import ray_runtime
from tests.conftest import ROOT, sweep_cmd


class FakeRay:
    """`ray.init` failing the first `fails` times (as Ray does when its node misses the start-up window)."""

    def __init__(self, fails: int) -> None:
        self.fails = fails
        self.inits: list[dict[str, Any]] = []
        self.shutdowns = 0

    def is_initialized(self) -> bool:
        return False

    def init(self, **kwargs: Any) -> None:
        self.inits.append(kwargs)
        if len(self.inits) <= self.fails:
            Path(kwargs["_temp_dir"], "session_x").mkdir()  # what a half-started node leaves
            raise Exception("The current node timed out during startup. This could happen because ...")

    def shutdown(self) -> None:
        self.shutdowns += 1


@pytest.fixture
def fake_ray(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    def install(fails: int) -> FakeRay:
        fake = FakeRay(fails)
        monkeypatch.setitem(sys.modules, "ray", fake)
        monkeypatch.setattr(ray_runtime, "TEMP_ROOT", tmp_path / "ray")
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
        return fake

    return install


def test_a_failed_start_is_cleaned_up_and_retried(fake_ray: Any, tmp_path: Path) -> None:
    fake = fake_ray(fails=2)
    slept: list[float] = []
    info = ray_runtime.init_ray(None, 2, timeout_s=100, attempts=3, sleep=slept.append)
    assert info["mode"] == "local" and info["attempts"] == 3 and len(fake.inits) == 3
    dirs = [k["_temp_dir"] for k in fake.inits]
    assert len(set(dirs)) == 3 and all(k["address"] == "local" and k["num_cpus"] == 2 for k in fake.inits)
    assert all(k["_system_config"]["worker_niceness"] == 0 for k in fake.inits)  # engines not niced
    assert not Path(dirs[0]).exists() and not Path(dirs[1]).exists()  # failed attempts removed
    assert Path(dirs[2]).is_dir() and fake.shutdowns == 2 and len(slept) == 2


def test_spent_attempts_give_one_clear_error(fake_ray: Any) -> None:
    fake_ray(fails=99)
    with pytest.raises(ray_runtime.RayStartError) as e:
        ray_runtime.init_ray(None, None, timeout_s=100, attempts=2, sleep=lambda s: None)
    msg = str(e.value)
    assert "after 2 attempt(s)" in msg and "timed out during startup" in msg
    assert "ray.start_timeout_s" in msg and "ray.in_process: true" in msg


def test_the_time_budget_stops_the_retries(fake_ray: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = fake_ray(fails=99)
    clock = iter(float(t) for t in range(0, 1000, 50))
    monkeypatch.setattr(ray_runtime.time, "monotonic", lambda: next(clock))
    with pytest.raises(ray_runtime.RayStartError):
        ray_runtime.init_ray(None, None, timeout_s=60, attempts=10, sleep=lambda s: None)
    assert len(fake.inits) < 10


# --- both cores busy while starting ---------------------------------------------------------------


def _config(tmp_path: Path, in_process: bool | None) -> Path:
    cfg = {
        "name": "loaded",
        "output_dir": str(tmp_path / "out"),
        "models": {"sim": {"engine": "simulated"}},
        "agents": [{"model": "sim", "count": 3}],
        "datasets": [{"name": "arith", "limit": 4}],
        "methods": ["cot", {"name": "fixed", "args": {"topology": "ring"}}],
        "rounds": 1,
        "ray": {"num_cpus": 1, **({} if in_process is None else {"in_process": in_process})},
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _run_under_load(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)
    ]
    try:
        time.sleep(0.5)
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # a private Ray, not the session's
        return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
    finally:
        for p in burners:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()


def test_a_simulated_sweep_starts_with_both_cores_busy(tmp_path: Path) -> None:
    proc = _run_under_load(sweep_cmd("run", str(_config(tmp_path, None)), "--no-tracking"), 300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "engine sim: in-process" in proc.stderr and "8 run now" in proc.stdout


@pytest.mark.slow
def test_ray_actors_start_with_both_cores_busy(tmp_path: Path) -> None:
    proc = _run_under_load(sweep_cmd("run", str(_config(tmp_path, False)), "--no-tracking"), 600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ray: local" in proc.stderr and "8 run now" in proc.stdout


@pytest.mark.ray
def test_engine_actors_run_at_the_drivers_priority(ray_driver: Any) -> None:
    """Ray's default worker niceness (15) starved the engine actors beside any busy process; the
    session's head is started as ray_cluster.yaml starts nodes (RAY_worker_niceness=0)."""
    import ray

    @ray.remote(num_cpus=0)
    def niceness() -> int:
        return os.nice(0)

    assert ray.get(niceness.remote()) == 0
