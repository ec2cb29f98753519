"""`sweep mlflow OUT`: one-line errors for a dir without a store or a busy port; and (slow) the real
MLflow server on a tiny stored sweep: it answers, lands on the sweep's runs, and leaves no process
behind when stopped."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from sweep.tracking import ui as mlflow_ui
from tests.conftest import ROOT


@pytest.fixture(autouse=True)
def no_server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside the slow test, a server start fails at once (so a refused input can never hang)."""
    if request.node.get_closest_marker("slow") is None:

        def refuse(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError("this test starts no server")

        monkeypatch.setattr(mlflow_ui.subprocess, "Popen", refuse)


def run_cli(out: Path, port: int, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = mlflow_ui.run(argparse.Namespace(out=out, port=port))
    return code, capsys.readouterr().err


def test_a_dir_without_a_store_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run_cli(tmp_path, 0, capsys)
    assert code == 2 and err.startswith("error: OUT: ") and err.count("\n") == 1
    assert "no MLflow store (mlflow.db)" in err and "--no-tracking" in err
    code, err = run_cli(tmp_path / "missing", 0, capsys)
    assert code == 2 and "is not a directory" in err and err.count("\n") == 1


def test_a_busy_port_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mlflow.db").touch()
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        code, err = run_cli(tmp_path, held.getsockname()[1], capsys)
    assert code == 2 and err.startswith("error: --port: cannot listen on 127.0.0.1:") and err.count("\n") == 1
    code, err = run_cli(tmp_path, 70000, capsys)
    assert code == 2 and "--port must be from 0 to 65535" in err


def test_the_server_is_this_venvs_on_loopback_with_one_worker(tmp_path: Path) -> None:
    cmd = mlflow_ui.server_command("sqlite:///x.db", 5001, tmp_path)
    assert cmd[:4] == [sys.executable, "-m", "mlflow", "server"]
    opts = dict(zip(cmd[4::2], cmd[5::2], strict=False))
    assert opts["--host"] == "127.0.0.1" and opts["--workers"] == "1" and opts["--port"] == "5001"
    assert opts["--default-artifact-root"] == (tmp_path / "mlartifacts").as_uri()
    assert mlflow_ui.server_env()["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] == "false"


def descendants(pid: int) -> set[int]:
    """Every live process under `pid` (from /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited; only its parent's reaping is pending


def post(url: str, body: dict[str, Any]) -> Any:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


@pytest.mark.slow
def test_sweep_mlflow_serves_the_sweep_and_stops_its_server(tmp_path: Path) -> None:
    from sweep.config.sweep import load_config
    from sweep.run.runner import run_sweep

    raw = {
        "name": "tiny",
        "output_dir": str(tmp_path / "out"),
        "models": {"sim": {"engine": "simulated"}},
        "agents": [{"model": "sim", "count": 2}],
        "datasets": [{"name": "arith", "limit": 2}],
        "methods": ["cot"],
        "rounds": 1,
        "seeds": [0],
    }
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(raw))
    outcome = run_sweep(load_config(tmp_path / "s.yaml"))
    assert outcome.parent_run_id and (tmp_path / "out" / "mlflow.db").is_file()

    cwd = tmp_path / "cwd"
    cwd.mkdir()  # the server must write nothing here
    proc = subprocess.Popen(
        [sys.executable, "-m", "sweep.tracking.ui", str(tmp_path / "out"), "--port", "0"],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(3)]  # starting, where to look, the pid
        assert "starting MLflow on http://127.0.0.1:" in lines[0], lines
        url = re.search(r"http://127\.0\.0\.1:\d+/\S*", lines[1])
        assert url is not None, lines
        assert url.group(0).endswith(f"/runs?viewStateShareKey={outcome.parent_run_id}")
        base = re.match(r"http://127\.0\.0\.1:\d+", url.group(0)).group(0)  # type: ignore[union-attr]
        with urllib.request.urlopen(f"{base}/health", timeout=30) as r:
            assert r.read().decode().strip() == "OK"
        found = post(f"{base}/api/2.0/mlflow/experiments/search", {"max_results": 10})
        assert "debate-sweep" in {e["name"] for e in found["experiments"]}
        server = descendants(proc.pid)
        assert server and int(lines[2].split("server pid ")[1].split(";")[0]) in server
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    assert code == 0, proc.stderr.read() if proc.stderr else ""
    deadline = time.monotonic() + 10
    while any(alive(p) for p in server) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in server if alive(p)]
    assert list(cwd.iterdir()) == []
    with pytest.raises(ConnectionRefusedError):  # nothing listens there any more
        socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])), timeout=5).close()
