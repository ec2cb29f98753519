"""Read canonical answers (numbers, option letters) out of model output, and grade them against golds.

Model output is hostile input: it is truncated before any parsing, every regex here runs in linear
time, numbers are read with `fractions.Fraction` from strings the regexes validated, and nothing is
ever evaluated.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from fractions import Fraction

from data.types import AnswerKind, Sample, Verdict

MAX_CHARS = 10_000  # longer output is cut: an answer is never that far into a reply worth grading
MAX_DIGITS = 50  # a "number" longer than this is junk, and big ints are costly to work with
DECIMALS = 10  # non-integer answers are rounded to this many decimal places
_PHRASE_WINDOW = 60  # how far after "the answer is" the answer itself may start

_MINUS = str.maketrans({"\u2212": "-", "\ufe63": "-", "\uff0d": "-"})
_LATEX_FRAC = re.compile(r"\\[dt]?frac\s*\{\s*(-?[0-9]{1,60})\s*\}\s*\{\s*([0-9]{1,60})\s*\}")
_NUMBER = re.compile(
    r"(?<![\w.])"  # not the tail of a word, a number or a decimal
    r"(?P<sign>[-+])?\$?"
    r"(?:(?P<int>[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+)(?P<dec>\.[0-9]+)?|(?P<bare>\.[0-9]+))"
    r"(?:/(?P<den>[0-9]+))?"
)
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_CONNECTOR = r"\s*(?:is\b|would\s+be\b|should\s+be\b|will\s+be\b|[:=])"
# "answer is"/"Answer:" but not "answer was"/"answer of": those quote answers given up or other agents'.
_ANSWER_PHRASE = re.compile(r"(?i)\banswer" + _CONNECTOR)
_CHOICE_PHRASE = re.compile(r"(?i)\b(?:option|choice)" + _CONNECTOR)
_LETTER_AFTER_PHRASE = re.compile(
    r"(?i)[\s:*]*(?:(?:option|choice|letter)\b[\s:*]*)?"
    r"(?P<open>[(\[{])?(?P<letter>[a-z])(?P<close>[)\]}])?(?![a-z0-9])"
)
_LETTER_TOKEN = re.compile(r"(?<![\w'’])(?P<open>[(\[])?(?P<letter>[A-Z])(?P<close>[)\]])?(?![\w'’])")
_WHOLE_LETTER = re.compile(r"[(\[]?([A-Za-z])[)\].:]?")
# After a bare "A"/"I", these words mean the letter is the subject ("A is correct"), not prose.
_LETTER_VERBS = frozenset({"is", "was", "seems", "appears", "looks", "and", "or", "because", "since"})
_WORD_AFTER = re.compile(r"\s+([a-z]+)")


def _last(matches: Iterator[re.Match[str]]) -> re.Match[str] | None:
    """The last of `matches` (None if there are none), keeping only one in memory."""
    tail = deque(matches, maxlen=1)
    return tail[0] if tail else None


def _prepare(text: str) -> str:
    """Cut to MAX_CHARS and undo the spellings that hide plain numbers (unicode minus, LaTeX)."""
    text = text[:MAX_CHARS].translate(_MINUS)
    text = text.replace("\\$", "$").replace("\\%", "%").replace("{,}", ",").replace("\\,", ",")
    return _LATEX_FRAC.sub(r"\1/\2", text)


def _boxed_contents(text: str) -> str | None:
    """The content of the last `\\boxed{...}`, braces matched (unclosed: up to the end)."""
    last = _last(_BOXED.finditer(text))
    if last is None:
        return None
    depth, start = 1, last.end()
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start:i]
    return text[start:]


def format_fraction(value: Fraction) -> str:
    """'18', '-5', '0.75', '0.3333333333': integers as ints, else at most DECIMALS places, no exponent."""
    scaled = round(value * 10**DECIMALS)
    sign = "-" if scaled < 0 else ""
    whole, frac = divmod(abs(scaled), 10**DECIMALS)
    if frac == 0:
        return f"{sign}{whole}" if whole else "0"
    return f"{sign}{whole}.{frac:0{DECIMALS}d}".rstrip("0")


def _value(match: re.Match[str]) -> Fraction | None:
    """The number one `_NUMBER` match spells, or None when it is too long or divides by zero."""
    whole = (match["int"] or "").replace(",", "")
    dec = match["dec"] or match["bare"] or ""
    den = match["den"] or ""
    if len(whole) + len(dec) > MAX_DIGITS + 1 or len(den) > MAX_DIGITS:
        return None
    value = Fraction((whole or "0") + dec)
    if den:
        if int(den) == 0:
            return None
        value /= int(den)
    return -value if match["sign"] == "-" else value


def _number_in(segment: str, last: bool, bare_prefix: bool = False) -> str | None:
    """The first (or last) number written in `segment`, canonical; None if none or it is junk.
    `bare_prefix`: only take a first number that no word comes before (markup and '$' may)."""
    matches = _NUMBER.finditer(segment)
    chosen = _last(matches) if last else next(matches, None)
    if chosen is None or (bare_prefix and any(c.isalpha() for c in segment[: chosen.start()])):
        return None
    value = _value(chosen)
    return None if value is None else format_fraction(value)


def canonical_number(text: str) -> str | None:
    """The final numeric answer in `text` ('$1,250.50' -> '1250.5', '3/4' -> '0.75'), or None.

    Prefers the last `\\boxed{}`, then what follows the last '####', then an 'answer is'/'Answer:'
    phrase, and otherwise takes the last number in the text.
    """
    text = _prepare(text)
    boxed = _boxed_contents(text)
    if boxed is not None and (found := _number_in(boxed, last=True)) is not None:
        return found
    marker = text.rfind("####")
    if marker >= 0 and (found := _number_in(text[marker + 4 :], last=False)) is not None:
        return found
    for phrase in reversed(list(_ANSWER_PHRASE.finditer(text))):
        window = text[phrase.end() : phrase.end() + _PHRASE_WINDOW]
        if (found := _number_in(window, last=False, bare_prefix=True)) is not None:
            return found
    return _number_in(text, last=True)


def _letters(n_choices: int) -> str:
    if not 1 <= n_choices <= 26:
        raise ValueError(f"n_choices must be in 1..26, got {n_choices}")
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:n_choices]


def _letter_after(text: str, phrases: re.Pattern[str], valid: str) -> str | None:
    """The letter right after the last of `phrases` that is followed by a valid one."""
    for phrase in reversed(list(phrases.finditer(text))):
        m = _LETTER_AFTER_PHRASE.match(text, phrase.end(), phrase.end() + _PHRASE_WINDOW)
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


def canonical_choice(text: str, n_choices: int = 4) -> str | None:
    """The option letter (A.. the n_choices-th) that `text` answers with, or None.

    Prefers `\\boxed{X}`, then an 'answer is X'/'Answer: (x)' phrase, then 'option/choice X'; otherwise
    a standalone capital letter when only one distinct valid one appears (the article 'A' and the
    pronoun 'I' are skipped), or the letter that alone makes up the last line.
    """
    valid = _letters(n_choices)
    text = text[:MAX_CHARS]
    stripped = text.strip().strip("*\"'` ")
    if (whole := _WHOLE_LETTER.fullmatch(stripped)) is not None:
        return whole[1].upper() if whole[1].upper() in valid else None
    boxed = _boxed_contents(text)
    if boxed is not None:
        inner = re.sub(r"\\text(?:bf)?\s*\{([^{}]{0,20})\}", r"\1", boxed).strip()
        m = _WHOLE_LETTER.fullmatch(inner)
        if m is not None and m[1].upper() in valid:
            return m[1].upper()
    for phrases in (_ANSWER_PHRASE, _CHOICE_PHRASE):
        if (found := _letter_after(text, phrases, valid)) is not None:
            return found
    tokens = [t for t in _LETTER_TOKEN.finditer(text) if t["letter"] in valid and not _is_prose(text, t)]
    distinct = {t["letter"] for t in tokens}
    if len(distinct) == 1:
        return distinct.pop()
    lines = [line.strip().strip("*\"'` ") for line in text.splitlines() if line.strip()]
    if distinct and lines and (last := _WHOLE_LETTER.fullmatch(lines[-1])) is not None:
        return last[1].upper() if last[1].upper() in valid else None
    return None


class NumericGrader:
    """Grades numeric answers by exact rational equality, so '18' == '18.00' == '$18'."""

    kind: AnswerKind = "numeric"

    def canonical(self, output: str) -> str | None:
        return canonical_number(output)

    def grade(self, output: str, gold: str) -> Verdict:
        answer = canonical_number(output)
        if answer is None:
            return "unparsable"
        expected = canonical_number(gold)
        if expected is None:
            raise ValueError(f"gold {gold[:80]!r} is not a number")
        return "correct" if Fraction(answer) == Fraction(expected) else "wrong"


class ChoiceGrader:
    """Grades multiple-choice answers by option letter."""

    kind: AnswerKind = "choice"

    def __init__(self, n_choices: int = 4) -> None:
        _letters(n_choices)
        self.n_choices = n_choices

    def canonical(self, output: str) -> str | None:
        return canonical_choice(output, self.n_choices)

    def grade(self, output: str, gold: str) -> Verdict:
        answer = canonical_choice(output, self.n_choices)
        if answer is None:
            return "unparsable"
        expected = canonical_choice(gold, self.n_choices)
        if expected is None:
            raise ValueError(f"gold {gold[:80]!r} is not one of {_letters(self.n_choices)}")
        return "correct" if answer == expected else "wrong"


def grader_for_kind(kind: AnswerKind, n_choices: int = 4) -> NumericGrader | ChoiceGrader:
    """The grader for an answer kind ('math' has no grader yet: ValueError)."""
    if kind == "numeric":
        return NumericGrader()
    if kind == "choice":
        return ChoiceGrader(n_choices)
    raise ValueError(f"no grader for answer kind {kind!r} yet (known: numeric, choice)")


def grader_for(sample: Sample) -> NumericGrader | ChoiceGrader:
    """The grader for one sample: its kind, and for choice items the number of options it offers."""
    return grader_for_kind(sample.kind, len(sample.choices) or 4)
