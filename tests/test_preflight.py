"""A dead tracking server or cluster address is a one-line error within seconds, not a hang; and
whatever a driver started stops when the driver is SIGKILLed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sweep.config.paths import ray_endpoint
from sweep.engines.reaper import descendants
from sweep.run.preflight import Unreachable, check_ray_address, check_tracking
from tests.conftest import ROOT


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts connections and never answers (a hung server)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    yield int(sock.getsockname()[1])
    sock.close()


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.send_response(404 if self.path != "/health" else 200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_a_dead_tracking_server_is_one_line_with_the_no_tracking_hint() -> None:
    port = closed_port()
    with pytest.raises(Unreachable) as e:
        check_tracking(f"http://127.0.0.1:{port}")
    text = str(e.value)
    assert text.startswith(f"tracking.uri: the MLflow server http://127.0.0.1:{port} did not answer")
    assert "--no-tracking" in text and "\n" not in text


def test_a_hung_tracking_server_times_out(silent_server: int) -> None:
    def hang(signum: int, frame: object) -> None:
        raise AssertionError("the probe waited far beyond its timeout")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(30)  # a hang detector for a 1 s timeout, not a speed test
    try:
        with pytest.raises(Unreachable, match="did not answer within 1 s"):
            check_tracking(f"http://127.0.0.1:{silent_server}", timeout_s=1.0)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_a_live_tracking_server_and_local_uris_pass() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        check_tracking(f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
    check_tracking("sqlite:////tmp/whatever.db")  # files are checked by the config, not probed
    check_tracking(None)
    assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] and os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"]


def test_a_dead_cluster_address_is_one_line(silent_server: int) -> None:
    port = closed_port()
    with pytest.raises(Unreachable) as e:
        check_ray_address(f"127.0.0.1:{port}")
    assert str(e.value).startswith(f"ray.address: the Ray cluster at 127.0.0.1:{port} did not answer")
    check_ray_address(f"ray://127.0.0.1:{silent_server}")  # it accepts: a cluster is there
    check_ray_address(None)
    check_ray_address("auto")


def test_ray_endpoints() -> None:
    assert ray_endpoint("10.0.0.1:6379") == ("10.0.0.1", 6379)
    assert ray_endpoint("ray://head:10001") == ("head", 10001)
    assert ray_endpoint("auto") is None and ray_endpoint("head") is None and ray_endpoint("h:99999") is None


DRIVER = """
import subprocess, sys, time
from sweep.engines.reaper import watch_descendants
# Grandchildren in their own sessions ignore SIGTERM to the group and outlive their parent, as
# Ray's agents do; one traps SIGTERM, so only the SIGKILL after the grace period ends it.
kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True),
        subprocess.Popen(["sh", "-c", "trap '' TERM; sleep 600 & wait"], start_new_session=True)]
time.sleep(0.5)
print(watch_descendants(grace_s=1.0), flush=True)
time.sleep(600)
"""


def test_what_a_killed_driver_started_is_stopped() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], stdout=subprocess.PIPE, text=True, env=env)
    assert driver.stdout is not None
    told = int(driver.stdout.readline())
    family = [pid for pid, _ in descendants(driver.pid)]
    assert told >= 3 and len(family) >= 4  # 2 children, the sleep under sh, and the reaper
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    deadline = time.monotonic() + 60  # the reaper needs ~1 s; the bound only keeps a bug from hanging
    while time.monotonic() < deadline and (alive := [p for p in family if _alive(p)]):
        time.sleep(0.2)
    assert not alive, f"still running after the driver died: {alive}"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1][0] != "Z"
    except OSError:
        return False
