"""A forgiving reader for the JSON objects small models write: single quotes, unquoted keys and
values, Python literals, trailing and missing commas, unescaped quotes inside strings, prose around the
object, an object left open at the very end of the text.

Model output is hostile input: nesting depth and the total work over every `{` tried as an object start
are capped, every regex runs in linear time, and nothing is ever evaluated.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TypeAlias

from actors.frozen import quick_init

MAX_DEPTH = 64  # deeper nesting is not a reply worth reading: it just fails to parse
_MAX_QUOTES = 64  # later quotes tried as the real end of a string with an unescaped quote inside
_MAX_STEPS = 30_000  # tokens read over all attempts on one text (a real reply has well under 2k), ~0.1 s
ANSWER_KEYS = ("answer", "final_answer")


@quick_init
@dataclass(frozen=True)
class Str:
    body: str  # between the quotes with escapes not yet decoded, or a bare value as written
    quoted: bool = True


@quick_init
@dataclass(frozen=True)
class Num:
    text: str  # the token as written, so "18.0" stays "18.0"


Value: TypeAlias = dict | list | Str | Num | bool | None  # what the reader returns for one JSON value


class _Fail(Exception):
    """This `{` does not start a readable object."""


class _Cut(Exception):
    """A bare value runs into the end of the text: it may have been cut mid-way ("42" -> "4")."""


_WS = re.compile(r"\s*")
_NUM = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_\- ]{0,63}(?=[ \t]*:)")
_BARE = re.compile(r"[^,{}\[\]\"'\n]*")  # an unquoted value runs to the next delimiter or line end
_UNTIL = {q: re.compile(rf"[^{q}\\]*(?:\\.[^{q}\\]*)*", re.DOTALL) for q in "\"'"}  # unrolled: linear
_LITERALS: dict[str, bool | None] = {"true": True, "false": False, "null": None, "none": None}


class _Reader:
    """Reads one object at a time. Beyond JSON it takes ' strings, unquoted keys and values, Python
    literals, trailing and missing commas, unescaped quotes inside strings, and an object left open at
    the very end of the text. `steps` is shared by all attempts on one text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.steps = _MAX_STEPS

    def _tick(self) -> None:
        self.steps -= 1
        if self.steps < 0:
            raise _Fail

    def _skip(self, pos: int) -> int:
        m = _WS.match(self.text, pos)
        return m.end() if m else pos

    def object_at(self, pos: int) -> tuple[dict[str, Value], int]:
        return self._object(pos, 1)

    def _object(self, pos: int, depth: int) -> tuple[dict[str, Value], int]:
        if depth > MAX_DEPTH:
            raise _Fail
        out: dict[str, Value] = {}
        pos = self._skip(pos + 1)
        while True:
            self._tick()
            if pos >= len(self.text):
                if out:  # cut off right after a complete member: close it
                    return out, pos
                raise _Fail
            if self.text[pos] == "}":
                return out, pos + 1
            key, pos = self._key(pos)
            pos = self._skip(pos)
            if pos >= len(self.text) or self.text[pos] != ":":
                raise _Fail
            try:
                out[key], pos = self._value(pos + 1, depth)
            except _Cut:  # keep the complete members of an object cut off by the end of the text
                if out:
                    return out, len(self.text)
                raise _Fail from None
            pos = self._skip(pos)
            if pos >= len(self.text):
                return out, pos
            ch = self.text[pos]
            if ch == "}":
                return out, pos + 1
            if ch == ",":
                pos = self._skip(pos + 1)
            elif ch not in "\"'":  # a quote here is the next key after a forgotten comma
                raise _Fail

    def _array(self, pos: int, depth: int) -> tuple[list[Value], int]:
        if depth > MAX_DEPTH:
            raise _Fail
        out: list[Value] = []
        pos = self._skip(pos + 1)
        while True:
            self._tick()
            if pos >= len(self.text):
                raise _Fail
            if self.text[pos] == "]":
                return out, pos + 1
            try:
                value, pos = self._value(pos, depth)
            except _Cut:
                raise _Fail from None
            out.append(value)
            pos = self._skip(pos)
            if pos < len(self.text) and self.text[pos] == ",":
                pos = self._skip(pos + 1)
            elif pos >= len(self.text) or self.text[pos] != "]":
                raise _Fail

    def _key(self, pos: int) -> tuple[str, int]:
        self._tick()
        if self.text[pos] in "\"'":
            body, pos = self._string(pos)
            key = unescape(body, latex=False)
        else:
            m = _IDENT.match(self.text, pos)
            if m is None:
                raise _Fail
            key, pos = m.group(), m.end()
        return key.strip().lower().replace(" ", "_").replace("-", "_"), pos

    def _value(self, pos: int, depth: int) -> tuple[Value, int]:
        self._tick()
        pos = self._skip(pos)
        if pos >= len(self.text):
            raise _Fail
        ch = self.text[pos]
        if ch == "{":
            return self._object(pos, depth + 1)
        if ch == "[":
            return self._array(pos, depth + 1)
        if ch in "\"'":
            body, end = self._string(pos)
            return Str(body), end
        m = _BARE.match(self.text, pos)
        raw = m.group() if m else ""
        end = pos + len(raw)
        if not raw.strip():
            raise _Fail
        if end == len(self.text) and not raw[-1].isspace():
            raise _Cut
        raw = raw.strip()
        if raw.lower() in _LITERALS:
            return _LITERALS[raw.lower()], end
        return (Num(raw) if _NUM.fullmatch(raw) else Str(raw, quoted=False)), end

    def _string(self, pos: int) -> tuple[str, int]:
        """(body, end) of the string opening at `pos`. An unescaped quote that is not followed by a
        delimiter (Sara's, "yes") is taken as part of the text when a later quote is."""
        self._tick()
        q = self.text[pos]
        first = self._close(pos + 1, q)
        if first < 0:
            raise _Fail
        if self._ends(first, lenient=True):
            return self.text[pos + 1 : first], first + 1
        cand = first
        for _ in range(_MAX_QUOTES):
            cand = self._close(cand + 1, q)
            if cand < 0:
                break
            self._tick()
            if self._ends(cand, lenient=False):
                return self.text[pos + 1 : cand], cand + 1
        return self.text[pos + 1 : first], first + 1

    def _close(self, start: int, q: str) -> int:
        m = _UNTIL[q].match(self.text, start)
        end = m.end() if m else start
        return end if end < len(self.text) and self.text[end] == q else -1

    def _ends(self, quote: int, lenient: bool) -> bool:
        nxt = self._skip(quote + 1)
        if nxt >= len(self.text) or self.text[nxt] in ",:}]":
            return True
        return lenient and self.text[nxt] in "\"'" and "\n" in self.text[quote + 1 : nxt]


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "'": "'", "\\": "\\", "/": "/"}
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
_SURROGATE = re.compile("[\ud800-\udfff]")


