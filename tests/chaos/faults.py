"""An OpenAI-compatible server on 127.0.0.1 that misbehaves: each distinct request (by its body) gets
one fault on its first attempt — a lone surrogate in the reply, a 1 MB reply, a truncated JSON body,
an HTTP 500, or a stall past the client's timeout — and a proper answer after that. Which fault a
request gets is a hash of its body, so a run is reproducible."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULTS = ("surrogate", "huge", "truncated", "http500", "stall", "ok")
HUGE_CHARS = 1_000_000
REPLY = '{"reasoning": "counted", "answer": "%s", "confidence": 4}'


class FaultServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 64

    def __init__(self, stall_s: float) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.stall_s = stall_s
        self.attempts: Counter[str] = Counter()
        self.served: Counter[str] = Counter()  # fault name -> times served
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def fault(self, body: bytes) -> str:
        key = hashlib.sha256(body).hexdigest()
        with self.lock:
            self.attempts[key] += 1
            name = FAULTS[int(key, 16) % len(FAULTS)] if self.attempts[key] == 1 else "ok"
            self.served[name] += 1
        return name

    def start(self) -> FaultServer:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-chaos",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 9},
    }


class _Handler(BaseHTTPRequestHandler):
    server: FaultServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        fault = self.server.fault(body)
        seed = json.loads(body).get("seed") or 0
        answer = str(int(seed) % 50)
        if fault == "http500":
            return self._send(500, b'{"error": "overloaded"}')
        if fault == "stall":
            time.sleep(self.server.stall_s)
            return self._send(200, json.dumps(_completion(REPLY % answer)).encode())
        if fault == "surrogate":
            # JSON may legally escape a lone surrogate; json.loads then yields one.
            data = json.dumps(_completion(REPLY % answer)).replace("counted", "count \\ud800 ed")
            return self._send(200, data.encode())
        if fault == "huge":
            return self._send(200, json.dumps(_completion("x" * HUGE_CHARS)).encode())
        data = json.dumps(_completion(REPLY % answer)).encode()
        self._send(200, data[: len(data) // 2] if fault == "truncated" else data)

    def _send(self, status: int, data: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client gave up (a stall past its timeout)

    def log_message(self, *args: object) -> None:
        pass
