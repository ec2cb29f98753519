"""A dead tracking server: refused within seconds before anything is written, with the --no-tracking
hint; one that dies (hangs) after the run started costs no result: the run ends in one line saying
the results are stored, and a rerun without tracking finds every episode done, exactly once."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.chaos.conftest import planned, sweep_config
from tests.chaos.harness import Drivers, assert_exactly_once

pytestmark = pytest.mark.chaos


class _Hangs(BaseHTTPRequestHandler):
    """Healthy at /health, then never answers an API call: a server that died behind its proxy."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self.path == "/health":
            self.send_response(200)
            self.end_headers()
            return
        time.sleep(60)

    do_POST = do_GET  # noqa: N815

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def hanging_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hangs)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_dead_tracking_server_is_refused_before_anything_is_written(
    tmp_path: Path, drivers: Drivers
) -> None:
    uri = f"http://127.0.0.1:{closed_port()}"
    path = sweep_config(tmp_path, limit=2, tracking={"enabled": True, "uri": uri})
    log = tmp_path / "driver.log"
    assert drivers.run(["run", str(path)], log) == 1
    line = log.read_text().strip()
    assert (
        line.startswith(f"error: tracking.uri: the MLflow server {uri} did not answer")
        and "--no-tracking" in line
    )
    assert len(line.splitlines()) == 1 and not (tmp_path / "out").exists()


def test_a_tracking_server_that_hangs_mid_run_loses_no_result(
    tmp_path: Path, drivers: Drivers, hanging_server: str
) -> None:
    path = sweep_config(tmp_path, limit=5, tracking={"enabled": True, "uri": hanging_server})
    out, log = tmp_path / "out", tmp_path / "driver.log"
    env = {"MLFLOW_HTTP_REQUEST_TIMEOUT": "2", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}
    assert drivers.run(["run", str(path)], log, env=env) == 1
    errors = [line for line in log.read_text().splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: tracking: logging to MLflow failed"), (
        log.read_text()[-2000:]
    )
    assert f"the results are stored in {out}" in errors[0] and "--no-tracking" in errors[0]
    assert drivers.run(["run", str(path), "--no-tracking"], log) == 0, log.read_text()[-2000:]
    assert f"all {len(planned(path))} episodes are already done" in log.read_text()
    assert_exactly_once(out, planned(path))
