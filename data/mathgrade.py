"""Competition-math answers (MATH-500, MATH-Hard): extract the final LaTeX answer, normalise it, grade it.

Grading goes from cheap and exact to expensive: (1) the normalised strings are equal; (2) both are
plain rationals (`0.5`, `\\frac{1}{2}`, `-3`): exact `Fraction` equality; (3) a word answer given in
`\\text{}` ('Evelyn'): equality ignoring case; (4) math-verify in a worker process under a CPU-time
limit (`data.mathcheck`). Model text is never evaluated here: it is cut, normalised with linear-time
regexes, refused when it looks like a computation bomb (`too_costly`), and only then handed to
math-verify. A check that runs out of time, or an answer that is no math, grades 'unparsable'.

`canonical()` is the normalised answer, with rationals written exactly (`0.5`, `1/3`), so votes count
`0.5`, `\\frac12` and `\\dfrac{1}{2}` as one answer; equivalent forms that differ in more than spelling
(`\\frac{1}{\\sqrt2}` vs `\\frac{\\sqrt2}{2}`) stay distinct answers in the vote, though both grade
correct. Rational golds are matched exactly (`4.666` is not `\\frac{14}{3}`); against an irrational gold,
math-verify accepts a decimal that agrees to 6 places.
"""

from __future__ import annotations

import json
import re
import threading
from fractions import Fraction

from data.mathcheck import Result, checker
from data.textutil import ANSWER_PHRASE, boxed_contents, braced, clean, last_phrases
from data.types import AnswerKind, Verdict

MAX_ANSWER_CHARS = 300  # the longest MATH-500 gold is 60 characters
MAX_DEPTH = 10  # brace/parenthesis nesting
MAX_DIGIT_RUN = 40
_CACHE_SIZE = 8192  # math-verify verdicts kept per process, oldest dropped first
_verdict_cache: dict[tuple[str, str], Result] = {}
_cache_lock = threading.Lock()

_MINUS = str.maketrans({"\u2212": "-", "\ufe63": "-", "\uff0d": "-"})
_WRAPPERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
_DROP = re.compile(  # LaTeX row breaks (\\\\) are kept whole: the first group puts them back
    r"(\\\\)|\\(?:left|right|displaystyle)(?![A-Za-z])|\\[!,;:> ]|~"
    r"|\^\s*\{?\s*\\circ\s*\}?|°|\\%|%|\\\$|\$"
)
_FRAC_KIND = re.compile(r"\\[dt]frac(?![A-Za-z])")
_TEXT_OPEN = re.compile(r"\\(?:text|textbf|textrm|mathrm|mbox|operatorname)\s*\{")
_UNIT_TAIL = re.compile(r"(?<=\S)\s*\\(?:text|mbox)\s*\{\s*[A-Za-z][A-Za-z .]{0,30}\}(?:\^\{?[23]\}?)?\s*$")
_RELATIONS = tuple(
    (re.compile(rf"\\{op}q?(?![A-Za-z])"), rf"\\{op}") for op in ("le", "ge", "ne")
)  # \\leq -> \\le
_SPACE = re.compile(r"(\\[A-Za-z]+)\s+(?=[A-Za-z])|\s+")
_SHORT_ARG = re.compile(r"\\(frac|sqrt)(?![A-Za-z])\s*([0-9A-Za-z])(?:\s*([0-9A-Za-z]))?")
_SHORT_DENOMINATOR = re.compile(r"(\\frac\{[^{}]{1,40}\})([0-9A-Za-z])")
_ASSIGNED = re.compile(r"^[A-Za-z](?:_\{?[0-9A-Za-z]\}?)?=(?!=)")
_LETTER_ANSWER = re.compile(r"\(([A-Z])\)")
_RATIONAL = re.compile(
    r"(?P<sign>-?)(?:\\frac\{(?P<fs>-?)(?P<fn>[0-9]{1,30})\}\{(?P<fd>[0-9]{1,30})\}"
    r"|(?P<num>[0-9]{1,3}(?:,[0-9]{3})+|[0-9]{0,30}(?:\.[0-9]{1,30})?)(?:/(?P<den>[0-9]{1,30}))?)"
)
_JSON_STRING = re.compile(r'\s*("(?:[^"\\]|\\.){0,600}")')
_SENTENCE_END = re.compile(r"\.\s|\.$|;|,\s+(?:since|because|as|which|so|and\s+the)\b")
_WORD_GOLD = re.compile(r"\s*\\(?:text|textbf|mbox)\s*\{\s*([A-Za-z][A-Za-z ]{1,40})\}\s*\.?\s*")
_JUNK_CHAR = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff0-\uffff]")
_LONG_DIGITS = re.compile(r"[0-9]{%d,}" % (MAX_DIGIT_RUN + 1))  # noqa: UP031 (a regex: braces stay)
_POWER_DIGITS = re.compile(r"\^\{?\s*-?[0-9]{6,}")
_BIG_FACTORIAL = re.compile(r"[0-9]{5,}\s*!")
_DOUBLE_POWER = re.compile(r"\^\s*(?:[0-9A-Za-z]|\{[^{}]*\})\s*\^")  # 9^9^9: no valid LaTeX, maybe a tower


