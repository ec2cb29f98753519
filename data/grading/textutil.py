"""Text helpers shared by the graders: bounded cuts, runaway continuations, the last regex match,
`\\boxed{}` contents, and phrases found from the end. Every regex here runs in linear time on hostile input."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator

MAX_CHARS = 10_000  # longer output is cut: an answer is never that far into a reply worth grading
MAX_PHRASES = 20  # how many 'answer is' phrases, from the last, are tried

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")


def clean(text: object) -> str:
    """`text` as a str cut to MAX_CHARS, with lone surrogates (undecodable bytes) replaced.

    Model output may arrive as any object or as a str holding surrogates from a lenient decode; both
    would crash later encoding (JSON, Parquet), so graders start from this.
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    text = text[:MAX_CHARS]
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates become '?'
    return text


# lm-eval stops a generation at "Question:" (gsm8k), "Q:" (gsm8k-cot), "Problem:" (minerva_math) and chat
# end markers: what follows is the model inventing the next few-shot item, whose answer is not this one's.
_RUNAWAY = re.compile(
    r"(?m)^[ \t>*#]*(?:Question|Q|Problem)[ \t]*\d{0,3}[ \t]*:"
    r"|<\|(?:im_start|im_end|endoftext|eot_id|end|user|assistant)\|>|</s>"
)


def cut_runaway(text: str) -> str:
    """`text` up to its first runaway continuation: a line opening 'Question:', 'Q:' or 'Problem:', or a
    chat end marker, once some text came before it (a reply may restate its question first)."""
    for m in _RUNAWAY.finditer(text):
        if text[: m.start()].strip():
            return text[: m.start()]
    return text


def prepare(text: object) -> str:
    """What every grader reads: `clean` (cut, storable), then `cut_runaway`."""
    return cut_runaway(clean(text))


def last_match(matches: Iterator[re.Match[str]]) -> re.Match[str] | None:
    """The last of `matches` (None if there are none), keeping only one in memory."""
    tail = deque(matches, maxlen=1)
    return tail[0] if tail else None


def braced(text: str, start: int) -> tuple[str, int]:
    """The text from `start` up to the brace closing an already-open `{`, and the index after it.

    Braces are matched; an unclosed group runs to the end of `text`.
    """
    depth = 1
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start:i], i + 1
    return text[start:], len(text)


def boxed_contents(text: str) -> str | None:
    """The content of the last `\\boxed{...}` (or `\\fbox{}`), braces matched (unclosed: up to the end)."""
    end = len(text)
    while True:  # from the end backwards: cheap however many boxes a hostile text holds
        start = max(text.rfind("\\boxed", 0, end), text.rfind("\\fbox", 0, end))
        if start < 0:
            return None
        if (m := BOXED.match(text, start)) is not None:
            return braced(text, m.end())[0]
        end = start


def last_phrases(
    pattern: re.Pattern[str], text: str, keywords: tuple[str, ...] = ("answer",), limit: int = MAX_PHRASES
) -> list[re.Match[str]]:
    """The last `limit` matches of `pattern`, last first; each match starts with one of `keywords`
    (lowercase ASCII). Found from the end backwards, so a hostile text that repeats a phrase thousands
    of times costs no more than an honest one (a reply restates its answer a few times at most)."""
    lowered = text.translate(_ASCII_LOWER)  # same length as `text`, unlike str.lower()
    found: list[re.Match[str]] = []
    for keyword in keywords:
        end, hits = len(text), 0
        while hits < limit and (start := lowered.rfind(keyword, 0, end)) >= 0:
            if (m := pattern.match(text, start)) is not None:
                found.append(m)
                hits += 1
            end = start
    return sorted(found, key=lambda m: m.start(), reverse=True)[:limit]
