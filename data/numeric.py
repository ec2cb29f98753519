"""Numeric answers: read the final number out of model output exactly, and grade it by rational equality.

Model output is hostile input: it is cut before any parsing, every regex here runs in linear time,
numbers are read with `fractions.Fraction` from strings the regexes validated, and nothing is ever
evaluated. Handled: thousands commas, signs (also the unicode minus), decimals, fractions and
`\\frac{}{}`, percent, currency and units around the number, `\\boxed{}`, '####' and 'the answer is'.
"""

from __future__ import annotations

import re
from fractions import Fraction

from data.textutil import ANSWER_PHRASE, PHRASE_WINDOW, boxed_contents, clean, last_match, last_phrases
from data.types import AnswerKind, Verdict

MAX_DIGITS = 50  # a "number" longer than this is junk, and big ints are costly to work with
DECIMALS = 10  # non-integer answers are rounded to this many decimal places

_LAST_DIGIT = re.compile(r"[0-9](?=[^0-9]*\Z)")
_TAIL = 120  # a number's text (sign, digits, commas, decimals, exponent, denominator) is never longer
_NUMBER_CHARS = frozenset("0123456789.,/$+-eE")
_MINUS = str.maketrans({"\u2212": "-", "\ufe63": "-", "\uff0d": "-"})
_LATEX_FRAC = re.compile(r"\\[dt]?frac\s*\{\s*(-?[0-9]{1,60})\s*\}\s*\{\s*([0-9]{1,60})\s*\}")
_NUMBER = re.compile(
    r"(?<![\w.])"  # not the tail of a word, a number or a decimal
    r"(?P<sign>[-+])?\$?"
    r"(?:(?P<int>[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+)(?P<dec>\.[0-9]+)?|(?P<bare>\.[0-9]+))"
    r"(?:[eE](?P<exp>[-+]?[0-9]{1,3})(?![\w.]))?"  # scientific notation: 2.5e3
    r"(?:/(?P<den>[0-9]+))?"
)


def _prepare(text: str) -> str:
    """Cut to MAX_CHARS and undo the spellings that hide plain numbers (unicode minus, LaTeX)."""
    text = clean(text).translate(_MINUS)
    text = text.replace("\\$", "$").replace("\\%", "%").replace("{,}", ",").replace("\\,", ",")
    return _LATEX_FRAC.sub(r"\1/\2", text)


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
    if match["exp"] is not None:
        if abs(int(match["exp"])) > MAX_DIGITS:
            return None
        value *= Fraction(10) ** int(match["exp"])
    if den:
        if int(den) == 0:
            return None
        value /= int(den)
    return -value if match["sign"] == "-" else value


def _last_number(text: str) -> re.Match[str] | None:
    """The last `_NUMBER` match in `text`, found near the last digit rather than by reading every number."""
    digit = _LAST_DIGIT.search(text)
    if digit is None:
        return None
    start = max(0, digit.start() - _TAIL)
    while start > 0 and text[start - 1] in _NUMBER_CHARS and digit.start() - start < 4 * _TAIL:
        start -= 1  # never begin the window inside a number (it would read as a shorter one)
    return last_match(_NUMBER.finditer(text, start))


def _number_in(segment: str, last: bool, bare_prefix: bool = False) -> str | None:
    """The first (or last) number written in `segment`, canonical; None if none or it is junk.
    `bare_prefix`: only take a first number that no word comes before (markup and '$' may)."""
    chosen = _last_number(segment) if last else next(_NUMBER.finditer(segment), None)
    if chosen is None or (bare_prefix and any(c.isalpha() for c in segment[: chosen.start()])):
        return None
    if chosen["int"] and not (chosen["dec"] or chosen["exp"] or chosen["den"]):
        whole = chosen["int"].replace(",", "")  # a plain integer: what `format_fraction` would write
        if len(whole) <= MAX_DIGITS + 1:
            return str(-int(whole) if chosen["sign"] == "-" else int(whole))
    value = _value(chosen)
    return None if value is None else format_fraction(value)


def canonical_number(text: str) -> str | None:
    """The final numeric answer in `text` ('$1,250.50' -> '1250.5', '3/4' -> '0.75'), or None.

    Prefers the last `\\boxed{}`, then what follows the last '####', then an 'answer is'/'Answer:'
    phrase, and otherwise takes the last number in the text.
    """
    text = _prepare(text)
    boxed = boxed_contents(text)
    if boxed is not None and (found := _number_in(boxed, last=True)) is not None:
        return found
    marker = text.rfind("####")
    if marker >= 0 and (found := _number_in(text[marker + 4 :], last=False)) is not None:
        return found
    for phrase in last_phrases(ANSWER_PHRASE, text):
        window = text[phrase.end() : phrase.end() + PHRASE_WINDOW]
        if (found := _number_in(window, last=False, bare_prefix=True)) is not None:
            return found
    return _number_in(text, last=True)


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
