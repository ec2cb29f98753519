"""Read an agent's reply: the JSON object it was asked for, else the last `\\boxed{}`, else an
"Answer: ..." line, plus a confidence from 1 to 5.

Model output is hostile input: the text is truncated first, the JSON reader (`debate.lenient_json`) caps
its depth and work, braces are matched with a depth cap and no recursion, every regex runs in linear
time, and nothing is ever evaluated. `parse_reply` never raises.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from actors.frozen import quick_init
from debate.lenient_json import ANSWER_KEYS, MAX_DEPTH, Num, Str, Value, find_object, unescape

_MAX_BOXED = 16  # `\boxed{` occurrences tried, from the last one back
_MAX_LINE = 300  # an "Answer: ..." capture longer than this is cut
_CONFIDENCE_KEYS = ("confidence",)
_REASONING_KEYS = ("reasoning", "rationale", "explanation")
_KNOWN_KEYS = frozenset(ANSWER_KEYS + _CONFIDENCE_KEYS + _REASONING_KEYS)
_NO_ANSWER = frozenset({"", "null", "none", "n/a"})


@quick_init
@dataclass(frozen=True)
class Reply:
    """What one reply says. `answer` is the text as written (stripped, not canonicalised: graders do
    that); `source` is how it was found: "json" | "boxed" | "answer_line" | "none". `reasoning` is the
    object's reasoning field, else the prose around the object, else (no object) the whole reply.
    `extra` holds the object's other keys (lower-cased) with scalar or list-of-scalar values."""

    answer: str | None
    confidence: int | None
    reasoning: str
    source: str
    extra: dict[str, object] = field(default_factory=dict)


def parse_reply(text: str, max_chars: int = 20000) -> Reply:
    """Read `text` (only its first `max_chars` characters). Never raises."""
    text = text[: max(0, max_chars)]
    answer: str | None = None
    confidence: int | None = None
    reasoning, source, extra = text.strip(), "none", {}
    found = find_object(text)
    if found is not None:
        obj, start, end = found
        answer = _json_answer(_first(obj, ANSWER_KEYS))
        confidence = _json_confidence(_first(obj, _CONFIDENCE_KEYS))
        reasoning = _json_reasoning(_first(obj, _REASONING_KEYS)) or _prose(text[:start] + "\n" + text[end:])
        extra = {k: v for k, raw in obj.items() if k not in _KNOWN_KEYS and (v := _plain(raw)) is not None}
        source = "json" if answer is not None else "none"
    if answer is None and (answer := _last_boxed(text)) is not None:
        source = "boxed"
    if answer is None and (answer := _answer_line(text)) is not None:
        source = "answer_line"
    if confidence is None:
        confidence = _confidence_line(text)
    return Reply(answer=answer, confidence=confidence, reasoning=reasoning, source=source, extra=extra)


# -- fields of the object --------------------------------------------------------------------------
def _first(obj: dict[str, Value], keys: tuple[str, ...]) -> Value:
    return next((obj[k] for k in keys if k in obj), None)


def _json_answer(value: Value) -> str | None:
    if isinstance(value, Str):
        text = (unescape(value.body, latex=True) if value.quoted else value.body).strip()
        return None if text.lower() in _NO_ANSWER else text
    if isinstance(value, Num):
        return value.text  # as written: "18.0" stays "18.0"
    if isinstance(value, bool):
        return "true" if value else "false"
    return None


def _json_confidence(value: Value) -> int | None:
    if isinstance(value, Num):
        return _confidence(value.text)
    if isinstance(value, Str):
        return _confidence(unescape(value.body, latex=False) if value.quoted else value.body)
    return None


def _json_reasoning(value: Value) -> str:
    if isinstance(value, Str):
        return unescape(value.body, latex=False).strip() if value.quoted else value.body
    if isinstance(value, list):  # reasoning written as a list of steps
        return "\n".join(s for v in value if isinstance(v, Str) and (s := _json_reasoning(v)))
    return ""


def _plain(value: Value) -> object:
    """A JSON value as a plain Python scalar (or list of scalars); None for anything else."""
    if isinstance(value, list):
        items = [_plain(v) for v in value if not isinstance(v, (list, dict))]
        return items if len(items) == len(value) and None not in items else None
    if isinstance(value, Str):
        return unescape(value.body, latex=False) if value.quoted else value.body
    if isinstance(value, Num):
        if re.fullmatch(r"[+-]?\d{1,100}", value.text):
            return int(value.text)
        number = float(value.text)  # the reader validated the token; huge exponents give inf
        return number if math.isfinite(number) else value.text
    return value if isinstance(value, bool) else None


