"""A rerun of a finished sweep skips MLflow — not even imported — while the store and the results are
as they were logged; a changed store or new results are logged as before."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from mlflow import MlflowClient

from sweep.tracking.receipt import NAME
from tests.conftest import ROOT

PROBE = "import sys; from sweep.cli import main; code = main(sys.argv[1:]); print('MLFLOW', 'mlflow' in sys.modules, 'RAY', 'ray' in sys.modules); sys.exit(code)"


def config(tmp_path: Path, limit: int) -> Path:
    cfg = {
        "name": "r",
        "output_dir": str(tmp_path / "out"),
        "models": {"sim": {"engine": "simulated"}},
        "agents": [{"model": "sim", "count": 3}],
        "datasets": [{"name": "arith", "limit": limit}],
        "methods": ["cot", {"name": "fixed", "args": {"topology": "ring"}}],
        "rounds": 1,
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def sweep(path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "run", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_a_finished_sweep_reruns_without_mlflow_until_something_changes(tmp_path: Path) -> None:
    first = sweep(config(tmp_path, 3))
    assert (
        "MLFLOW True RAY False" in first.stdout and (tmp_path / "out" / NAME).is_file()
    )  # in-process: no Ray
    parent = first.stdout.split("parent run ")[1].split(")")[0]

    again = sweep(config(tmp_path, 3))
    assert "MLFLOW False RAY False" in again.stdout and "mlflow: up to date" in again.stderr
    assert f"parent run {parent}" in again.stdout

    db = tmp_path / "out" / "mlflow.db"
    client = MlflowClient(f"sqlite:///{db}")
    exp = client.get_experiment_by_name("debate-sweep")
    assert exp is not None
    child = next(r for r in client.search_runs([exp.experiment_id]) if "mlflow.parentRunId" in r.data.tags)
    client.delete_run(child.info.run_id)  # the store changed behind the receipt's back
    relog = sweep(config(tmp_path, 3))
    assert "MLFLOW True" in relog.stdout and "up to date" not in relog.stderr
    children = [r for r in client.search_runs([exp.experiment_id]) if "mlflow.parentRunId" in r.data.tags]
    assert len(children) == 2  # the deleted group was logged again

    more = sweep(config(tmp_path, 4))  # new episodes: logged
    assert "MLFLOW True" in more.stdout and "6 already stored, 2 run now" in more.stdout
    again = sweep(config(tmp_path, 4))
    assert "MLFLOW False" in again.stdout
