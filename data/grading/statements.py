"""Where a reply states its answer, in text order: answer phrases ('the answer is', 'Answer:', 'Final
Answer', 'the answer is not ...'), groups of adjacent `\\boxed{}`, the last '####', and a JSON `answer`
field. The graders read the *last* statement that holds an answer (the README's extraction policy);
this module only finds them.

Every finder is bounded: phrases are searched from the end for at most MAX_PHRASES hits, boxes are
read by jumping past each one, and bodies are cut to BODY_CHARS, so hostile text costs linear time.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from typing import Literal

from data.grading.textutil import braced, last_phrases

BODY_CHARS = 600  # how much text after a phrase may hold its answer
MAX_BOXES = 64  # boxes kept, from the last one back
StatementKind = Literal["phrase", "boxed", "hashes", "json", "quoted"]

_PHRASE = re.compile(
    r"(?i)answer\**"
    r"(?:\s*(?P<neg>is\s+not|isn['’]t|is\s+(?:definitely|certainly|clearly|surely|probably|likely)\s+not"
    r"|cannot\s+be|can['’]t\s+be|(?:would|should|will|must)\s+not\s+be)\b"
    r"|\s*(?:is|would\s+be|should\s+be|will\s+be|must\s+be)\b\**[ \t]*:?"
    r"|\s*\**[ \t]*[:=]\**"
    r"|(?=[ \t]*(?:\$|\\\(|\\\[|\\boxed|\\fbox))"  # 'Answer $9$', 'Answer \[ 9 \]': no colon
    r"|(?P<head>[ \t*]*\n))"  # a heading line: '**Final Answer**' then the answer below
)
_WORD_BEFORE = re.compile(r"(?i)\w\Z")
# 'Agent 2's answer is', 'your answer:', 'the previous answer is', 'to check the answer:', 'if the answer is'
# quote an answer that is not (yet) this reply's.
_NOT_MINE = re.compile(
    r"(?i)(?:['’]s|\b(?:their|your|his|her|its|other|others['’]?|agents['’]?|previous|earlier|old|original"
    r"|initial|first|prior|wrong|incorrect|proposed|given|check|verify|confirm|find|get|reach|compute"
    r"|calculate|double-check|if|suppose|assume|assuming|whether|unless|when)(?:\s+(?:the|my|our|this|that))?)"
    r"\s+(?:final\s+|correct\s+)?\Z"
)
_SUPPOSING = re.compile(r"(?i)\b(?:if|suppose|assume|assuming|whether|unless|when)\b")
_HEADING_PREFIX = re.compile(r"(?i)[\s*#_>]*(?:final\s+)?\**[ \t]*\Z")
_NEGATED_BODY = re.compile(
    r"(?i)[\s*:]*(?:(?:definitely|certainly|clearly|surely|probably|likely|just)\s+)?(?:not|never|neither)\b"
)
_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
# What may stand between boxes that together give one answer: '\boxed{1}, \boxed{2}', '$x=\boxed{2}$ or
# $x=\boxed{3}$', '\boxed{1}\boxed{2}'.
_JOIN = re.compile(
    r"(?:\s|\$|\\[(),;:!\] ]|\\q?quad|[,;&.]|\b(?:and|or)\b|\\(?:text|mbox)\s*\{\s*(?:and|or|,)?\s*\}"
    r"|[A-Za-z](?:_\{?\w{1,3}\}?)?\s*=)*"
)
_MAX_JOIN = 80
_JSON_KEY = re.compile(r"[\"'](?:final_)?answer[\"']\s*:\s*")
_JSON_STRING = re.compile(r"\"(?:[^\"\\\n]|\\.){0,600}\"|'(?:[^'\\\n]|\\.){0,600}'")
_JSON_RAW = re.compile(r"[^,}\n]{0,600}")
_HASHES_LINE = re.compile(r"[ \t]*\n?([^\n]*)")
# A correction right after an answer ('The answer is B. Wait, no, C.'): what follows it is a new answer.
# SELF_CORRECTION's words say so outright; 'actually' and 'rather' may just go on talking.
SELF_CORRECTION = re.compile(
    r"(?i)\b(?:wait|no|nope|sorry|oops|correction|i\s+mean|make\s+that|scratch\s+that)\b"
)
REVISION = re.compile(
    r"(?i)\b(?:wait|actually|no|nope|sorry|oops|correction|rather|i\s+mean|make\s+that|scratch\s+that"
    r"|on\s+second\s+thought)\b[\s,.:;!—–-]*"
    r"(?:(?:it['’]?s|it\s+is|it\s+should\s+be|it\s+must\s+be|should\s+be|make\s+it|the\s+answer\s+is)\s+)?"
)
# Words after which a later boxed answer replaces an earlier, different one (else: two answers).
MOVES_ON = re.compile(
    r"(?i)\b(?:wait|actually|no|sorry|oops|correction|mistake|error|instead|rather|recheck\w*|re-check\w*"
    r"|double-check\w*|however|but|so|thus|therefore|hence|then|finally|overall|altogether|answer)\b"
)


@dataclass(frozen=True)
class Statement:
    """One place where a reply states an answer. `body` is the text holding it: for a phrase, what
    follows the phrase (BODY_CHARS at most); for '####' its line; for JSON the field's value; for boxes
    the last box's content, with every box of the group in `parts`. `negated`: 'the answer is not ...'.
    `listed`: a JSON value that is a list, object or null, i.e. no single answer."""

    kind: StatementKind
    start: int
    end: int
    body: str
    parts: tuple[str, ...] = ()
    joins: tuple[str, ...] = ()  # the text between a group's boxes ('$ or $x=')
    negated: bool = False
    listed: bool = False
    supposed: bool = (
        False  # a quoted phrase that supposes an answer ('if the answer is'): its sentence says nothing
    )


def states(statement: Statement) -> bool:
    """Whether a statement may give this reply's answer (not a denial, not a quote)."""
    return not statement.negated and statement.kind != "quoted"


