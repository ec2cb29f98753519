"""The README's MLflow screenshots, taken in headless Debian chromium: `mlflow server` on 127.0.0.1 over
a sweep's `mlflow.db`, the experiment's runs table, and the parent run's page (its description is
the method x dataset table):

    .venv/bin/sweep run examples/simulated.yaml --out /tmp/sim
    .venv/bin/python docs/mlflow_screenshots.py /tmp/sim

writes docs/mlflow_runs.png and docs/mlflow_parent.png. The server is stopped by PID at the end."""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script from anywhere

from docs.screenshots import shrink  # noqa: E402
from tests.browser import chromium  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def mlflow_server(db: Path) -> object:
    port = free_port()
    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{db}",
           "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            with contextlib.suppress(OSError):
                if urllib.request.urlopen(f"{url}/health", timeout=2).status == 200:
                    break
            time.sleep(1)
        yield url
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)


def shown(driver: object, text: str, timeout: float = 120.0) -> None:
    """Wait until `text` is on the page, then a moment for the rest of it to render."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: text in d.find_element("tag name", "body").text)
    time.sleep(3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="a sweep's output dir (with mlflow.db)")
    ap.add_argument("--dest", type=Path, default=ROOT / "docs")
    args = ap.parse_args()
    from mlflow import MlflowClient

    db = args.out.resolve() / "mlflow.db"
    client = MlflowClient(f"sqlite:///{db}")
    exp = client.get_experiment_by_name("debate-sweep")
    assert exp is not None, f"no debate-sweep experiment in {db}"
    parent = next(
        r for r in client.search_runs([exp.experiment_id]) if r.data.tags.get("debate_sweep.role") == "sweep"
    )
    with mlflow_server(db) as url, chromium() as driver:
        driver.set_window_size(1500, 1000)
        # The page `sweep mlflow` opens: the view the sweep saved on its experiment (the children, flat,
        # with metric columns); `workflowType=machine_learning`, as MLflow 3.17 otherwise opens on GenAI.
        driver.get(
            f"{url}/#/experiments/{exp.experiment_id}/runs?viewStateShareKey={parent.info.run_id}"
            "&workflowType=machine_learning"
        )
        shown(driver, "accuracy")  # the React app renders the runs table after its API calls
        for button in driver.find_elements("css selector", "[aria-label='Close']"):  # the assistant panel
            with contextlib.suppress(Exception):
                button.click()
        time.sleep(3)
        driver.save_screenshot(str(args.dest / "mlflow_runs.png"))
        driver.get(
            f"{url}/#/experiments/{exp.experiment_id}/runs/{parent.info.run_id}?workflowType=machine_learning"
        )
        shown(driver, "accuracy (mean")
        driver.save_screenshot(str(args.dest / "mlflow_parent.png"))
    for name in ("mlflow_runs.png", "mlflow_parent.png"):
        shrink(args.dest / name)
        print(f"wrote {args.dest / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