def extract_answer(output: str) -> str | None:
    """The final answer in `output`: its last `\\boxed{}`, else what follows its last 'answer is'/'Answer:'
    on that line, else what follows '####', else the whole output when it is one short line, else the
    last `$...$` of its last line. None when there is none."""
    text = clean(output)
    if (boxed := boxed_contents(text)) is not None:
        return boxed.strip() or None
    if phrases := last_phrases(ANSWER_PHRASE, text, limit=1):
        rest = text[phrases[0].end() :].split("\n", 1)[0]
        if (quoted := _JSON_STRING.match(rest)) is not None:  # '"answer": "\\frac{1}{2}"' (raw JSON)
            return _unwrap(_json_string(quoted[1])) or None
        rest = _SENTENCE_END.split(rest, 1)[0].strip()
        return _unwrap(_first_math(rest) or rest) or None
    if (marker := text.rfind("####")) >= 0:
        return _unwrap(text[marker + 4 :].strip().split("\n", 1)[0]) or None
    stripped = text.strip()
    if stripped and "\n" not in stripped and len(stripped) <= MAX_ANSWER_CHARS:
        return _unwrap(stripped.rstrip(".")) or None
    lines = [line for line in stripped.splitlines() if line.strip()]
    return _first_math(lines[-1], last=True) if lines else None


def _json_string(literal: str) -> str:
    """The value of a JSON string literal (a bounded, validated literal: json.loads evaluates nothing)."""
    try:
        value = json.loads(literal)
    except ValueError:  # an invalid escape such as '\s': take the text between the quotes as it is
        return literal[1:-1]
    return value if isinstance(value, str) else literal[1:-1]


def _first_math(text: str, last: bool = False) -> str | None:
    """The content of the first (or last) `$...$` / `\\(...\\)` in `text`, or None."""
    found = re.findall(r"\$\$?([^$]{1,600})\$\$?|\\\((.{1,600}?)\\\)", text)
    if not found:
        return None
    dollar, paren = found[-1] if last else found[0]
    return (dollar or paren).strip() or None


def _unwrap(text: str) -> str:
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
    text = _unwrap(answer[: MAX_ANSWER_CHARS * 2].translate(_MINUS))
    text = _UNIT_TAIL.sub("", text)
    text = _unwrap_text_macros(_DROP.sub(lambda m: m[1] or " ", text))
    text = _FRAC_KIND.sub(r"\\frac", text)
    for pattern, spelling in _RELATIONS:
        text = pattern.sub(spelling, text)
    text = _SPACE.sub(lambda m: m[1] + " " if m[1] else "", text.strip())
    text = _SHORT_DENOMINATOR.sub(r"\1{\2}", _SHORT_ARG.sub(_braced_args, text))
    text = _ASSIGNED.sub("", text).rstrip(".")
    if (letter := _LETTER_ANSWER.fullmatch(text)) is not None:
        text = letter[1]
    return text


def _braced_args(m: re.Match[str]) -> str:
    """`\\frac12` -> `\\frac{1}{2}`, `\\sqrt2` -> `\\sqrt{2}` (single-character arguments only)."""
    if m[1] == "sqrt":
        return f"\\sqrt{{{m[2]}}}" + (m[3] or "")
    return f"\\frac{{{m[2]}}}{{{m[3]}}}" if m[3] else f"\\frac{{{m[2]}}}"


def rational(text: str) -> Fraction | None:
    """The exact value of a normalised answer that is a plain number ('-3', '0.5', '1,000', '3/4',
    '\\frac{-3}{4}'); None for anything else."""
    m = _RATIONAL.fullmatch(text)
    if m is None:
        return None
    if m["fn"] is not None:
        numerator, denominator = int(m["fn"]), int(m["fd"])
        value = Fraction(-numerator if m["fs"] else numerator, denominator) if denominator else None
    else:
        number = (m["num"] or "").replace(",", "")
        if not number or number == ".":
            return None
        value = Fraction(number)
        if m["den"] is not None:
            value = value / int(m["den"]) if int(m["den"]) else None
    if value is None:
        return None
    return -value if m["sign"] else value


def canonical_math(output: str) -> str | None:
    """The canonical form of the answer in `output` (see the module doc), or None when there is none."""
    answer = extract_answer(output)
    if answer is None:
        return None
    norm = normalize(answer)
    value = rational(norm)
    return (norm or None) if value is None else exact_text(value)


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


def _checked(answer: str, gold: str) -> Result:
    """math-verify's verdict, cached: a vote or a rerun asks the same pair many times."""
    with _cache_lock:
        cached = _verdict_cache.get((answer, gold))
    if cached is not None:
        return cached
    result = checker().equivalent(answer, gold)
    if result in ("equal", "different", "unparsed", "gold_unparsed"):  # never a timeout or an error
        with _cache_lock:
            _verdict_cache[(answer, gold)] = result
            while len(_verdict_cache) > _CACHE_SIZE:
                del _verdict_cache[next(iter(_verdict_cache))]
    return result


class MathGrader:
    """Grades LaTeX answers against a LaTeX gold (see the module doc for the order of checks)."""

    kind: AnswerKind = "math"

    def canonical(self, output: str) -> str | None:
        return canonical_math(output)

    def grade(self, output: str, gold: str) -> Verdict:
        gold_norm = normalize(gold)
        if not gold_norm:
            raise ValueError(f"gold {gold[:80]!r} is empty")
        answer = extract_answer(output)
        norm = normalize(answer) if answer is not None else ""
        if not norm:
            return "unparsable"
        if norm == gold_norm:
            return "correct"
        value, gold_value = rational(norm), rational(gold_norm)
        if value is not None and gold_value is not None:
            return "correct" if value == gold_value else "wrong"
        if (word := _WORD_GOLD.fullmatch(gold)) is not None:
            return "correct" if norm.casefold() == "".join(word[1].split()).casefold() else "wrong"
        if too_costly(norm):
            return "unparsable"
        result = _checked(norm, gold_norm)
        if result == "equal":
            return "correct"
        return "wrong" if result in ("different", "gold_unparsed") else "unparsable"
