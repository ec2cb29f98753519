"""OpenAI-compatible HTTP engine: `POST {base_url}/chat/completions` on vLLM's server, llama.cpp's
server or a hosted API, through one `aiohttp` client session per event loop.

- Requests of a batch go out concurrently, at most `max_concurrency` in flight per backend (a semaphore
  held during each attempt, released while backing off). Every body carries `model`, `messages`,
  `max_tokens`, `temperature`, `top_p` and `seed` (null only when the request has none), then
  `extra_body`, which may not override those keys. `ChatRequest.hints` is never sent.
- With `json_schema` set, `response_format` is `{"type": "json_schema", "json_schema": {"name": "reply",
  "schema": ..., "strict": true}}` (OpenAI, vLLM), or `{"type": "json_object", "schema": ...}` with
  `response_format_style="json_object"` (llama.cpp's server).
- Retries on 408, 429, 5xx, timeouts (`timeout_s` per attempt) and connection errors, at most
  `max_retries` times: the wait is the server's `Retry-After` (seconds or an HTTP date) when present, else
  `backoff_s * 2**k` times a jitter in [0.5, 1) from a generator seeded by the model name; either is
  capped at `max_backoff_s`. Any other status fails at once (`HTTPStatusError`: status, truncated body).
- Model output is hostile: a body over `max_response_bytes` (counted after decompression) raises
  `ResponseTooLarge` and is not retried; a 200 without `choices[0].message` raises `BadResponse`.
- Token counts are only ever the server's: `usage.prompt_tokens`, `usage.completion_tokens`, cached
  tokens from `usage.prompt_tokens_details.cached_tokens`, else llama.cpp's `timings.cache_n`, else 0.
  When `usage` is absent, or either count is missing or not an integer in [0, 2**40), nothing is
  estimated: the missing counts are 0 and `finish_reason` gets the suffix `;usage_missing`
  (e.g. "stop;usage_missing"), so `Completion` keeps its shape and the gap stays visible in `turns/`.
- `latency_s` runs from the first attempt's start to the parsed reply, retries and backoffs included.
- The API key is read at construction from the environment variable *named* by `api_key_env` and held
  in a `Secret` that never reprs or pickles. It is sent only as `Authorization: Bearer ...` and
  redacted from every error message. Pickling the backend ships its constructor args (the variable's
  name, never the key); unpickling reads the key from that process's environment.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from actors.base import ChatRequest, Completion
from actors.openai_wire import (
    ERROR_BODY_BYTES,
    USAGE_MISSING,
    BadResponse,
    HTTPEngineError,
    HTTPStatusError,
    ResponseTooLarge,
    RetriesExhausted,
    parse_reply,
    read_bounded,
    read_key,
    retry_after_s,
    usage_counts,
    validate_args,
)
from actors.registry import backend

if TYPE_CHECKING:
    import aiohttp

log = logging.getLogger(__name__)
__all__ = [
    "BadResponse",
    "HTTPEngineError",
    "HTTPStatusError",
    "OpenAIBackend",
    "ResponseTooLarge",
    "RetriesExhausted",
    "USAGE_MISSING",
]


def _from_spec(spec: dict[str, Any]) -> OpenAIBackend:
    """Rebuild a backend from its constructor args (what unpickling does)."""
    return OpenAIBackend(**spec)


def check_args(**spec: Any) -> None:
    """The engine's argument ranges, as its constructor checks them (the key is read where it runs)."""
    validate_args(spec)