def statements(text: str) -> list[Statement]:
    """Every answer statement in `text` (see the module doc), in text order."""
    found = phrases(text) + boxed_groups(text) + _hashes(text) + _json_fields(text)
    return sorted(found, key=lambda s: (s.start, s.end))


def phrases(text: str) -> list[Statement]:
    """The answer phrases of `text` (the last MAX_PHRASES), as statements, in no particular order; those
    that quote an answer not this reply's ('Agent 2's answer is', 'if the answer is') as kind 'quoted'."""
    found = []
    for m in last_phrases(_PHRASE, text):
        if _WORD_BEFORE.search(text, max(0, m.start() - 1), m.start()):
            continue  # 'reanswer'
        if (quote := _NOT_MINE.search(text, max(0, m.start() - 40), m.start())) is not None:
            supposed = _SUPPOSING.search(quote[0]) is not None
            body = text[m.end() : m.end() + BODY_CHARS]
            found.append(Statement("quoted", m.start(), m.end(), body, supposed=supposed))
            continue  # someone else's answer, or one supposed: never this reply's
        end = m.end()
        if m["head"] is not None:
            line_start = text.rfind("\n", 0, m.start()) + 1
            if not _HEADING_PREFIX.match(text, line_start, m.start()):
                continue  # 'the answer\n' inside a sentence is no heading
            end = len(text) - len(text[end:].lstrip())
        body = text[end : end + BODY_CHARS]
        negated = m["neg"] is not None or _NEGATED_BODY.match(body) is not None
        found.append(Statement("phrase", m.start(), end, body, negated=negated))
    return found


def unquoted(text: str, found: list[Statement]) -> str:
    """`text` with the value after each quoted phrase blanked out (same length), for readers that look
    past the statements: 'Agent 2's answer is 20.' must not read as answering 20."""
    chars = None
    for statement in found:
        if statement.kind != "quoted":
            continue
        ends = _SENTENCE_END if statement.supposed else _VALUE_END
        stop = ends.search(text, statement.end, statement.end + BODY_CHARS)
        end = stop.start() if stop is not None else min(len(text), statement.end + BODY_CHARS)
        chars = chars if chars is not None else list(text)
        chars[statement.end : end] = " " * (end - statement.end)
    return text if chars is None else "".join(chars)


