"""Option letters in model text: where a reply says which option it picks, and which it rules out.

A `Mention` is one such place: a *positive* one ('The answer is (C)', 'Option C is correct', 'I'd go
with C', "it's C", `\\boxed{C}`) or a *negative* one ('not B', 'B is wrong', 'eliminate B', 'the answer
is not B'). A mention may name several letters ('B or C', 'A and B are wrong'). The article 'A' and
the pronoun 'I' ('A careful reading', 'I think') are never taken for options; a lowercase letter counts
only where it is set off ('(c)', 'answer: c.').
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from data.grading.statements import Statement

# After a bare "A"/"I", these words mean the letter is the subject ("A is correct"), not prose.
_LETTER_VERBS = frozenset(
    {
        "is",
        "was",
        "seems",
        "appears",
        "and",
        "or",
        "nor",
        "but",
        "because",
        "since",
        "looks",
        "would",
        "should",
    }
    | {"fits", "fails", "are", "were", "has"}
)
_WORD_AFTER = re.compile(r"[ \t]+([a-z]+)")
_AFTER_PHRASE = re.compile(
    r"(?i)[\s:*\"'=]*(?:(?:clearly|definitely|certainly|probably|likely|obviously|indeed|actually|most\s+likely)\s+)?"
    r"(?:(?:option|choice|letter)\b[\s:*]*)?"
    r"(?P<open>[(\[{])?\**(?P<letter>[a-z])\**(?P<close>[)\]}])?(?![a-z0-9'’])"
)
_SET_OFF_AFTER = frozenset(("", ".", ",", ";", ":", "\n", "*", '"', "'", ")", "!"))
_L = r"(?:(?:option|choice)\s+)?(?:[(\[][A-Za-z][)\]]|(?<![\w'’])[A-Z](?![\w'’]))"
_LIST = rf"(?P<list>{_L}(?:\s*(?:,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+|\s*/\s*){_L}){{0,6}})"
_GOOD = r"(?:correct|right|true|accurate|best|the\s+answer|the\s+(?:correct|right|best)\s+(?:one|answer|option|choice))"
_BAD = (
    r"(?:wrong|incorrect|false|invalid|inaccurate|implausible|unlikely|impossible|not\b|out\b|eliminated"
    r"|ruled\s+out|excluded)"
)
_BE = r"(?:is|are|was|were|seems?|appears?|would\s+be|must\s+be)"
_ADVERB = r"(?:(?:also|both|all|clearly|definitely|obviously|certainly|indeed|then|therefore)\s+)?"
_POSITIVE = [
    re.compile(rf"{_LIST}\s+{_BE}\s+{_ADVERB}(?:to\s+be\s+)?(?:the\s+)?(?:most\s+)?{_GOOD}\b"),
    re.compile(
        rf"(?i:\b(?:correct|right|best|final|true)\s+(?:option|choice|letter|one)\s*(?:is|:|=|would\s+be|"
        rf"should\s+be|must\s+be)\s*\**){_LIST}"
    ),
    re.compile(
        rf"(?i:\b(?:I|we)(?:['’]d|\s+would|\s+will|['’]ll)?\s+(?:choose|pick|select|go\s+with|opt\s+for)"
        rf"\s+){_LIST}"
    ),
    re.compile(rf"(?i:\bmy\s+(?:final\s+)?(?:choice|pick|selection)\s+is\s+){_LIST}"),
    re.compile(rf"(?i:\bit(?:['’]s|\s+is|\s+must\s+be|\s+should\s+be)\s+){_LIST}(?=\s*(?:[.,;:!)]|$))"),
    re.compile(
        rf"(?i:\b(?:so|thus|therefore|hence)\b[,:]?\s+(?:(?:it['’]s|it\s+is|we\s+get|I\s+get|we\s+have)\s+)?)"
        rf"{_LIST}(?=\s*(?:[.!)]|$))"
    ),
]
_NEGATIVE = [
    re.compile(rf"{_LIST}\s+{_BE}\s+{_ADVERB}{_BAD}"),
    re.compile(rf"{_LIST}\s+(?:can|could)\s+be\s+(?:ruled\s+out|eliminated|excluded|discarded)"),
    re.compile(
        rf"(?i:\b(?:eliminate|eliminating|rule\s+out|ruling\s+out|exclude|excluding|discard|reject|rejecting)"
        rf"\s+){_LIST}"
    ),
    re.compile(rf"(?i:\b(?:not|neither|nor)\s+){_LIST}"),
]
_TOKEN = re.compile(r"[(\[]?([A-Za-z])[)\]]?$")
_SEVERAL = re.compile(
    r"(?i)\**[ \t]*(?:,|/|&|\bor\b|\band\b|\band/or\b)[ \t]*(?:(?:option|choice)\s+)?"
    r"(?P<open>[(\[])?\**(?P<letter>[a-z])\**(?P<close>[)\]])?(?![\w'’])"
)


@dataclass(frozen=True)
class Mention:
    """Letters a reply picks (`positive`) or rules out, at `start`..`end` of its text."""

    start: int
    end: int
    letters: tuple[str, ...]
    positive: bool
    several: bool = False  # a JSON list: several answers, whatever they are


def is_prose(text: str, letter: str, end: int, set_off: bool) -> bool:
    """A bare 'A' or 'I' followed by a lowercase word is the article or the pronoun, not an option."""
    if letter not in "AI" or set_off:
        return False
    after = _WORD_AFTER.match(text, end, end + 40)
    return after is not None and after[1] not in _LETTER_VERBS


def letter_at(text: str, start: int, valid: str) -> tuple[str | None, int]:
    """The option letter right at `start` (after markup and 'option'), as an answer phrase gives it:
    (letter, end); ('', end) when it names a letter outside `valid`; (None, start) when there is none."""
    m = _AFTER_PHRASE.match(text, start, start + 60)
    if m is None:
        return None, start
    letter, set_off = m["letter"], bool(m["open"] or m["close"])
    # A lowercase letter counts only when set off ("(c)", "c.", end): else it is a word ("a bit").
    if letter.islower() and not (set_off or text[m.end() : m.end() + 1] in _SET_OFF_AFTER):
        return None, start
    if is_prose(text, letter, m.end(), set_off):
        return None, start
    return (letter.upper() if letter.upper() in valid else ""), m.end()


def statement_mention(text: str, statement: Statement, valid: str) -> Mention | None:
    """What an answer statement says about the options: its letter (or letters), picked or ruled out."""
    if statement.kind == "quoted":
        return None
    if statement.kind == "boxed":
        found = {_whole(part) for part in statement.parts} - {None}
        picked = tuple(sorted(str(letter) for letter in found))
        return Mention(statement.start, statement.end, picked, True) if picked else None
    if statement.listed:
        return Mention(statement.start, statement.end, (), True, several=True)
    body = statement.body
    if statement.negated:
        body = re.sub(r"(?i)^[\s*:]*(?:\w+\s+)?(?:not|never|neither)\b", "", body)
    letter, end = letter_at(body, 0, valid)
    if letter is None:
        return None
    letters = [letter or "?"]
    several = _SEVERAL.match(body, end)
    set_off = several is not None and (several["letter"].isupper() or several["open"] or several["close"])
    if several is not None and set_off and several["letter"].upper() in valid:
        letters.append(several["letter"].upper())
    return Mention(statement.start, statement.end, tuple(letters), not statement.negated)


def _whole(content: str) -> str | None:
    content = re.sub(r"\\text\w*\s*\{([^{}]{0,40})\}", r"\1", content).strip().strip("*$ .")
    m = _TOKEN.match(content)
    return m[1].upper() if m is not None else None


def prose_mentions(text: str) -> list[Mention]:
    """The positive and negative mentions written in prose ('Option C is correct', 'B is wrong')."""
    found = []
    for patterns, positive in ((_POSITIVE, True), (_NEGATIVE, False)):
        for pattern in patterns:
            for m in pattern.finditer(text):
                letters = tuple(
                    t[1].upper()
                    for t in re.finditer(r"[(\[]?([A-Za-z])[)\]]?(?![\w'’])", m["list"])
                    if not _is_option_word(m["list"], t)
                )
                if letters and not (
                    len(letters) == 1 and is_prose(text, m["list"][-1], m.end("list"), False)
                ):
                    found.append(Mention(m.start(), m.end(), letters, positive))
    return found


def _is_option_word(listed: str, token: re.Match[str]) -> bool:
    """Whether a one-letter match inside a letter list is part of the words 'option'/'choice'/'and'/'or'."""
    return token.start() > 0 and listed[token.start() - 1].isalpha()


def revision_letter(text: str, start: int, valid: str) -> str | None:
    """The option letter a correction at `start` names ('no, C'): None if none, '?' if several ('no, C
    or D') or one outside the options."""
    letter, end = letter_at(text, start, valid)
    if letter is None:
        return None
    several = _SEVERAL.match(text, end)
    return "?" if not letter or several is not None and several["letter"].upper() in valid else letter
