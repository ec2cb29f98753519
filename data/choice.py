"""Multiple-choice answers: the option letter a model chose, read from its output, and graded.

The letter is read from, in order: the whole output being a letter ('B', '(b)', 'B.'); the output, its
boxed answer or the rest of its 'answer is' line being one option's *text* (when the options are
known); `\\boxed{X}`; 'the answer is X' / 'Answer: (x)'; 'option/choice X'; the last line being an
option's text; a standalone capital letter when only one distinct valid one appears; a last line that
is only a letter. An answer labelled with one letter but giving another option's text is unparsable. The
article 'A' and the pronoun 'I' ('A careful reading...', 'I think') are never taken for options.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from data.textutil import ANSWER_PHRASE, CONNECTOR, PHRASE_WINDOW, boxed_contents, clean, last_phrases
from data.types import AnswerKind, Verdict

_CHOICE_PHRASE = re.compile(r"(?i)\b(?:option|choice)" + CONNECTOR)
_LETTER_AFTER_PHRASE = re.compile(
    r"(?i)[\s:*\"']*(?:(?:option|choice|letter)\b[\s:*]*)?"
    r"(?P<open>[(\[{])?(?P<letter>[a-z])(?P<close>[)\]}])?(?![a-z0-9])"
)
_LETTER_TOKEN = re.compile(r"(?<![\w'’])(?P<open>[(\[])?(?P<letter>[A-Z])(?P<close>[)\]])?(?![\w'’])")
_WHOLE_LETTER = re.compile(r"[(\[]?([A-Za-z])[)\].:]?")
_LABELLED = re.compile(r"[(\[]?([A-Za-z])[)\].:]\s+(\S.*)", re.S)  # 'B. Paris', '(c) the text'
_TEXT_MACRO = re.compile(r"\\text(?:bf|rm|it)?\s*\{([^{}]{0,500})\}")
_EDGE_JUNK = " \t\r\n*\"'`.,;:!?$"
# After a bare "A"/"I", these words mean the letter is the subject ("A is correct"), not prose.
_LETTER_VERBS = frozenset({"is", "was", "seems", "appears", "looks", "and", "or", "because", "since"})
_WORD_AFTER = re.compile(r"\s+([a-z]+)")
_NO_MATCH = ""  # _option_by_text's "the options disagree with the letter given": unparsable


def letters(n_choices: int) -> str:
    """The valid option letters for `n_choices` options ('ABCD' for 4)."""
    if not 1 <= n_choices <= 26:
        raise ValueError(f"n_choices must be in 1..26, got {n_choices}")
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:n_choices]


def normalize_option(text: str) -> str:
    """Option text for comparison: `\\text{}` unwrapped, case and spacing folded, edge punctuation gone."""
    return " ".join(_TEXT_MACRO.sub(r"\1", text).casefold().split()).strip(_EDGE_JUNK)


def _letter_after(text: str, phrases: re.Pattern[str], keywords: tuple[str, ...], valid: str) -> str | None:
    """The letter right after the last of `phrases` (starting with `keywords`) followed by a valid one."""
    for phrase in last_phrases(phrases, text, keywords):
        m = _LETTER_AFTER_PHRASE.match(text, phrase.end(), phrase.end() + PHRASE_WINDOW)
        if m is None:
            continue
        letter = m["letter"]
        rest = text[m.end() : m.end() + 1]
        # A lowercase letter counts only when set off ("(c)", "c.", end): else it is a word ("a bit").
        if letter.islower() and not (m["open"] or m["close"] or rest in ("", ".", ",", ";", ":", "\n", "*")):
            continue
        if _is_prose(text, m):
            continue
        if letter.upper() in valid:
            return letter.upper()
    return None


def _is_prose(text: str, token: re.Match[str]) -> bool:
    """A bare 'A' or 'I' followed by a lowercase word is the article or the pronoun, not an option."""
    if token["letter"] not in "AI" or token["open"] or token["close"]:
        return False
    after = _WORD_AFTER.match(text, token.end(), token.end() + 40)
    return after is not None and after[1] not in _LETTER_VERBS


def _strong_candidates(text: str) -> list[str]:
    """Where an answer given as option text stands explicitly: the whole output, its boxed answer, and
    the rest of the line after its last 'answer is'."""
    found = [text]
    if (boxed := boxed_contents(text)) is not None:
        found.append(boxed)
    if phrases := last_phrases(ANSWER_PHRASE, text, limit=1):
        found.append(text[phrases[0].end() :].split("\n", 1)[0])
    return found


def _last_line(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1:]


def _option_by_text(candidates: list[str], choices: Sequence[str]) -> str | None:
    """The letter of the one option whose text a candidate is, also after the candidate's own letter
    label ('B. Paris'); `_NO_MATCH` when that label names another option than the text does."""
    options = [normalize_option(c) for c in choices]

    def hit(said: str) -> int | None:
        core = said.strip("()[].: ")
        if len(core) == 1 and core.isascii() and core.isalpha():
            return None  # a bare letter is a letter, even where some option's text is that letter
        hits = [i for i, option in enumerate(options) if said and option == said]
        return hits[0] if len(hits) == 1 else None

    for candidate in candidates:
        if (index := hit(normalize_option(candidate))) is not None:
            return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[index]
        m = _LABELLED.fullmatch(candidate.strip().strip("*`\"' "))
        if m is not None and (index := hit(normalize_option(m[2]))) is not None:
            letter = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[index]
            return letter if m[1].upper() == letter else _NO_MATCH
    return None


def _boxed_letter(text: str, valid: str) -> str | None:
    boxed = boxed_contents(text)
    if boxed is None:
        return None
    m = _WHOLE_LETTER.fullmatch(_TEXT_MACRO.sub(r"\1", boxed).strip())
    return m[1].upper() if m is not None and m[1].upper() in valid else None


def canonical_choice(text: str, n_choices: int = 4, choices: Sequence[str] = ()) -> str | None:
    """The option letter (A.. the n_choices-th) that `text` answers with, or None (see the module doc).

    With `choices` (the options' texts, in shown order), an answer given as an option's text counts too.
    """
    valid = letters(n_choices)
    text = clean(text)
    stripped = text.strip().strip("*\"'` ")
    if (whole := _WHOLE_LETTER.fullmatch(stripped)) is not None:
        return whole[1].upper() if whole[1].upper() in valid else None
    options = choices[: len(valid)]
    if options and (by_text := _option_by_text(_strong_candidates(text), options)) is not None:
        return by_text or None
    if (boxed := _boxed_letter(text, valid)) is not None:
        return boxed
    for phrases, keywords in ((ANSWER_PHRASE, ("answer",)), (_CHOICE_PHRASE, ("option", "choice"))):
        if (found := _letter_after(text, phrases, keywords, valid)) is not None:
            return found
    if options and (by_text := _option_by_text(_last_line(text), options)) is not None:
        return by_text or None
    distinct: set[str] = set()
    for token in _LETTER_TOKEN.finditer(text):
        if token["letter"] in valid and token["letter"] not in distinct and not _is_prose(text, token):
            distinct.add(token["letter"])
            if len(distinct) > 1:
                break  # two different letters: no single one stands out
    if len(distinct) == 1:
        return distinct.pop()
    lines = [line.strip().strip("*\"'` ") for line in text.splitlines() if line.strip()]
    if distinct and lines and (last := _WHOLE_LETTER.fullmatch(lines[-1])) is not None:
        return last[1].upper() if last[1].upper() in valid else None
    return None


class ChoiceGrader:
    """Grades multiple-choice answers by option letter; knows the options' texts when given them."""

    kind: AnswerKind = "choice"

    def __init__(self, n_choices: int = 4, choices: Sequence[str] = ()) -> None:
        if choices:
            n_choices = len(choices)
        letters(n_choices)
        self.n_choices = n_choices
        self.choices = tuple(choices)

    def canonical(self, output: str) -> str | None:
        return canonical_choice(output, self.n_choices, self.choices)

    def grade(self, output: str, gold: str) -> Verdict:
        answer = self.canonical(output)
        if answer is None:
            return "unparsable"
        expected = canonical_choice(gold, self.n_choices)
        if expected is None:
            raise ValueError(f"gold {gold[:80]!r} is not one of {letters(self.n_choices)}")
        return "correct" if answer == expected else "wrong"
