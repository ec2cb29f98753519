"""LaTeX answers in one spelling, exact rationals, and the guard that refuses computation bombs.

`normalize` drops what never changes an answer (delimiters, sizing, spacing, units, degrees, `$`, `%`,
also spelled `percent` or `pct`)
and unifies spellings (`\\dfrac`->`\\frac`, `\\frac12`->`\\frac{1}{2}`, `x=5`->`5`, `{,}`->`,`);
`rational` reads a plain number exactly (also '1,000.5' and the mixed number '1\\frac{4}{5}');
`too_costly` refuses what no competition answer is and could keep sympy busy for minutes. All regexes
run in linear time; nothing is evaluated.
"""

from __future__ import annotations

import re
from fractions import Fraction

from data.grading.textutil import braced

MAX_ANSWER_CHARS = 300  # the longest MATH-500 gold is 60 characters
MAX_DEPTH = 10  # brace/parenthesis nesting
MAX_DIGIT_RUN = 40

_MINUS = str.maketrans({"\u2212": "-", "\ufe63": "-", "\uff0d": "-"})
_WRAPPERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
_DROP = re.compile(  # LaTeX row breaks (\\\\) are kept whole: the first group puts them back
    r"(\\\\)|\\(?:left|right|displaystyle)(?![A-Za-z])|\\[!,;:> ]|~"
    r"|\^\s*\{?\s*\\circ\s*\}?|°|\\%|%|\\\$|\$"
)
_GROUPED_COMMA = re.compile(r"\{\s*,\s*\}")  # '14{,}916'
_FRAC_KIND = re.compile(r"\\[dtc]frac(?![A-Za-z])")
_TEXT_OPEN = re.compile(r"\\(?:text|textbf|textrm|textit|textnormal|mathrm|mbox|operatorname)\s*\{")
_UNIT_TAIL = re.compile(
    r"(?<=\S)(?:\s|\\[ ,;:!])*\\(?:text|textnormal|textrm|textbf|textit|mbox|mathrm)\s*\{\s*[A-Za-z][A-Za-z .]{0,30}\}(?:\^\{?[23]\}?)?\s*$"
)
# '50 percent', '50\ \text{pct}', '12 per cent' inside a box: the word is a '%', which is dropped too
_PERCENT_WORD = re.compile(
    r"(?i)(?<=[0-9}])(?:\s|\\[ ,;:!]|~)*(?P<text>\\(?:text|textnormal|textrm|mathrm|mbox)\s*\{\s*)?"
    r"(?:percent(?:age)?|per\s*cent|pct)\.?\s*(?(text)\}\s*)$"
)
_RELATIONS = tuple(
    (re.compile(rf"\\{op}q?(?![A-Za-z])"), rf"\\{op}") for op in ("le", "ge", "ne")
)  # \\leq -> \\le
_SPACE = re.compile(r"(\\[A-Za-z]+)\s+(?=[A-Za-z])|\s+")
_SHORT_ARG = re.compile(r"\\(frac|sqrt)(?![A-Za-z])\s*([0-9A-Za-z])(?:\s*([0-9A-Za-z]))?")
_SHORT_DENOMINATOR = re.compile(r"(\\frac\{[^{}]{1,40}\})([0-9A-Za-z])")
_ASSIGNED = re.compile(r"^[A-Za-z](?:_\{?[0-9A-Za-z]\}?)?=(?!=)")
_VARIABLE = re.compile(r"[A-Za-z]")
_MACRO_NAME = re.compile(r"\\[A-Za-z]+")
_LETTER_ANSWER = re.compile(r"\(([A-Z])\)")
_RATIONAL = re.compile(
    r"(?P<sign>-?)(?:(?P<whole>[0-9]{1,30})?\\frac\{(?P<fs>-?)(?P<fn>[0-9]{1,30})\}\{(?P<fd>[0-9]{1,30})\}"
    r"|(?P<num>[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]{1,30})?|[0-9]{0,30}(?:\.[0-9]{1,30})?)(?:/(?P<den>[0-9]{1,30}))?)"
)
_JUNK_CHAR = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff0-\uffff]")
_LONG_DIGITS = re.compile(r"[0-9]{%d,}" % (MAX_DIGIT_RUN + 1))  # noqa: UP031 (a regex: braces stay)
_POWER_DIGITS = re.compile(r"\^\{?\s*-?[0-9]{6,}")
_BIG_FACTORIAL = re.compile(r"[0-9]{5,}\s*!")
_DOUBLE_POWER = re.compile(r"\^\s*(?:[0-9A-Za-z]|\{[^{}]*\})\s*\^")  # 9^9^9: no valid LaTeX, maybe a tower


def unwrap(text: str) -> str:
    """`text` without one pair of math delimiters around it ('$x$', '\\(x\\)', '\\[x\\]')."""
    text = text.strip()
    for left, right in _WRAPPERS:
        if len(text) > len(left) + len(right) and text.startswith(left) and text.endswith(right):
            return text[len(left) : -len(right)].strip()
    return text


def _unwrap_text_macros(text: str) -> str:
    """`\\text{abc}` -> `abc` (braces matched), for every text-like macro, outermost first."""
    out, pos = [], 0
    for m in _TEXT_OPEN.finditer(text):
        if m.start() < pos:
            continue  # inside a group already unwrapped
        inner, pos_after = braced(text, m.end())
        out += [text[pos : m.start()], _unwrap_text_macros(inner) if len(inner) < len(text) else inner]
        pos = pos_after
    return "".join(out) + text[pos:]