@backend("openai", check=check_args)
class OpenAIBackend:
    """Chat completions from an OpenAI-compatible server (see the module docstring)."""

    def __init__(
        self,
        model: str,
        base_url: str = "http://127.0.0.1:8000/v1",
        api_key_env: str | None = None,
        max_concurrency: int = 16,
        timeout_s: float = 120.0,
        max_retries: int = 5,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        max_response_bytes: int = 4_000_000,
        extra_body: dict[str, Any] | None = None,
        response_format_style: str = "json_schema",
    ) -> None:
        self._spec = {k: v for k, v in locals().items() if k != "self"}
        validate_args(self._spec)
        self.model, self.base_url, self.api_key_env = model, base_url.rstrip("/"), api_key_env
        self.max_concurrency, self.max_retries = max_concurrency, max_retries
        self.timeout_s, self.backoff_s, self.max_backoff_s = (
            float(timeout_s),
            float(backoff_s),
            float(max_backoff_s),
        )
        self.max_response_bytes, self.response_format_style = max_response_bytes, response_format_style
        self.extra_body = dict(extra_body or {})
        self._key = read_key(api_key_env)
        # Jitter only spreads retries out; no result depends on it, so a fixed seed per model is enough.
        self._jitter = random.Random(f"openai-backoff:{model}")
        self._client: tuple[asyncio.AbstractEventLoop, aiohttp.ClientSession, asyncio.Semaphore] | None = None

    def __repr__(self) -> str:
        args = f"model={self.model!r}, base_url={self.base_url!r}, api_key_env={self.api_key_env!r}"
        return f"OpenAIBackend({args})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Only the constructor args travel (the key's variable name, no session); the key is re-read there.
        return (_from_spec, (dict(self._spec),))

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """One completion per request, in order. The first failure cancels the batch's other requests."""
        session, sem = self._session()
        tasks = [asyncio.ensure_future(self._complete(session, sem, r)) for r in requests]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def aclose(self) -> None:
        """Close the client session (its connections); a later `generate` opens a new one."""
        if self._client is not None:
            client, self._client = self._client, None
            await client[1].close()

    def _session(self) -> tuple[aiohttp.ClientSession, asyncio.Semaphore]:
        """This event loop's session and semaphore, made on first use (both are bound to one loop)."""
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._client is None or self._client[0] is not loop or self._client[1].closed:
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.max_concurrency),
                timeout=aiohttp.ClientTimeout(total=self.timeout_s),
                cookie_jar=aiohttp.DummyCookieJar(),  # servers' cookies are never kept or sent back
                trust_env=False,  # no proxy from the environment ever sees the key
            )
            self._client = (loop, session, asyncio.Semaphore(self.max_concurrency))
        return self._client[1], self._client[2]

    def _body(self, req: ChatRequest) -> bytes:
        """The request's JSON body (hints are never sent)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in req.messages],
            **req.sampling_params(),
        }
        if req.json_schema is not None:
            schema = dict(req.json_schema)
            body["response_format"] = (
                {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": True}}
                if self.response_format_style == "json_schema"
                else {"type": "json_object", "schema": schema}
            )
        return json.dumps({**self.extra_body, **body}).encode()

    async def _complete(
        self, session: aiohttp.ClientSession, sem: asyncio.Semaphore, req: ChatRequest
    ) -> Completion:
        """One request with retries; the attempts' wall time is its latency."""
        import aiohttp

        body, start, attempts = self._body(req), 0.0, self.max_retries + 1
        for attempt in range(1, attempts + 1):
            async with sem:
                start = start or time.perf_counter()
                try:
                    status, reply, retry_after = await self._post(session, body)
                except (aiohttp.ClientError, TimeoutError) as e:
                    status, reply, retry_after = None, b"", None
                    failure = self._redact(f"{type(e).__name__} {e}".strip())
            if status == 200:
                return self._completion(reply, time.perf_counter() - start)
            if status is not None:
                failure = f"HTTP {status}: {self._redact(reply.decode(errors='replace'))[:300]}"
                if status != 408 and status != 429 and status < 500:
                    raise HTTPStatusError(f"{self.base_url}/chat/completions answered {failure}", status)
            if attempt == attempts:
                break
            delay = retry_after_s(retry_after, self.max_backoff_s)
            if delay is None:
                base = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
                delay = base * (0.5 + 0.5 * self._jitter.random())
            log.warning(
                "%s: attempt %d/%d failed (%s); retrying in %.2f s",
                self.model,
                attempt,
                attempts,
                failure[:120],
                delay,
            )
            await asyncio.sleep(delay)
        raise RetriesExhausted(
            f"{self.base_url}/chat/completions failed {attempts} times; last: {failure}", status
        )

    async def _post(self, session: aiohttp.ClientSession, body: bytes) -> tuple[int, bytes, str | None]:
        """One POST: (status, body read within bounds, Retry-After header)."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key is not None:
            headers["Authorization"] = f"Bearer {self._key.reveal()}"
        url = f"{self.base_url}/chat/completions"
        # No redirects: a 3xx fails like any 4xx, so the key never follows one to another host.
        async with session.post(url, data=body, headers=headers, allow_redirects=False) as resp:
            ok = resp.status == 200
            reply = await read_bounded(resp, self.max_response_bytes if ok else ERROR_BODY_BYTES, ok)
            return resp.status, reply, resp.headers.get("Retry-After")

    def _completion(self, reply: bytes, latency_s: float) -> Completion:
        data, text, finish = parse_reply(reply, self._redact)
        prompt, completion, cached, missing = usage_counts(data)
        return Completion(
            text=text,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=cached,
            finish_reason=finish + USAGE_MISSING if missing else finish,
            latency_s=latency_s,
            model=self.model,
        )

    def _redact(self, text: str) -> str:
        """`text` with the API key (should a server echo it) masked."""
        return text.replace(self._key.reveal(), "***") if self._key is not None else text
