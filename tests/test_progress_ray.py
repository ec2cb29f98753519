"""With engines in Ray actors, `sweep run`'s terminal (stdout and stderr, piped) holds its own lines
only: Ray's log lines go to OUT/logs/ray.log, and each engine says when it is ready to answer."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, RayHead, sweep_cmd

pytestmark = pytest.mark.ray

# A line of Ray's logging ("2026-12-03 15:19:46,881\tINFO worker.py:2038 -- Started a local Ray
# instance.") or a worker's output forwarded to the driver ("(raylet) ...", "(EngineActor pid=12) ...").
RAY_LINE = re.compile(r"\b(DEBUG|INFO|WARNING|WARN|ERROR)\s+\S+\.py:\d+ -- |^\((raylet|pid=|\w+ pid=)", re.M)


def test_rays_log_lines_stay_off_the_terminal(tmp_path: Path, ray_head: RayHead) -> None:
    out = tmp_path / "out"
    cfg = {
        "name": "quiet",
        "output_dir": str(out),
        "models": {"sim": {"engine": "simulated"}},
        "agents": [{"model": "sim", "count": 2}],
        "datasets": [{"name": "arith", "split": "test", "limit": 2}],
        "methods": [{"name": "fixed", "args": {"topology": "clique"}}],
        "rounds": 1,
        "ray": {"in_process": False},
        "progress_every_s": 1,
    }
    path = tmp_path / "quiet.yaml"
    path.write_text(yaml.safe_dump(cfg))
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    done = subprocess.run(
        sweep_cmd("run", str(path), "--address", ray_head.address, "--no-tracking"),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    terminal = done.stdout + done.stderr
    assert done.returncode == 0, terminal[-3000:]
    assert not RAY_LINE.search(terminal), terminal
    assert re.search(r"engine sim: in Ray actors, ready to answer in [\d.]+ s", terminal), terminal
    assert f"its log: {out / 'logs' / 'ray.log'}" in terminal
    assert RAY_LINE.search((out / "logs" / "ray.log").read_text())  # Ray's lines are kept, in the file
