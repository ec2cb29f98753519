"""The OpenAI-compatible HTTP engine against a misbehaving fake server on 127.0.0.1: request bodies,
retries and backoff, fail-fast statuses, usage, hostile bodies, concurrency and API-key hygiene."""

from __future__ import annotations

import asyncio
import json
import logging
import pickle
import secrets
import socket
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from actors.base import ChatRequest, Completion, Message
from actors.http import (
    USAGE_MISSING,
    BadResponse,
    HTTPStatusError,
    OpenAIBackend,
    ResponseTooLarge,
    RetriesExhausted,
)
from actors.registry import build_backend
from tests.http_helpers import send_json, serving

pytestmark = pytest.mark.http

KEY_ENV = "DEBATE_SWEEP_TEST_KEY"
KEY = "sk-test-" + secrets.token_hex(16)
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


class FakeServer(ThreadingHTTPServer):
    """An OpenAI-compatible server that misbehaves on cue. A request does what its last message says
    (`act:<action>`), else the next action of `plan`, else "ok"; it records every request."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 64  # the default 5 would make concurrent connects wait for SYN retries

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.plan: deque[str] = deque()
        self.requests: list[dict[str, Any]] = []  # {"path", "auth", "body"} per attempt
        self.retry_after = "0"
        self.slow_s, self.hold_s, self.huge_bytes = 1.0, 0.15, 2_000_000
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_action(self, body: dict[str, Any]) -> str:
        last = (body.get("messages") or [{}])[-1].get("content", "")
        if isinstance(last, str) and last.startswith("act:"):
            return last[4:]
        with self.lock:
            return self.plan.popleft() if self.plan else "ok"


def completion_json(body: dict[str, Any], usage: bool = True, timings: bool = False) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": body.get("model"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": f"seed={body.get('seed')}"},
                "finish_reason": "stop",
            }
        ],  # fmt: skip
    }
    if usage and timings:  # llama.cpp's server: no prompt_tokens_details, the cache in timings
        reply["usage"] = {"prompt_tokens": 13, "completion_tokens": 5, "total_tokens": 18}
        reply["timings"] = {"cache_n": 9, "prompt_n": 4, "predicted_n": 5}
    elif usage:
        reply["usage"] = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18,
                          "prompt_tokens_details": {"cached_tokens": 3}}  # fmt: skip
    return reply


class _Handler(BaseHTTPRequestHandler):
    server: FakeServer

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.loads(raw)
        srv = self.server
        with srv.lock:
            srv.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
            srv.in_flight += 1
            srv.max_in_flight = max(srv.max_in_flight, srv.in_flight)
        self._counted = True
        try:
            self._act(srv.next_action(body), body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout, size bound)
            pass
        finally:
            self._leave()

    def _leave(self) -> None:
        """Out of `in_flight`: before the reply is written, since a client that has read it may send its
        next request before this thread runs again (counted after, that showed one request too many)."""
        if self._counted:
            self._counted = False
            with self.server.lock:
                self.server.in_flight -= 1

    def _act(self, action: str, body: dict[str, Any]) -> None:
        srv = self.server
        if action in ("slow", "hold"):
            time.sleep(srv.slow_s if action == "slow" else srv.hold_s)
        self._leave()
        if action == "429":
            self._send(429, {"error": {"message": "rate limited"}}, {"Retry-After": srv.retry_after})
        elif action in ("500", "400"):
            self._send(int(action), {"error": {"message": f"status {action}"}})
        elif action == "401":  # like hosted APIs, echo the key it was given
            self._send(
                401, {"error": {"message": f"Incorrect API key provided: {self.headers['Authorization']}"}}
            )
        elif action == "garbage":
            self._send(200, b"<html>not json " + self.headers["Authorization"].encode() + b"</html>")
        elif action == "huge":
            self._send(200, b'{"choices": [{"message": {"content": "' + b"x" * srv.huge_bytes + b'"}}]}')
        elif action == "huge_stream":  # no Content-Length: the body ends when the connection closes
            self.send_response(200)
            self.end_headers()
            for _ in range(srv.huge_bytes // 65536 + 1):
                self.wfile.write(b"x" * 65536)
        else:
            self._send(200, completion_json(body, usage=action != "nousage", timings=action == "llamacpp"))

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        send_json(self, status, payload, headers)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with serving(FakeServer()) as srv:
        yield srv


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


def make(srv: FakeServer, **kw: Any) -> OpenAIBackend:
    args: dict[str, Any] = {"base_url": srv.url, "api_key_env": KEY_ENV, "backoff_s": 0.01, "timeout_s": 5.0}
    return OpenAIBackend("test-model", **(args | kw))


def req(text: str = "What is 3 * 6?", seed: int | None = 7, **kw: Any) -> ChatRequest:
    return ChatRequest(messages=(Message("system", "Be careful."), Message("user", text)), seed=seed, **kw)


def run(b: OpenAIBackend, requests: Sequence[ChatRequest]) -> list[Completion]:
    async def go() -> list[Completion]:
        try:
            return await b.generate(requests)
        finally:
            await b.aclose()

    return asyncio.run(go())


def test_is_a_registered_backend(server: FakeServer) -> None:
    b = build_backend("openai", "m", {"base_url": server.url, "api_key_env": KEY_ENV})
    assert isinstance(b, OpenAIBackend) and b.model == "m" and b.base_url == server.url


def test_happy_path_sends_seeds_sampling_and_bearer_key(server: FakeServer) -> None:
    hints = {"gold": "18", "agent": 1}
    requests = [req(seed=s, max_tokens=64 + s, temperature=0.3, top_p=0.9, hints=hints) for s in (5, 6, 7)]
    out = run(make(server), requests)
    assert [c.text for c in out] == ["seed=5", "seed=6", "seed=7"]  # in request order
    for c in out:
        assert (c.prompt_tokens, c.completion_tokens, c.cached_tokens) == (11, 7, 3)
        assert c.finish_reason == "stop" and c.model == "test-model" and c.latency_s > 0
    bodies = sorted((r["body"] for r in server.requests), key=lambda b: b["seed"])
    for s, body in zip((5, 6, 7), bodies, strict=True):
        assert body["seed"] == s and body["max_tokens"] == 64 + s
        assert body["temperature"] == 0.3 and body["top_p"] == 0.9 and body["model"] == "test-model"
        assert body["messages"] == [{"role": "system", "content": "Be careful."},
                                    {"role": "user", "content": "What is 3 * 6?"}]  # fmt: skip
        assert "hints" not in body and "response_format" not in body and "18" not in json.dumps(body)
    assert {r["path"] for r in server.requests} == {"/v1/chat/completions"}
    assert {r["auth"] for r in server.requests} == {f"Bearer {KEY}"}


def test_seed_key_is_sent_even_when_none_and_no_key_means_no_authorization(server: FakeServer) -> None:
    run(make(server, api_key_env=None), [req(seed=None)])
    (r,) = server.requests
    assert "seed" in r["body"] and r["body"]["seed"] is None and r["auth"] is None


@pytest.mark.parametrize("style", ["json_schema", "json_object"])
def test_json_schema_becomes_response_format(server: FakeServer, style: str) -> None:
    run(make(server, response_format_style=style), [req(json_schema=SCHEMA)])
    fmt = server.requests[0]["body"]["response_format"]
    if style == "json_schema":
        assert fmt == {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": SCHEMA, "strict": True},
        }
    else:
        assert fmt == {"type": "json_object", "schema": SCHEMA}


def test_extra_body_is_sent_but_cannot_override_core_fields(server: FakeServer) -> None:
    run(make(server, extra_body={"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}}), [req()])
    body = server.requests[0]["body"]
    assert body["top_k"] == 20 and body["chat_template_kwargs"] == {"enable_thinking": False}
    with pytest.raises(ValueError, match="seed"):
        make(server, extra_body={"seed": 1})


def test_429_is_retried_until_it_succeeds(server: FakeServer, caplog: pytest.LogCaptureFixture) -> None:
    server.plan.extend(["429", "429"])
    with caplog.at_level(logging.WARNING, logger="actors.http"):
        (c,) = run(make(server), [req()])
    assert c.text == "seed=7" and len(server.requests) == 3
    assert caplog.text.count("HTTP 429") == 2  # each retry is logged


def test_retry_after_is_honoured(server: FakeServer) -> None:
    server.plan.append("429")
    server.retry_after = "1"
    (c,) = run(make(server, backoff_s=0.001), [req()])
    assert len(server.requests) == 2 and 1.0 <= c.latency_s < 4.0  # waited as told, not backoff_s


def test_retry_after_is_capped_by_max_backoff(server: FakeServer) -> None:
    server.plan.append("429")
    server.retry_after = "Wed, 21 Oct 2099 07:28:00 GMT"  # an HTTP date, decades away
    (c,) = run(make(server, max_backoff_s=0.3), [req()])
    assert len(server.requests) == 2 and 0.3 <= c.latency_s < 3.0


def test_500_is_retried(server: FakeServer) -> None:
    server.plan.extend(["500", "500", "500"])
    (c,) = run(make(server), [req()])
    assert c.text == "seed=7" and len(server.requests) == 4


def test_timeout_is_retried_and_counts_in_latency(server: FakeServer) -> None:
    server.plan.append("slow")
    server.slow_s = 1.5
    (c,) = run(make(server, timeout_s=0.3), [req()])
    assert c.text == "seed=7" and len(server.requests) == 2 and c.latency_s >= 0.3


def test_retries_give_up_after_max_retries(server: FakeServer) -> None:
    server.plan.extend(["500"] * 10)
    with pytest.raises(RetriesExhausted, match="failed 3 times.*HTTP 500") as err:
        run(make(server, max_retries=2), [req()])
    assert len(server.requests) == 3 and err.value.status == 500


def test_connection_refused_is_retried_then_fails_clearly() -> None:
    with socket.socket() as s:  # bound but not listening: refused, and no one else can take the port
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        b = OpenAIBackend("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=2, backoff_s=0.01)
        with pytest.raises(RetriesExhausted, match="failed 3 times") as err:
            run(b, [req()])
    assert err.value.status is None and "Connect" in str(err.value)


@pytest.mark.parametrize("status", [400, 401])
def test_other_4xx_fail_fast_without_the_key(server: FakeServer, status: int) -> None:
    with pytest.raises(HTTPStatusError, match=f"HTTP {status}") as err:
        run(make(server), [req(f"act:{status}")])
    assert len(server.requests) == 1 and err.value.status == status
    shown = "".join(traceback.format_exception(err.value)) + repr(err.value) + repr(pickle.dumps(err.value))
    assert KEY not in shown  # the 401 body echoes the key; it is masked
    assert pickle.loads(pickle.dumps(err.value)).status == status  # survives Ray's pickling


def test_failure_cancels_the_rest_of_the_batch(server: FakeServer) -> None:
    server.hold_s = 120.0  # far longer than any machine load could stretch the rest of the test
    start = time.perf_counter()
    with pytest.raises(HTTPStatusError):
        run(make(server), [req("act:hold"), req("act:400"), req("act:hold")])
    assert time.perf_counter() - start < 60  # did not wait for the held requests


def test_missing_usage_is_reported_as_zero_and_flagged(server: FakeServer) -> None:
    (c,) = run(make(server), [req("act:nousage")])
    assert (c.prompt_tokens, c.completion_tokens, c.cached_tokens) == (0, 0, 0)
    assert c.finish_reason == "stop" + USAGE_MISSING == "stop;usage_missing"


def test_llama_cpp_cache_count_comes_from_timings(server: FakeServer) -> None:
    (c,) = run(make(server), [req("act:llamacpp")])
    assert (c.prompt_tokens, c.completion_tokens, c.cached_tokens, c.finish_reason) == (13, 5, 9, "stop")


def test_a_reply_that_is_not_a_completion_fails_without_retry_or_key(server: FakeServer) -> None:
    with pytest.raises(BadResponse, match="not JSON") as err:
        run(make(server), [req("act:garbage")])
    assert len(server.requests) == 1 and KEY not in str(err.value)


@pytest.mark.parametrize("action", ["huge", "huge_stream"])
def test_response_size_is_bounded(server: FakeServer, action: str) -> None:
    with pytest.raises(ResponseTooLarge, match="max_response_bytes=100000"):
        run(make(server, max_response_bytes=100_000), [req(f"act:{action}")])
    assert len(server.requests) == 1  # a hostile body is not asked for again


def test_concurrency_is_limited_across_batches(server: FakeServer) -> None:
    b = make(server, max_concurrency=3)

    async def go() -> list[list[Completion]]:
        try:
            return await asyncio.gather(*(b.generate([req("act:hold", seed=i)] * 5) for i in range(2)))
        finally:
            await b.aclose()

    out = asyncio.run(go())
    assert sum(len(batch) for batch in out) == 10 and len(server.requests) == 10
    assert server.max_in_flight == 3


def test_key_is_absent_from_repr_pickle_errors_and_logs(
    server: FakeServer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = make(server)
    server.plan.extend(["429", "500"])
    with caplog.at_level(logging.DEBUG):
        run(b, [req()])
        with pytest.raises(HTTPStatusError) as err:
            run(b, [req("act:401")])
    assert f"Bearer {KEY}" in {r["auth"] for r in server.requests}  # it was sent...
    assert "HTTP 429" in caplog.text and "HTTP 401" in str(err.value)  # ...and logs and errors were written
    for shown in (
        repr(b),
        str(vars(b)),
        caplog.text,
        str(err.value),
        "".join(traceback.format_exception(err.value)),
    ):
        assert KEY not in shown
    state = pickle.dumps(b)  # what Ray would ship: the variable's name, never the key
    assert KEY.encode() not in state and KEY_ENV.encode() in state
    clone = pickle.loads(state)  # reads the key again from this process's environment
    assert isinstance(clone, OpenAIBackend) and clone.base_url == b.base_url
    assert run(clone, [req()])[0].text == "seed=7" and server.requests[-1]["auth"] == f"Bearer {KEY}"
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(ValueError, match=KEY_ENV):
        pickle.loads(state)


def test_unset_key_variable_is_named_and_a_pasted_key_is_not_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(ValueError, match=f"environment variable {KEY_ENV} .*unset"):
        OpenAIBackend("m", api_key_env=KEY_ENV)
    with pytest.raises(ValueError, match="NAME of an environment variable") as err:
        OpenAIBackend("m", api_key_env=KEY)
    assert KEY not in str(err.value)


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"base_url": "http://user:pw@127.0.0.1:1/v1"}, "credentials"),
        ({"base_url": "ftp://127.0.0.1/v1"}, "base_url"),
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"max_response_bytes": 10}, "max_response_bytes"),
        ({"response_format_style": "grammar"}, "response_format_style"),
    ],
)
def test_bad_args_are_refused_by_name(kw: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        OpenAIBackend("m", **kw)
