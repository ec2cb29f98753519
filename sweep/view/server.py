"""The viewer's HTTP server: the static page and a small JSON API over `ViewData`, bound to 127.0.0.1.

    GET /api/meta                        methods, datasets, teams, counts
    GET /api/episodes?method=&dataset=&team=&outcome=&flip=&parse=1&item=&offset=&limit=
    GET /api/episode?id=EPISODE_ID       rounds × agents, graphs, decisions, siblings

Requests whose Host is not this loopback address are refused (a web page elsewhere cannot reach the
results through DNS rebinding). Answers: 400 a bad parameter (`offset` 0..2**31-1, `limit` 1..500,
ASCII digits only), 404 an unknown episode or path, 422 an episode whose turns/rounds part file cannot
be read (the error names the file); every error is one line of JSON `{"error": ...}`. Every response
carries `CSP`: the page's own script and style only, no inline code, fetches only to this server."""

from __future__ import annotations

import json
import re
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sweep.view.data import MAX_LIMIT, MAX_OFFSET, Query, QueryError, ViewData
from sweep.view.episode import PartError

STATIC = {
    "/": ("index.html", "text/html"),
    "/index.html": ("index.html", "text/html"),
    "/app.js": ("app.js", "text/javascript"),
    "/style.css": ("style.css", "text/css"),
}
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def static_text(name: str) -> str:
    return files("sweep.view").joinpath("static", name).read_text(encoding="utf-8")


def _number(one: dict[str, str], name: str, default: int, low: int, high: int) -> int:
    """Parameter `name` as a whole number in [low, high]: ASCII digits only (no sign, spaces, '_' or
    other scripts' digits, all of which `int()` takes), at most as many digits as `high` has, so a
    huge value is refused before it becomes an int."""
    text = one.get(name)
    if text is None:
        return default
    if re.fullmatch(f"[0-9]{{1,{len(str(high))}}}", text) and low <= int(text) <= high:
        return int(text)
    shown = text if len(text) <= 40 else text[:40] + "..."
    raise QueryError(f"{name} must be a whole number from {low} to {high}, got {shown!r}")


def parse_query(params: dict[str, list[str]]) -> Query:
    """A `Query` from URL parameters; a bad or out-of-range number raises QueryError naming it."""
    one = {k: v[-1] for k, v in params.items() if v}
    return Query(
        method=one.get("method") or None,
        dataset=one.get("dataset") or None,
        team=one.get("team") or None,
        outcome=one.get("outcome") or None,
        flip=one.get("flip") or None,
        parse_failures=one.get("parse", "") in ("1", "true", "yes"),
        item=one.get("item") or None,
        offset=_number(one, "offset", 0, 0, MAX_OFFSET),
        limit=_number(one, "limit", 50, 1, MAX_LIMIT),
    )


class Handler(BaseHTTPRequestHandler):
    data: ViewData  # set on the subclass `make_server` builds
    allowed_hosts: frozenset[str]
    server_version = "sweep-view"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # quiet: the terminal shows the URL, not every request

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", f"{content_type}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload, default=str).encode(), "application/json")

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.headers.get("Host", "") not in self.allowed_hosts:
            self._json(HTTPStatus.FORBIDDEN, {"error": "unexpected Host header"})
            return
        url = urlsplit(self.path)
        if url.path in STATIC:
            name, kind = STATIC[url.path]
            self._send(HTTPStatus.OK, static_text(name).encode(), kind)
            return
        try:
            self._api(url.path, parse_qs(url.query))
        except QueryError as e:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(e)})
        except PartError as e:
            self._json(HTTPStatus.UNPROCESSABLE_ENTITY, {"error": str(e)})
        except Exception as e:  # noqa: BLE001 - the page gets one line, not a dropped connection
            reason = (str(e).strip().splitlines() or [""])[0][:200]
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(e).__name__}: {reason}"})

    def _api(self, path: str, params: dict[str, list[str]]) -> None:
        if path == "/api/meta":
            self._json(HTTPStatus.OK, self.data.meta())
        elif path == "/api/episodes":
            self._json(HTTPStatus.OK, self.data.episodes(parse_query(params)))
        elif path == "/api/episode":
            eid = (params.get("id") or [""])[-1]
            detail = self.data.episode(eid)
            if detail is None:
                self._json(HTTPStatus.NOT_FOUND, {"error": f"no episode with id {eid!r}"})
            else:
                self._json(HTTPStatus.OK, detail)
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no such path {path!r}"})


def make_server(data: ViewData, port: int = 0, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """A server for `data` on `host:port` (0: a free port); not started."""
    handler: type[Handler] = type("BoundHandler", (Handler,), {"data": data, "allowed_hosts": frozenset()})
    server = ThreadingHTTPServer((host, port), handler)
    bound = server.server_address[1]
    handler.allowed_hosts = frozenset({f"{host}:{bound}", f"localhost:{bound}"})
    server.daemon_threads = True
    return server


def serve_in_thread(data: ViewData, port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Start a server in a daemon thread (tests, the benchmark); returns it and its base URL."""
    server = make_server(data, port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"
