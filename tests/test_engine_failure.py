"""An engine that starts failing mid-sweep: `sweep run` keeps every episode finished before the failure,
records the rest as failed, says so, exits 1 — and a rerun once the engine is back runs only those."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from sweep.store.results import ResultStore
from tests.conftest import ROOT, RayHead, sweep_cmd
from tests.http_helpers import send_json, serving

pytestmark = pytest.mark.http

REPLY = '{"reasoning": "added", "answer": "%d", "confidence": 4}'


class DyingServer(ThreadingHTTPServer):
    """An OpenAI-compatible server that answers the first `healthy` requests, then fails every
    later one with HTTP 400 (an error the engine does not retry), like a server whose model was
    unloaded mid-sweep."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, healthy: int) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.healthy, self.answered, self.refused = healthy, 0, 0
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: DyingServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        srv = self.server
        with srv.lock:
            ok = srv.answered < srv.healthy
            srv.answered += ok
            srv.refused += not ok
        if ok:
            text = REPLY % (int(body.get("seed") or 0) % 50)
            payload = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 20, "completion_tokens": 9},
            }
            send_json(self, 200, payload)
        else:
            send_json(self, 400, {"error": {"message": "model not loaded"}})


@pytest.fixture
def server() -> Iterator[DyingServer]:
    with serving(DyingServer(healthy=3)) as srv:
        yield srv


def sweep_config(tmp_path: Path, url: str) -> Path:
    cfg = {
        "name": "dying-engine",
        "output_dir": str(tmp_path / "out"),
        "models": {"served": {"engine": "openai", "model": "m", "args": {"base_url": url, "max_retries": 0}}},
        "agents": ["served"],
        "datasets": [{"name": "arith", "split": "test", "limit": 6}],
        "methods": ["cot"],
        "seeds": [0],
        "concurrency": 1,  # one episode at a time: exactly the first three find the server healthy
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_an_engine_failing_mid_sweep_exits_1_and_keeps_the_finished_episodes(
    tmp_path: Path, server: DyingServer, ray_head: RayHead
) -> None:
    cfg = sweep_config(tmp_path, server.url)
    cmd = sweep_cmd("run", str(cfg), "--no-tracking", "--address", ray_head.address)
    first = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert first.returncode == 1, first.stdout[-2000:] + first.stderr[-2000:]
    assert "3 episode(s) failed" in first.stderr, first.stderr[-2000:]
    assert "Traceback" not in first.stderr.split("episode(s) failed")[-1]  # the last word is one line
    kept = ResultStore(tmp_path / "out").episodes()
    assert kept.height == 3 and kept["calls"].to_list() == [1, 1, 1]
    assert server.refused == 3

    # The server is back: the rerun runs the three failed episodes and nothing else.
    server.healthy = 6
    second = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
    assert server.answered == 6
    done = ResultStore(tmp_path / "out").episodes()
    assert done.height == 6
    assert set(kept["episode_id"].to_list()) < set(done["episode_id"].to_list())