def unescape(body: str, latex: bool) -> str:
    """Decode escapes; unknown ones stay as written. With `latex`, `\\frac`, `\\times`, `\\neq`... are
    LaTeX commands a model forgot to double, not a form feed, tab or newline followed by letters."""

    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if len(e) == 5:
            return chr(int(e[1:], 16))
        if (
            latex
            and e in "bfnrt"
            and m.end() < len(body)
            and body[m.end()].isascii()
            and body[m.end()].isalpha()
        ):
            return m.group(0)
        return _ESCAPES.get(e, m.group(0))

    out = _ESCAPE.sub(one, body)
    if _SURROGATE.search(out):  # ensure_ascii writes astral characters as a pair of \u escapes
        out = out.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return out


def _normal_key(key: str) -> str:
    return key.strip().lower().replace(" ", "_").replace("-", "_")


def _as_values(value: object) -> Value:
    """A strict-JSON value in the reader's terms (strings as `Str`; numbers are `Num` already)."""
    if isinstance(value, str):
        return Str(value)
    if isinstance(value, list):
        return [_as_values(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_values(v) for k, v in value.items()}
    return value  # type: ignore[return-value]


_STRICT = json.JSONDecoder(
    object_pairs_hook=lambda pairs: {_normal_key(k): v for k, v in pairs},  # later duplicates win
    parse_float=Num,
    parse_int=Num,
    parse_constant=lambda name: Str(name, quoted=False),
)
_FAST_MAX_CHARS = 4000  # well inside the reader's step budget


def _strict_object(text: str, start: int) -> tuple[dict[str, Value], int] | None:
    """What the reader returns for the object at `start` when that object is strict JSON: with no
    backslash in the text a string's body is its value, and the reader's leniencies never come
    into play. None whenever that is not sure (then the reader reads it)."""
    if "\\" in text or len(text) > _FAST_MAX_CHARS or text.count("{") + text.count("[") > MAX_DEPTH:
        return None
    try:
        obj, end = _STRICT.raw_decode(text, start)
    except ValueError:
        return None
    return (_as_values(obj), end) if isinstance(obj, dict) else None  # type: ignore[return-value]


def find_object(text: str) -> tuple[dict[str, Value], int, int] | None:
    """(object, start, end): the first top-level object with an answer key, else the first non-empty one."""
    start = text.find("{")
    fast = _strict_object(text, start) if start >= 0 else None
    if fast is not None and any(k in fast[0] for k in ANSWER_KEYS):  # the common case, at C speed
        return fast[0], start, fast[1]
    return _find_object(text)


def _find_object(text: str) -> tuple[dict[str, Value], int, int] | None:
    reader, first, pos = _Reader(text), None, 0
    while reader.steps > 0:  # every attempt costs at least one step, so this ends
        start = text.find("{", pos)
        if start < 0:
            break
        try:
            obj, end = reader.object_at(start)
        except _Fail:
            pos = start + 1
            continue
        if any(k in obj for k in ANSWER_KEYS):
            return obj, start, end
        if first is None and obj:
            first = (obj, start, end)
        pos = end
    return first
