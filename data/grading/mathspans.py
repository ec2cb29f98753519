"""LaTeX in model text: its math spans, and the one math answer a clause commits to.

Spans are `$...$` (one line, or math a line break splits: '$x =\\n 3$', not '$5 and then\\nanother $6'),
`$$...$$`, `\\(...\\)` and `\\[...\\]` (display math may run over lines); an escaped `\\$` neither opens
nor closes one. A clause commits to the span (or spans joined by 'and', ',': a set; by 'or' only when
each gives one variable a value, else a hedge) it opens with; else, in prose, to what follows its last
'is'/'='/'are' ('the largest $n$ is 34' is 34), or to its only item (a span or a number); a clause of
bare LaTeX ('x^2+1') is its own answer. Anything else names several answers or none. The scan is
linear: each closing delimiter that is missing is looked for once, a split `$...$` within 200 characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from data.grading.number_text import NUMBER
from data.grading.outcome import AMBIGUOUS, NO_ANSWER
from data.grading.textutil import last_match

MAX_SPANS = 400
_MAX_BROKEN = 200  # how far a `$...$` split over lines may run
_OPENER = re.compile(r"\\\\|\\\$|\$\$|\$|\\\(|\\\[")
_CLOSER = {"$$": "$$", "$": "$", "\\(": "\\)", "\\[": "\\]"}
_LEAD = re.compile(r"[\s*:\"'`]*")
_COPULA = re.compile(r"(?i)\b(?:is|are|equals|equal\s+to|be|becomes|gives|yields)\b|(?<![<>!=\\])=(?!=)")
_SENTENCE_END = re.compile(r"[.?](?=\s|$)|!(?=\s+[A-Z])|\n[ \t]*\n|;|\n(?=[ \t]*\S)")  # '5!' is math
_MACRO = re.compile(
    r"\\(?:text\w*|mbox|mathrm|operatorname)\s*\{[^{}]{0,80}\}|\\(?:begin|end)\s*\{[^{}]{0,20}\}|\\[A-Za-z]+"
)
# A word of prose: 3 letters or more, a short English word, or a word with an apostrophe ('it's').
_PROSE_WORD = re.compile(
    r"(?<![A-Za-z])(?:[A-Za-z]{3,}|(?i:it|is|so|to|of|in|on|at|be|we|me|my|an|if|as|by|us)(?![A-Za-z])"
    r"|[A-Za-z]+['’][A-Za-z]+)"
)
_MATHY = re.compile(r"[0-9\\=+\-*/^_()\[\]{}<>|!]")
_JOINER = re.compile(r"(?i)\s*(?:,\s*(?:and\s+|or\s+)?|and|or|\\text\s*\{\s*(?:and|or)\s*\})\s*")
_OR = re.compile(r"(?i)\bor\b|\\text\s*\{\s*or\s*\}")
_ASSIGNED = re.compile(r"\s*([A-Za-z])(?:_\{?\w{1,3}\}?)?\s*=(?!=)")
_OPENING_WORD = re.compile(r"(?i)\s*(?:so|thus|hence|therefore|then|finally)\b[,:]?")
_WORD = re.compile(r"[A-Za-z][A-Za-z \-]{0,30}")
# One-word clauses that are no answer: refusals, and verdicts on an answer ('our answer is correct').
_REFUSALS = frozenset(
    {"none", "unknown", "idk", "null", "n/a", "nan", "nothing", "no", "na", "correct", "right", "wrong"}
    | {"incorrect", "below", "above", "follows", "clear", "unclear", "obvious", "same", "different"}
    | {"consistent", "confirmed", "verified", "valid", "invalid"}
)
Read = tuple[str | None, str]


@dataclass(frozen=True)
class Span:
    """One math span: `start`..`end` in the text, delimiters included; `content` without them."""

    start: int
    end: int
    content: str


def spans(text: str) -> list[Span]:
    """The math spans of `text`, in order (MAX_SPANS at most)."""
    found: list[Span] = []
    missing: set[str] = set()  # closers not found after some opener: not after any later one either
    pos = 0
    while len(found) < MAX_SPANS and (m := _OPENER.search(text, pos)) is not None:
        opener, pos = m[0], m.end()
        if opener in ("\\\\", "\\$") or _CLOSER[opener] in missing and opener != "$":
            continue
        closer = _CLOSER[opener]
        limit = text.find("\n", pos) if opener == "$" else -1
        close = _find_closer(text, closer, pos, len(text) if limit < 0 else limit)
        if close < 0 and limit >= 0:
            close = _broken_line_closer(text, pos, limit)
        if close < 0:
            if opener != "$":
                missing.add(closer)
            continue
        if text[pos:close].strip():
            found.append(Span(m.start(), close + len(closer), text[pos:close]))
            pos = close + len(closer)
    return found


def _broken_line_closer(text: str, pos: int, newline: int) -> int:
    """The `$` closing a `$` opened at `pos` whose math a line break splits ('$x =\n 3$'): within the
    paragraph and _MAX_BROKEN characters, after something on the next line, around no prose (so
    '$5 and then\nanother $6' stays two dollar amounts); -1 if there is none."""
    end = text.find("\n\n", pos, pos + _MAX_BROKEN)
    close = _find_closer(text, "$", newline, end if end >= 0 else min(len(text), pos + _MAX_BROKEN))
    if close < 0 or not text[pos:newline].strip() or text[close - 1].isspace():
        return -1
    return -1 if _PROSE_WORD.search(_MACRO.sub(" ", text[pos:close])) else close


def _find_closer(text: str, closer: str, start: int, end: int) -> int:
    """The next `closer` in text[start:end] that no backslash escapes, or -1."""
    while (at := text.find(closer, start, end)) >= 0:
        if closer != "$" or text[at - 1] != "\\":
            return at
        start = at + 1
    return -1


def masked(text: str, found: list[Span], offset: int = 0) -> str:
    """`text` with every span blanked out (same length), so prose can be searched around the math."""
    chars = list(text)
    for span in found:
        for i in range(max(0, span.start - offset), min(len(text), span.end - offset)):
            chars[i] = " "
    return "".join(chars)


def clause_answer(text: str) -> Read:
    """The answer the first clause of `text` commits to (see the module doc)."""
    found = spans(text)
    lead = _LEAD.match(text)
    assert lead is not None  # the pattern matches the empty string
    plain = masked(text, found)
    end = _SENTENCE_END.search(plain, lead.end())
    stop = end.start() if end is not None else len(text)
    inside = [s for s in found if s.start < stop]
    return _items_answer(text[: max(stop, inside[-1].end if inside else 0)], inside, plain[:stop], lead.end())


def _items_answer(clause: str, found: list[Span], plain: str, lead: int = 0) -> Read:
    """What a clause (with its spans `found` and its text outside them `plain`) commits to."""
    items = sorted(
        [(s.start, s.end, s.content.strip()) for s in found]
        + [(m.start(), m.end(), m[0].strip()) for m in NUMBER.finditer(plain)],
    )
    last_item = items[-1][0] if items else -1
    copula = last_match(c for c in _COPULA.finditer(plain, 0, max(0, last_item)) if c.end() <= last_item)
    if copula is not None and (found or _PROSE_WORD.search(_MACRO.sub(" ", plain))):
        return _item_run(clause, [i for i in items if i[0] >= copula.end()])
    if found and found[0].start == lead:
        return _item_run(clause, items)
    if not found and not _PROSE_WORD.search(_MACRO.sub(" ", plain)):
        opening = _OPENING_WORD.match(clause)
        bare = clause[opening.end() if opening else 0 :].strip().rstrip(".").strip()
        if "\\boxed" in bare or "\\fbox" in bare:
            return None, NO_ANSWER  # an empty box
        if _OR.search(bare):
            return alternatives(_OR.split(bare))  # 'x = 3 or x = 5', '3 or 5'
        if _MATHY.search(bare) or re.fullmatch(r"[A-Za-z]{1,2}", bare):
            return (bare, "") if bare.casefold() not in _REFUSALS else (None, NO_ANSWER)
    if len(items) == 1:
        return items[0][2], ""
    if not items:
        word = clause.strip().strip(".*").strip()
        if _WORD.fullmatch(word) and len(word.split()) == 1 and word.casefold() not in _REFUSALS:
            return word, ""  # a word answer ('Evelyn', 'even')
        return None, NO_ANSWER
    if _JOINER.fullmatch(clause, items[0][1], items[1][0]) is not None:
        return _item_run(clause, items)
    return None, AMBIGUOUS


def _item_run(clause: str, items: list[tuple[int, int, str]]) -> Read:
    """The first item, with the items joined to it by 'and', 'or' or ',' (a set); items offered as
    alternatives ('or') must be the values of one variable (`alternatives`)."""
    parts, last, offered = [items[0][2]], items[0], False
    for item in items[1:]:
        joiner = _JOINER.fullmatch(clause, last[1], item[0])
        if joiner is None:
            break
        offered = offered or _OR.search(joiner[0]) is not None
        parts.append(item[2])
        last = item
    return alternatives(parts) if offered else (",".join(parts), "")


def alternatives(parts: list[str]) -> Read:
    """Answers joined by 'or': a set when each gives the same variable a value ('$x = 2$ or $x = 3$', the
    roots of an equation); else a hedge between answers ('$2$ or $3$'), ambiguous."""
    names = {m[1] for part in parts if (m := _ASSIGNED.match(part)) is not None}
    if len(names) == 1 and all(_ASSIGNED.match(part) for part in parts):
        return ",".join(part.strip() for part in parts), ""
    return None, AMBIGUOUS


def sentence_items(text: str) -> list[tuple[int, int]]:
    """The sentences of `text` (start, end), split outside math spans, in order."""
    plain = masked(text, spans(text))
    bounds, start = [], 0
    for m in _SENTENCE_END.finditer(plain):
        bounds.append((start, m.start()))
        start = m.end()
    bounds.append((start, len(text)))
    return bounds