_VALUE_END = re.compile(r"[,;!?\n]|\.(?=\s|$)")
_SENTENCE_END = re.compile(r"[!?\n]|\.(?=\s|$)")


def _unbox(content: str) -> str:
    """`\\boxed{\\boxed{5}}` -> `5`: a box that only holds a box gives that box's content."""
    for _ in range(8):
        inner = content.strip()
        m = _BOX.match(inner)
        if m is None:
            break
        unboxed, after = braced(inner, m.end())
        if after != len(inner):
            break
        content = unboxed
    return content


def boxed_groups(text: str) -> list[Statement]:
    """The boxes of `text` (the last MAX_BOXES), adjacent ones grouped: one statement per group."""
    boxes: deque[tuple[int, int, str]] = deque(maxlen=MAX_BOXES)
    pos = 0
    while (m := _BOX.search(text, pos)) is not None:
        content, after = braced(text, m.end())
        boxes.append((m.start(), after, _unbox(content)))
        pos = after  # past the whole box: nested boxes are its content, and the scan stays linear
    groups: list[list[tuple[int, int, str]]] = []
    for box in boxes:
        if groups and _joins(text, groups[-1][-1][1], box[0]):
            groups[-1].append(box)
        else:
            groups.append([box])
    return [
        Statement(
            "boxed",
            g[0][0],
            g[-1][1],
            g[-1][2],
            parts=tuple(b[2] for b in g),
            joins=tuple(text[a[1] : b[0]] for a, b in zip(g, g[1:], strict=False)),
        )
        for g in groups
    ]


def _joins(text: str, end: int, start: int) -> bool:
    return start - end <= _MAX_JOIN and _JOIN.fullmatch(text, end, start) is not None


def _hashes(text: str) -> list[Statement]:
    """The last '####' (GSM8K's answer line), as a statement holding the rest of its line."""
    marker = text.rfind("####")
    if marker < 0:
        return []
    m = _HASHES_LINE.match(text, marker + 4)
    assert m is not None  # the pattern matches the empty string
    return [Statement("hashes", marker, marker + 4, m[1][:BODY_CHARS])]


def _json_fields(text: str) -> list[Statement]:
    """Each `"answer": value` (or `final_answer`) of a JSON reply, raw or broken, as a statement."""
    found = []
    for m in deque(_JSON_KEY.finditer(text), maxlen=8):
        value_at = m.end()
        head = text[value_at : value_at + 4]
        if head[:1] in ("[", "{") or head.lower() == "null":
            found.append(Statement("json", m.start(), value_at, "", listed=True))
            continue
        quoted = _JSON_STRING.match(text, value_at)
        if quoted is not None:
            body = _json_string(quoted[0])
            end = quoted.end()
        else:
            raw = _JSON_RAW.match(text, value_at)
            assert raw is not None  # the pattern matches the empty string
            body, end = raw[0].strip().strip("\"'"), raw.end()
        found.append(Statement("json", m.start(), end, body, negated=_NEGATED_BODY.match(body) is not None))
    return found


def _json_string(literal: str) -> str:
    """The value of a bounded string literal. JSON escapes are undone, except where a backslash starts a
    LaTeX macro: models write `\\frac` or `\\neq` unescaped, which JSON would read as a form feed or a
    newline."""
    body = literal[1:-1]
    if literal.startswith("'"):
        return body
    return _ESCAPE.sub(lambda m: _UNESCAPED.get(m[1]) or chr(int(m[1][1:], 16)), body)


_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|[\\\"/]|[nrtbf](?![A-Za-z]))")
_UNESCAPED = {"\\": "\\", '"': '"', "/": "/", "n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}
