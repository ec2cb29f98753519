"""The engine boundary on the driver: everything an engine returns is made safe to store before it
reaches the call cache, Parquet or MLflow. Model output is hostile input: a server may legally send
a lone surrogate (`\\ud800`) in JSON, which no UTF-8 writer accepts, or a megabyte of text.

- Text (`text`, `model`, `finish_reason`) becomes valid UTF-8: lone surrogates and other code points
  that cannot be encoded are replaced with U+FFFD; NUL bytes are dropped (many readers stop at them).
- Sizes are bounded: `text` to `MAX_TEXT_CHARS` (then `finish_reason` gets `;truncated`), the short
  fields to a few hundred characters.
- Numbers are bounded: token counts to integers in [0, 2**40), latency to a finite value >= 0.

`SanitizingBackend` wraps any `Backend`; a completion that needs no change is returned as is."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from typing import Any

from actors.base import Backend, ChatRequest, Completion

MAX_TEXT_CHARS = 100_000  # a reply is a few thousand characters; 1 MB of text is a broken server
MAX_SHORT_CHARS = 200  # model names, finish reasons
MAX_COUNT = 2**40  # a larger "token count" is garbage, not usage (as in actors.openai_wire)
TRUNCATED = ";truncated"
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(value: object, limit: int) -> tuple[str, bool]:
    """(`value` as valid UTF-8 text of at most `limit` characters, whether it was cut)."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    cut = len(text) > limit
    text = text[:limit] if cut else text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = _SURROGATE.sub("\ufffd", text)  # the only code points UTF-8 cannot encode
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text, cut


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not math.isfinite(value) or not 0 <= value < MAX_COUNT:
        return 0
    return int(value)


def _plain_text(value: object, limit: int) -> bool:
    return type(value) is str and len(value) <= limit and value.isascii() and "\x00" not in value


def _plain_count(value: object) -> bool:
    return type(value) is int and 0 <= value < MAX_COUNT


def is_clean(c: Completion) -> bool:
    """Whether `clean_completion` would return `c` as is, decided cheaply for the common case (ASCII
    text, int counts, a float latency); False also where only the full check can tell."""
    latency = c.latency_s
    return (
        _plain_text(c.text, MAX_TEXT_CHARS)
        and _plain_text(c.finish_reason, MAX_SHORT_CHARS - len(TRUNCATED))
        and _plain_text(c.model, MAX_SHORT_CHARS)
        and _plain_count(c.prompt_tokens)
        and _plain_count(c.completion_tokens)
        and _plain_count(c.cached_tokens)
        and type(latency) is float
        and 0.0 <= latency < math.inf
        and type(c.cache_hit) is bool
    )


def clean_completion(c: Completion) -> Completion:
    """`c` with valid, bounded text and plausible numbers; `c` itself when nothing had to change."""
    return c if is_clean(c) else full_clean(c)


def full_clean(c: Completion) -> Completion:
    """`clean_completion` without the quick check (each field looked at)."""
    text, cut = clean_text(c.text, MAX_TEXT_CHARS)
    finish, _ = clean_text(c.finish_reason, MAX_SHORT_CHARS - len(TRUNCATED))
    model, _ = clean_text(c.model, MAX_SHORT_CHARS)
    latency = c.latency_s if isinstance(c.latency_s, int | float) and math.isfinite(c.latency_s) else 0.0
    fields: dict[str, Any] = {
        "text": text,
        "prompt_tokens": _count(c.prompt_tokens),
        "completion_tokens": _count(c.completion_tokens),
        "cached_tokens": _count(c.cached_tokens),
        "finish_reason": finish + TRUNCATED if cut else finish,
        "latency_s": max(0.0, float(latency)),
        "model": model,
        "cache_hit": bool(c.cache_hit),
    }
    changed = {k: v for k, v in fields.items() if getattr(c, k) != v or type(getattr(c, k)) is not type(v)}
    return dataclasses.replace(c, **changed) if changed else c


class SanitizingBackend:
    """A `Backend` whose completions are `clean_completion`ed; a reply of the wrong length is an error."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        out = await self.inner.generate(requests)
        if not isinstance(out, list | tuple) or len(out) != len(requests):
            got = len(out) if isinstance(out, list | tuple) else type(out).__name__
            raise RuntimeError(f"engine returned {got} completions for {len(requests)} requests")
        for c in out:
            if not isinstance(c, Completion):
                raise RuntimeError(f"engine returned a {type(c).__name__}, not a Completion")
        return [clean_completion(c) for c in out]
