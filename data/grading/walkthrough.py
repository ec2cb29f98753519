"""Option-by-option analyses: a reply that labels each option ('A) ...', '(B) ...', 'Option C: ...') and
marks it correct or incorrect commits to the one option it marks correct.

`marked_option` reads such a walkthrough: at least two labelled segments, in option order, each a line
or sentence (or what follows a colon) that opens with its label; a segment is positive when it says 'correct', 'right', 'true' or
'the answer' (and no 'not' before it), negative when it says 'incorrect', 'wrong', 'false', 'not
correct' or 'eliminate'. It commits when exactly one segment is positive, at least one is negative, and
none says both ('partly correct but wrong overall'): else it commits to nothing. Linear-time regexes.
"""

from __future__ import annotations

import re

_LABEL = re.compile(
    r"(?m)(?:^|(?<=[.!?;:])[ \t])[ \t>#*-]{0,20}(?:(?i:option|choice)[ \t]+)?"
    r"(?:\((?P<paren>[A-Z])\)|(?P<letter>[A-Z])[).:])\**(?=[ \t*]|$)"
)
_NEGATIVE = re.compile(
    r"(?i)\b(?:incorrect|wrong|false|inaccurate|invalid|implausible|eliminat\w*|ruled?\s+out"
    r"|not\s+(?:the\s+)?(?:correct|right|true|accurate|valid|answer|best)"
    r"|isn['’]t\s+(?:the\s+)?(?:correct|right|true|accurate|answer))\b"
)
_POSITIVE = re.compile(r"(?i)\b(?:correct|right|true|accurate|the\s+(?:(?:correct|right|best)\s+)?answer)\b")
MAX_SEGMENTS = 26


def marked_option(text: str, valid: str) -> str | None:
    """The one option a walkthrough marks correct (see the module doc), or None."""
    labels: list[tuple[str, int, int]] = []  # (letter, where its segment starts, where its label starts)
    for m in _LABEL.finditer(text):
        letter = m["paren"] or m["letter"]
        if letter not in valid or (labels and letter <= labels[-1][0]):
            continue  # not an option, or out of order: no label of the walkthrough
        labels.append((letter, m.end(), m.start()))
        if len(labels) > MAX_SEGMENTS:
            return None
    if len(labels) < 2:
        return None
    positive: list[str] = []
    negative = 0
    for i, (letter, start, _) in enumerate(labels):
        end = labels[i + 1][2] if i + 1 < len(labels) else _segment_end(text, start)
        segment = text[start:end]
        denied = _NEGATIVE.search(segment) is not None
        affirmed = _POSITIVE.search(_NEGATIVE.sub(" ", segment)) is not None
        if denied and affirmed:
            return None  # a segment says both: no verdict on it, so none on the walkthrough
        if affirmed:
            positive.append(letter)
        negative += denied
    return positive[0] if len(positive) == 1 and negative else None


def _segment_end(text: str, start: int) -> int:
    """Where the last labelled segment ends: at a blank line (a conclusion may follow), or the text's end."""
    blank = text.find("\n\n", start)
    return blank if blank >= 0 else len(text)
