"""Helpers for the tests' local HTTP servers (fake OpenAI-compatible engines on 127.0.0.1)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, TypeVar

S = TypeVar("S", bound=HTTPServer)


@contextmanager
def serving(srv: S) -> Iterator[S]:
    """`srv` answering on a daemon thread until the block ends; then shut down, closed, joined."""
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=5)


def send_json(
    handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None
) -> None:
    """One JSON (or raw bytes) response with its Content-Length."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    handler.send_response(status)
    for k, v in {
        "Content-Type": "application/json",
        "Content-Length": str(len(data)),
        **(headers or {}),
    }.items():
        handler.send_header(k, v)
    handler.end_headers()
    handler.wfile.write(data)
