"""Wire pieces of the OpenAI-compatible engine (`actors.http`): its errors, the API-key holder, bounded
body reads and defensive parsing of replies. No network here; `aiohttp` only as a type."""

from __future__ import annotations

import email.utils
import json
import math
import os
import re
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import aiohttp

USAGE_MISSING = ";usage_missing"  # appended to finish_reason when the server reports no token counts
RESERVED_KEYS = frozenset(
    {"model", "messages", "max_tokens", "temperature", "top_p", "seed", "response_format", "stream", "n"}
)
ERROR_BODY_BYTES = 4096  # read of a failed reply's body; 300 characters of it reach the message
_MAX_COUNT = 2**40  # a larger "token count" is garbage, not usage
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class HTTPEngineError(RuntimeError):
    """A request failed for good. Messages never hold the API key; `status` is the last HTTP status."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    def __reduce__(self) -> tuple[Any, ...]:  # Ray pickles exceptions; keep `status` across
        return (type(self), (str(self), self.status))


class HTTPStatusError(HTTPEngineError):
    """The server answered a status that is not retried (a 4xx other than 408 and 429)."""


class RetriesExhausted(HTTPEngineError):
    """Every attempt hit a retryable failure (429, 5xx, timeout, connection error)."""


class ResponseTooLarge(HTTPEngineError):
    """The reply's body exceeded `max_response_bytes`."""


class BadResponse(HTTPEngineError):
    """A 200 whose body is not a chat completion."""


class Secret:
    """An API key that shows as `<secret from $NAME>` and refuses to be pickled."""

    __slots__ = ("_value", "source")

    def __init__(self, value: str, source: str) -> None:
        self._value, self.source = value, source

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"<secret from ${self.source}>"

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        raise TypeError(
            "an API key is never pickled; ship api_key_env (its name) and read it where it is used"
        )


def read_key(api_key_env: str | None) -> Secret | None:
    """The key from the environment variable named `api_key_env` (None: send no Authorization)."""
    if api_key_env is None:
        return None
    if not isinstance(api_key_env, str) or not _ENV_NAME.fullmatch(api_key_env):
        # Never echo the value: a key pasted here by mistake must not reach logs.
        raise ValueError("api_key_env must be the NAME of an environment variable (letters, digits, _)")
    value = os.environ.get(api_key_env, "")
    if not value.strip():
        raise ValueError(f"environment variable {api_key_env} (api_key_env) is unset or empty")
    return Secret(value.strip(), api_key_env)


def validate_args(spec: Mapping[str, Any]) -> None:
    """Refuse bad `OpenAIBackend` args with a message naming the arg (never a key's value)."""
    if not isinstance(spec["model"], str) or not spec["model"]:
        raise ValueError("model must be a non-empty string")
    url = urllib.parse.urlsplit(str(spec["base_url"]))
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError(f"base_url must be an http(s) URL, got {spec['base_url']!r}")
    key_env = spec.get("api_key_env")
    if key_env is not None and (not isinstance(key_env, str) or not _ENV_NAME.fullmatch(key_env)):
        # Never echo the value: a key pasted here by mistake must not reach logs.
        raise ValueError("api_key_env must be the NAME of an environment variable (letters, digits, _)")
    if url.username or url.password:
        raise ValueError("base_url must not hold credentials; name the key's variable in api_key_env")
    for name, low, high in (
        ("max_concurrency", 1, 10_000),
        ("max_retries", 0, 100),
        ("max_response_bytes", 1024, 1 << 30),
    ):
        v = spec[name]
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
            raise ValueError(f"{name} must be an int in [{low}, {high}], got {v!r}")
    for name in ("timeout_s", "backoff_s", "max_backoff_s"):
        v = spec[name]
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 86_400:
            raise ValueError(f"{name} must be a number of seconds in [0, 86400], got {v!r}")
    if spec["timeout_s"] == 0:
        raise ValueError("timeout_s must be > 0")
    if spec["response_format_style"] not in ("json_schema", "json_object"):
        raise ValueError(
            f"response_format_style must be json_schema or json_object, got {spec['response_format_style']!r}"
        )
    extra = spec["extra_body"] or {}
    if not isinstance(extra, Mapping):
        raise ValueError("extra_body must be a mapping of extra request fields")
    if clash := sorted(RESERVED_KEYS & set(extra)):
        raise ValueError(
            f"extra_body may not set {', '.join(clash)} (the engine sets them per request); remove them"
        )
    json.dumps(dict(extra))  # unserialisable extras fail here, not on the first request


def _count(x: object) -> int | None:
    """A token count as reported, or None when it is absent or not a plausible integer."""
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x) or x != int(x):
        return None
    return int(x) if 0 <= x < _MAX_COUNT else None


def retry_after_s(value: str | None, cap: float) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or HTTP date), capped; None if absent."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, IndexError):
            return None
    return min(cap, max(0.0, seconds)) if math.isfinite(seconds) else None


async def read_bounded(resp: aiohttp.ClientResponse, limit: int, strict: bool) -> bytes:
    """At most `limit` bytes of the body; `strict`: raise `ResponseTooLarge` beyond it, else truncate."""
    if strict and resp.content_length is not None and resp.content_length > limit:
        raise ResponseTooLarge(f"reply of {resp.content_length} bytes exceeds max_response_bytes={limit}")
    chunks, size = [], 0
    async for chunk in resp.content.iter_chunked(65536):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            if strict:
                raise ResponseTooLarge(f"reply exceeds max_response_bytes={limit}")
            break
    return b"".join(chunks)[:limit]


def usage_counts(data: Mapping[str, Any]) -> tuple[int, int, int, bool]:
    """(prompt, completion, cached, missing) from the reply; missing counts are 0, never estimated."""
    usage = data.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    prompt, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    details, timings = usage.get("prompt_tokens_details"), data.get("timings")
    cached = _count(details.get("cached_tokens")) if isinstance(details, Mapping) else None
    if cached is None and isinstance(timings, Mapping):  # llama.cpp's server reports it here
        cached = _count(timings.get("cache_n"))
    return prompt or 0, completion or 0, cached or 0, prompt is None or completion is None


def parse_reply(body: bytes, redact: Callable[[str], str]) -> tuple[dict[str, Any], str, str]:
    """(reply JSON, text, finish_reason) of a 200's body, or `BadResponse` (its message `redact`ed)."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise BadResponse(redact(f"reply is not JSON: {body[:200]!r}"), 200) from None
    choices = data.get("choices") if isinstance(data, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise BadResponse(redact(f"reply has no choices[0].message: {body[:200]!r}"), 200)
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise BadResponse(f"choices[0].message.content is a {type(content).__name__}, not text", 200)
    finish = first.get("finish_reason") if isinstance(first, dict) else None
    return data, content or "", finish[:40] if isinstance(finish, str) else "unknown"