_FENCE = re.compile(r"```[A-Za-z]*")
_JSON_LABEL = re.compile(r"(?i)^\s*json\s*:")


def _prose(text: str) -> str:
    """The text around the object, without code fences or a leading "JSON:" label."""
    return _JSON_LABEL.sub("", _FENCE.sub("", text)).strip()


# -- fallbacks in plain text -----------------------------------------------------------------------
_BOXED = re.compile(r"\\(?:boxed|fbox)[ \t]*\{")
_BRACE = re.compile(r"\\.|[{}]", re.DOTALL)  # `\{` and `\}` are literal braces, not nesting


def _last_boxed(text: str) -> str | None:
    """The content of the last `\\boxed{...}` whose braces balance, nested braces included."""
    starts = [m.end() for m in _BOXED.finditer(text)]
    for start in reversed(starts[-_MAX_BOXED:]):
        depth = 1
        for m in _BRACE.finditer(text, start):
            token = m.group()
            depth += 1 if token == "{" else -1 if token == "}" else 0
            if depth > MAX_DEPTH:
                break
            if depth == 0:
                content = text[start : m.start()].strip()
                if content:
                    return content
                break
    return None


# "Answer: 42", "The final answer is 42", "**Answer:** B", and `"answer": "B"` in JSON too broken to read
_ANSWER = re.compile(r"(?i)\banswer(\"|')?[ \t*]*(?:is\b|[:=])[ \t*]*")
_CONF_LINE = re.compile(
    r"(?i)\bconfidence[\"' \t*]*(?:is\b|[:=])[\"' \t*]*(?:level[ \t]*)?"
    r"(\d{1,3}(?:\.\d{1,3})?[ \t]*(?:(?:/|out of)[ \t]*\d{1,3})?)"
)


def _answer_line(text: str) -> str | None:
    """The last readable "answer is / answer:" capture, cleaned of markdown and a final period."""
    for m in reversed(list(_ANSWER.finditer(text))):
        # only the marker is matched, so "answer" twice on one line gives two candidates
        window = text[m.end() : m.end() + _MAX_LINE + 1]
        rest = window.lstrip()  # "Answer:\n42": the answer may sit on the next line
        start = m.end() + len(window) - len(rest)
        value = rest.split("\n", 1)[0][:_MAX_LINE]
        runs_to_end = start + len(value) == len(text)
        value = value.strip()
        if m.group(1):  # a quoted key: JSON-ish, so the value ends at its quote or a delimiter
            if value and value[0] in "\"'":
                close = value.find(value[0], 1)
                if close < 0:  # the string was cut off: whatever it held is not the whole answer
                    continue
                value = value[1:close]
            elif value[:1] in ("[", "{"):  # a list or an object is not one answer
                continue
            else:
                parts = re.split(r"[,}]", value, maxsplit=1)
                if len(parts) == 1 and runs_to_end:  # a bare value cut off by the end of the text
                    continue
                value = parts[0]
        value = value.split(". ", 1)[0]  # "The answer is (C). Because..." ends with its sentence
        value = value.strip().strip("*").strip().rstrip(".").strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
            value = value[1:-1].strip()
        if value.lower() not in _NO_ANSWER:
            return value
    return None


def _confidence_line(text: str) -> int | None:
    """The last readable "Confidence: 4" (or 4/5, 4 out of 5) in the text."""
    for m in reversed(list(_CONF_LINE.finditer(text))):
        if (value := _confidence(m.group(1))) is not None:
            return value
    return None


_CONFIDENCE = re.compile(r"(?i)(\d{1,3}(?:\.\d{1,3})?)[ \t]*(?:(?:/|out of)[ \t]*(\d{1,3}))?")


def _confidence(text: str) -> int | None:
    """4, "4", "4/5", "4 out of 5", 4.0 -> 4; anything else, or outside 1..5, -> None."""
    m = _CONFIDENCE.fullmatch(text.strip()[:32])
    if m is None or (m.group(2) is not None and int(m.group(2)) != 5):
        return None
    value = float(m.group(1))
    return int(value) if value.is_integer() and 1 <= value <= 5 else None
