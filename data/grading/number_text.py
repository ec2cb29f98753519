"""Numbers in model text: spell them plainly, find them, and read the one a clause commits to.

Model output is hostile input: every regex here runs in linear time, numbers are read with
`fractions.Fraction` from strings the regexes validated, and nothing is ever evaluated. A clause commits
to a number when the number comes first (only markup or 'approximately' before it) and nothing after it
makes it one of several: a calculation takes its result ('4 + 3 = 7' is 7, '4 + 3' is no answer), and
'18 or 20', '18, 20' and '18 to 20' are several answers (`AMBIGUOUS`).
"""

from __future__ import annotations

import re
from fractions import Fraction

MAX_DIGITS = 50  # a "number" longer than this is junk, and big ints are costly to work with
DECIMALS = 10  # non-integer answers are rounded to this many decimal places
AMBIGUOUS = "ambiguous"  # the reason a clause naming several numbers gives no answer
NO_ANSWER = "no answer"

_MINUS = str.maketrans(
    {"\u2212": "-", "\ufe63": "-", "\uff0d": "-", "\u2013": "-", "\u00d7": "*", "\u00f7": "/"}
)
_THIN_THOUSANDS = re.compile(r"(?<=[0-9])[\u00a0\u2009\u202f](?=[0-9]{3}(?![0-9]))")  # '1\u202f000'
# '1 234', '$118 000': groups of three digits, when no word follows ('3 250 ml' is two numbers)
_SPACED_THOUSANDS = re.compile(r"(?<![0-9.,])[0-9]{1,3}(?: [0-9]{3})+(?![0-9]|[.,][0-9]| ?[-A-Za-z(/])")

_LATEX_FRAC = re.compile(r"\\[dtc]?frac\s*\{\s*(-?[0-9]{1,60})\s*\}\s*\{\s*([0-9]{1,60})\s*\}")
_SPELLING = re.compile(r"\\\$|\\%|\{,\}|\\,|\\!|\\times|\\cdot|\\div|\\left|\\right")
_SPELLED = {
    "\\$": "$",
    "\\%": "%",
    "{,}": ",",
    "\\,": ",",
    "\\!": "",
    "\\times": "*",
    "\\cdot": "*",
    "\\div": "/",
}
NUMBER = re.compile(
    r"(?<![\w.])"  # not the tail of a word, a number or a decimal
    r"(?P<sign>[-+])?(?:\$[ \t]?)?"
    r"(?:(?P<int>[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+)(?P<dec>\.[0-9]+)?|(?P<bare>\.[0-9]+))"
    r"(?:[eE](?P<exp>[-+]?[0-9]{1,3})(?![\w.]))?"  # scientific notation: 2.5e3
    r"(?:/(?P<den>[0-9]+))?"
)
_LEAD = re.compile(  # what may come before the number a clause commits to
    r"(?i)(?:[\s*_:\"'`(\[{$~≈=]|\\\(|\\\[|\\boxed\s*\{|\\text\w*\s*\{|\\mathbf\s*\{"
    r"|\b(?:approximately|approx|about|around|roughly|exactly|precisely|just|only|simply|then|so|now|clearly"
    r"|definitely|certainly|probably|likely|indeed|actually"
    r"|a\s+total\s+of|in\s+total|total(?:\s+of)?|equal\s+to|equals|of)\b\.?"
    r"|\b[a-z](?:_\{?\w{1,3}\}?)?\s*=)*"
)
_OPERATION = re.compile(
    r"(?i)[ \t]*%?[ \t]*\)?[ \t]*(?:[-+*/^<>≤≥]|\bx\b|\\times|\\cdot|\\div|\btimes\b|\bplus\b|\bminus\b|\bof\b"
    r"|\b(?:divided|multiplied)\s+by\b)[ \t]*\(?[ \t]*\$?[ \t]*[-+]?\.?[0-9]"
)
# '3 more than 15': the number is one side of a comparison, not the answer.
_COMPARISON = re.compile(
    r"(?i)[ \t]*%?[ \t]*(?:\w+[ \t]+)?(?:more|less|fewer|greater|smaller|larger|bigger|higher|lower|older|younger)"
    r"[ \t]+than\b|[ \t]*times[ \t]+(?:as|more|less)\b"
)
_ALTERNATIVE = re.compile(
    r"(?i)[ \t]*(?:,|;|/|\bor\b|\band\b|\bto\b|\bnor\b|\bvs\.?|\bversus\b)[ \t]*"
    r"(?:(?:maybe|perhaps|possibly|probably|even|else)\s+)?\$?[ \t]*[-+]?\.?[0-9]"
    r"|[ \t][0-9]{3}(?![0-9]|[.,][0-9])|[ \t]+[0-9]+/[0-9]"  # '1 234' and '3 1/2' are not 1 and 3
)
RESULT = re.compile(
    r"(?i)=|≈|\\approx|\bwhich\s+(?:is|equals|gives|makes)\b|\bthat\s+is\b|\bi\.e\."
    r"|\b(?:which\s+)?round(?:s|ed|ing)?\s+(?:down\s+|up\s+|off\s+)?to\b"
)
_SIDE_BY_SIDE = re.compile(r"[0-9][ \t]\Z|[<>≤≥][ \t]*\$?\Z")  # '1 234', '3 1/2', '1600 > 1200' from the end
_CLAUSE_END = re.compile(r"(?<!i\.e)(?<!e\.g)[.!?](?=\s|$)|\n|;")  # 'i.e. 18' goes on
_NOT_BEFORE = re.compile(r"(?i)\b(?:not|never|isn['’]t|aren['’]t|nor)\s+(?:\S+\s+)?\Z")