def normalize(answer: str) -> str:
    """A LaTeX answer in one spelling: no delimiters, sizing, spacing, units, degrees, `$` or `%`;
    `\\dfrac`->`\\frac`, `\\frac12`->`\\frac{1}{2}`, `x=5`->`5`, `(C)`->`C`, no trailing period."""
    text = unwrap(answer[: MAX_ANSWER_CHARS * 2].translate(_MINUS))
    text = _UNIT_TAIL.sub("", _PERCENT_WORD.sub("", _GROUPED_COMMA.sub(",", text)))
    text = _unwrap_text_macros(_DROP.sub(lambda m: m[1] or " ", text))
    text = _FRAC_KIND.sub(r"\\frac", text)
    for pattern, spelling in _RELATIONS:
        text = pattern.sub(spelling, text)
    text = _SPACE.sub(lambda m: m[1] + " " if m[1] else "", text.strip())
    text = _SHORT_DENOMINATOR.sub(r"\1{\2}", _SHORT_ARG.sub(_braced_args, text))
    if (assigned := _ASSIGNED.match(text)) is not None and not _VARIABLE.search(
        _MACRO_NAME.sub("", text[assigned.end() :])
    ):
        text = text[assigned.end() :]  # 'x=5' is 5; 'y=2x+3' stays an equation
    text = text.rstrip(".")
    if (letter := _LETTER_ANSWER.fullmatch(text)) is not None:
        text = letter[1]
    return text


def _braced_args(m: re.Match[str]) -> str:
    """`\\frac12` -> `\\frac{1}{2}`, `\\sqrt2` -> `\\sqrt{2}` (single-character arguments only)."""
    if m[1] == "sqrt":
        return f"\\sqrt{{{m[2]}}}" + (m[3] or "")
    return f"\\frac{{{m[2]}}}{{{m[3]}}}" if m[3] else f"\\frac{{{m[2]}}}"


def rational(text: str) -> Fraction | None:
    """The exact value of a normalised answer that is a plain number ('-3', '0.5', '1,000.5', '3/4',
    '\\frac{-3}{4}', and the mixed number '1\\frac{4}{5}' = 9/5); None for anything else."""
    m = _RATIONAL.fullmatch(text)
    if m is None:
        return None
    if m["fn"] is not None:
        numerator, denominator = int(m["fn"]), int(m["fd"])
        if not denominator:
            return None
        value = Fraction(-numerator if m["fs"] else numerator, denominator)
        if m["whole"] is not None:  # a mixed number: its fraction proper and positive, as MATH writes them
            if m["fs"] or numerator >= denominator:
                return None
            value += int(m["whole"])
    else:
        number = (m["num"] or "").replace(",", "")
        if not number or number == ".":
            return None
        value = Fraction(number)
        if m["den"] is not None:
            if not int(m["den"]):
                return None
            value = value / int(m["den"])
    return -value if m["sign"] else value


def exact_text(value: Fraction) -> str:
    """`value` written exactly and one way: '5', '-0.75' when it has a finite decimal expansion, else '1/3'."""
    sign, value = ("-" if value < 0 else ""), abs(value)
    den, twos, fives = value.denominator, 0, 0
    while den % 2 == 0:
        den, twos = den // 2, twos + 1
    while den % 5 == 0:
        den, fives = den // 5, fives + 1
    if den != 1:
        return f"{sign}{value.numerator}/{value.denominator}"
    places = max(twos, fives)
    if places == 0:
        return f"{sign}{value.numerator}"
    whole, frac = divmod(value.numerator * 10**places // value.denominator, 10**places)
    return f"{sign}{whole}.{frac:0{places}d}"


def same_answer(a: str, b: str) -> bool:
    """Whether two answers are one answer written alike: equal normalised, or equal rationals."""
    norm_a, norm_b = normalize(a), normalize(b)
    if norm_a == norm_b:
        return True
    value_a, value_b = rational(norm_a), rational(norm_b)
    return value_a is not None and value_a == value_b


def too_costly(norm: str) -> bool:
    """Whether a normalised answer is refused before math-verify: too long or deep, unbalanced braces,
    control or format characters, a power tower, a huge power or a huge factorial — things no competition
    answer is, which would at best be unparsable and at worst keep sympy busy for minutes."""
    if _JUNK_CHAR.search(norm) or norm.count("{") != norm.count("}"):
        return True
    if len(norm) > MAX_ANSWER_CHARS or _POWER_DIGITS.search(norm) or _BIG_FACTORIAL.search(norm):
        return True
    if _DOUBLE_POWER.search(norm):
        return True
    if _LONG_DIGITS.search(norm):
        return True
    depth = 0
    stack: list[int] = []  # the open groups' start indices
    for i, c in enumerate(norm):
        if c in "{([":
            stack.append(i)
            depth = max(depth, len(stack))
            if c == "{" and i > 0 and norm[i - 1] == "^" and _numeric_tower(braced(norm, i + 1)[0]):
                return True
        elif c in "})]" and stack:
            stack.pop()
    return depth > MAX_DEPTH


def _numeric_tower(exponent: str) -> bool:
    """An exponent that itself holds a power and no letter or macro: `9^{9^{9}}` (symbolic towers such
    as `2^{n^2}` stay: sympy keeps them symbolic)."""
    return "^" in exponent and re.search(r"[A-Za-z]", exponent) is None