def spell_plainly(text: str) -> str:
    """Undo the spellings that hide plain numbers: unicode minus and times, LaTeX fractions, `\\$`,
    `{,}` and `\\!` inside numbers, `\\times`, and thousands grouped by spaces ('1 234', not '3 250 ml')."""
    text = _THIN_THOUSANDS.sub("", _LATEX_FRAC.sub(r"\1/\2", text.translate(_MINUS)))
    text = _SPACED_THOUSANDS.sub(lambda m: m[0].replace(" ", ""), text)
    return _SPELLING.sub(lambda m: _SPELLED.get(m[0], ""), text)


def format_fraction(value: Fraction) -> str:
    """'18', '-5', '0.75', '0.3333333333': integers as ints, else at most DECIMALS places, no exponent."""
    scaled = round(value * 10**DECIMALS)
    sign = "-" if scaled < 0 else ""
    whole, frac = divmod(abs(scaled), 10**DECIMALS)
    if frac == 0:
        return f"{sign}{whole}" if whole else "0"
    return f"{sign}{whole}.{frac:0{DECIMALS}d}".rstrip("0")


def value(match: re.Match[str]) -> Fraction | None:
    """The number one `NUMBER` match spells, or None when it is too long or divides by zero."""
    whole = (match["int"] or "").replace(",", "")
    dec = match["dec"] or match["bare"] or ""
    den = match["den"] or ""
    if len(whole) + len(dec) > MAX_DIGITS + 1 or len(den) > MAX_DIGITS:
        return None
    number = Fraction((whole or "0") + dec)
    if match["exp"] is not None:
        if abs(int(match["exp"])) > MAX_DIGITS:
            return None
        number *= Fraction(10) ** int(match["exp"])
    if den:
        if int(den) == 0:
            return None
        number /= int(den)
    return -number if match["sign"] == "-" else number


def clause_at(text: str, start: int = 0) -> str:
    """The clause of `text` that begins at `start`: up to a sentence end, a line break or ';'."""
    end = _CLAUSE_END.search(text, start)
    return text[start : end.start() if end is not None else len(text)]


def numbers(text: str, limit: int = 200) -> list[re.Match[str]]:
    """The number matches of `text`, the last `limit` of them."""
    found = list(NUMBER.finditer(text))
    return found[-limit:]


def read_leading(clause: str, depth: int = 0) -> tuple[str | None, str]:
    """The number `clause` commits to when it opens with one: (canonical number, '') or (None, reason).
    A calculation gives its result, and alternatives after the number make it `AMBIGUOUS`."""
    lead = _LEAD.match(clause)
    assert lead is not None  # the pattern matches the empty string
    m = NUMBER.match(clause, lead.end())
    if m is None:
        return None, NO_ANSWER
    return committed(clause, m, depth)


def committed(clause: str, m: re.Match[str], depth: int = 0) -> tuple[str | None, str]:
    """The number `m` in `clause` as the clause's answer, unless what follows makes it a step of a
    calculation (then the result after the last '=') or one of several answers."""
    if _OPERATION.match(clause, m.end()) or _COMPARISON.match(clause, m.end()):
        results = list(RESULT.finditer(clause, m.end()))
        if not results or depth >= 2:
            return None, AMBIGUOUS  # an expression without its result: never evaluated here
        return read_leading(clause[results[-1].end() :], depth + 1)
    if _ALTERNATIVE.match(clause, m.end()) or _ALTERNATIVE_BEFORE.search(clause, 0, m.start()):
        return None, AMBIGUOUS
    if _NOT_BEFORE.search(clause, max(0, m.start() - 30), m.start()) or _SIDE_BY_SIDE.search(
        clause, 0, m.start()
    ):
        return None, AMBIGUOUS
    number = value(m)
    return (None, AMBIGUOUS) if number is None else (format_fraction(number), "")


# '18 or 20' read from its end: a number that closes a list of alternatives is one of several.
_ALTERNATIVE_BEFORE = re.compile(
    r"(?i)[0-9][ \t]*%?[ \t]*\$?[ \t]*(?:,|;|\bor\b|\band\b|\bto\b|\bnor\b|\bvs\.?|\bversus\b)[ \t]*"
    r"(?:(?:maybe|perhaps|possibly|probably|even)\s+)?\$?[ \t]*\Z"
)
