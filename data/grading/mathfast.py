"""Exact equivalence of simple math answers without sympy: the fast path that settles a check at once.

Starting math-verify costs a second or more (sympy's imports and warm-up, `data.grading.mathworker`), so the
answers most checks compare — polynomials and rational functions of single-letter variables with
integer exponents, `\\pi`, and square roots of rationals (`x^2+2x+1`, `\\frac{x}{2}`, `\\frac{\\sqrt{3}}{2}`,
`2\\pi r^2`) — are decided here, exactly: both sides are written as fractions of polynomials over
Q(√2, √3, √5, ...) (each monomial keeps at most one power of each prime's root), and they are equal
when `a·d - b·c` is the zero polynomial. `\\pi` is transcendental, so it counts as one more variable.

Anything else — decimals (math-verify compares those to 6 places), `e` and `i` (Euler's number and the
imaginary unit to math-verify), functions, sets, relations, mixed numbers (`2\\frac{1}{3}`), `1/2x` —
returns None and goes to math-verify. Letters are compared case-insensitively, as math-verify does. The
input is parsed, never evaluated, and every size is capped (terms, degrees, exponent, radicand).
"""

from __future__ import annotations

import re
from fractions import Fraction

# A monomial: (name, exponent) pairs, sorted; a prime's root is '#p', with exponent 1.
Key = tuple[tuple[str, int], ...]
Poly = dict[Key, Fraction]
Ratio = tuple[Poly, Poly]  # numerator, denominator

MAX_TERMS = 200
MAX_EXPONENT = 24
MAX_DEGREE = 48
MAX_RADICAND = 10**10
MAX_CHARS = 200
_TOKEN = re.compile(
    r"\s*(\\(?:frac|sqrt|pi|cdot|times)(?![A-Za-z])|[0-9]{1,30}(?![0-9])|[A-Za-z]|[-+*/^(){}])"
)
_SPECIAL_LETTERS = frozenset("eEiI")  # Euler's number and the imaginary unit to math-verify
_STARTS_FACTOR = frozenset(("(", "{", "\\frac", "\\sqrt", "\\pi"))
_ONE: Key = ()


class _Unsettled(Exception):
    """The text is outside what this module decides: math-verify must."""


def equivalent(answer: str, gold: str) -> str | None:
    """'equal' or 'different' when both normalised answers are within reach (module doc), else None."""
    try:
        a, b = _parse(answer), _parse(gold)
        return "equal" if not _sub(_mul(a[0], b[1]), _mul(b[0], a[1])) else "different"
    except (_Unsettled, RecursionError):
        return None


def _parse(text: str) -> Ratio:
    if len(text) > MAX_CHARS:
        raise _Unsettled
    tokens, pos = [], 0
    while pos < len(text.rstrip()):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise _Unsettled  # a character or macro outside the grammar
        tokens.append(m[1])
        pos = m.end()
    parser = _Parser(tokens)
    value = parser.expr()
    if parser.pos != len(tokens):
        raise _Unsettled
    return value


class _Parser:
    """Recursive descent over the tokens: expr = [-] term {(+|-) term}; term = factor {[*] factor | /
    factor}; factor = primary [^ exponent]. Implicit products only where LaTeX leaves no doubt."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.pos = tokens, 0

    def peek(self) -> str:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if not token or (expected is not None and token != expected):
            raise _Unsettled
        self.pos += 1
        return token

    def expr(self) -> Ratio:
        negative = self.peek() == "-"
        if negative or self.peek() == "+":
            self.take()
        value = self.term()
        if negative:
            value = (_neg(value[0]), value[1])
        while self.peek() in ("+", "-"):
            sign = self.take()
            other = self.term()
            value = _add(value, (_neg(other[0]), other[1]) if sign == "-" else other)
        return value

    def term(self) -> Ratio:
        value, kind = self.factor()
        while True:
            token = self.peek()
            if token in ("*", "\\cdot", "\\times"):
                self.take()
                other, kind = self.factor()
                value = _times(value, other)
            elif token == "/":
                self.take()
                other, kind = self.factor()
                value = _times(value, _invert(other))
                if self._implicit(kind):
                    raise _Unsettled  # '1/2x': 1/(2x) to some readers, x/2 to others
            elif self._implicit(kind):
                other, kind = self.factor()
                value = _times(value, other)
            else:
                return value

    def _implicit(self, previous: str) -> bool:
        """Whether the next token starts a factor multiplied without a sign; refuses the doubtful ones."""
        token = self.peek()
        if not token or token[0].isdigit():
            if token and previous:
                raise _Unsettled  # 'x2', '(x+1)2'
            return False
        if token.isalpha() or token in _STARTS_FACTOR:
            if previous == "number" and token == "\\frac":
                raise _Unsettled  # '2\frac{1}{3}' is a mixed number
            if previous == "letter" and token in ("(", "{"):
                raise _Unsettled  # 'f(x)' may be a function
            return True
        return False

    def factor(self) -> tuple[Ratio, str]:
        value, kind = self.primary()
        if self.peek() == "^":
            self.take()
            value, kind = _power(value, self.exponent()), "power"
            if self.peek() == "^":
                raise _Unsettled
        return value, kind

    def exponent(self) -> int:
        token = self.take()
        if token.isdigit() and len(token) == 1:
            return int(token)
        if token != "{":
            raise _Unsettled  # 'x^23' is x^2·3 in LaTeX; 'x^n' is no polynomial
        sign = 1
        if self.peek() == "-":
            self.take()
            sign = -1
        digits = self.take()
        self.take("}")
        if not digits.isdigit() or int(digits) > MAX_EXPONENT:
            raise _Unsettled
        return sign * int(digits)

    def primary(self) -> tuple[Ratio, str]:
        token = self.take()
        if token.isdigit():
            return _constant(Fraction(int(token))), "number"
        if token.isalpha():
            if token in _SPECIAL_LETTERS:
                raise _Unsettled
            return _variable(token.lower()), "letter"
        if token == "\\pi":
            return _variable("π"), "pi"
        if token in ("(", "{"):
            value = self.expr()
            self.take(")" if token == "(" else "}")
            return value, "group"
        if token == "\\frac":
            return _times(self.braced(), _invert(self.braced())), "frac"
        if token == "\\sqrt":
            return _root(self.braced()), "sqrt"
        raise _Unsettled

    def braced(self) -> Ratio:
        self.take("{")
        value = self.expr()
        self.take("}")
        return value


def _constant(value: Fraction) -> Ratio:
    return ({_ONE: value} if value else {}), {_ONE: Fraction(1)}


def _variable(name: str) -> Ratio:
    return {((name, 1),): Fraction(1)}, {_ONE: Fraction(1)}


def _check(poly: Poly) -> Poly:
    if len(poly) > MAX_TERMS:
        raise _Unsettled
    return poly


def _neg(poly: Poly) -> Poly:
    return {k: -c for k, c in poly.items()}


def _sub(a: Poly, b: Poly) -> Poly:
    out = dict(a)
    for k, c in b.items():
        total = out.get(k, 0) - c
        if total:
            out[k] = total
        else:
            out.pop(k, None)
    return out


def _mul(a: Poly, b: Poly) -> Poly:
    out: dict[Key, Fraction] = {}
    for ka, ca in a.items():
        for kb, cb in b.items():
            key, scale = _key_product(ka, kb)
            total = out.get(key, 0) + ca * cb * scale
            if total:
                out[key] = total
            else:
                out.pop(key, None)
    return _check(out)


def _key_product(a: Key, b: Key) -> tuple[Key, int]:
    """The product of two monomials, and the integer that roots squared leave ('#2'·'#2' = 2)."""
    powers = dict(a)
    scale = 1
    for name, exp in b:
        if name[0] == "#" and name in powers:
            del powers[name]
            scale *= int(name[1:])
            continue
        powers[name] = powers.get(name, 0) + exp
        if powers[name] > MAX_DEGREE:
            raise _Unsettled
    return tuple(sorted(powers.items())), scale


def _add(a: Ratio, b: Ratio) -> Ratio:
    if a[1] == b[1]:
        return _sub(a[0], _neg(b[0])), a[1]
    return _sub(_mul(a[0], b[1]), _neg(_mul(b[0], a[1]))), _mul(a[1], b[1])


def _times(a: Ratio, b: Ratio) -> Ratio:
    return _mul(a[0], b[0]), _mul(a[1], b[1])


def _invert(a: Ratio) -> Ratio:
    if not a[0]:
        raise _Unsettled  # a division by zero: math-verify says what that is
    return a[1], a[0]


def _power(base: Ratio, exponent: int) -> Ratio:
    if exponent < 0:
        return _power(_invert(base), -exponent)
    num: Poly = {_ONE: Fraction(1)}
    den: Poly = {_ONE: Fraction(1)}
    for _ in range(exponent):
        num, den = _mul(num, base[0]), _mul(den, base[1])
    return num, den


def _as_rational(value: Ratio) -> Fraction:
    (num, den) = value
    if set(num) - {_ONE} or set(den) != {_ONE}:
        raise _Unsettled  # a variable or a root under the root
    return num.get(_ONE, Fraction(0)) / den[_ONE]


def _root(radicand: Ratio) -> Ratio:
    """√q for a rational q >= 0, as a rational times a product of prime roots: √(a/b) = √(ab)/b."""
    q = _as_rational(radicand)
    if q < 0 or q.numerator * q.denominator > MAX_RADICAND:
        raise _Unsettled
    n, outside, primes = q.numerator * q.denominator, 1, []
    p = 2
    while p * p <= n:
        while n % (p * p) == 0:
            n //= p * p
            outside *= p
        if n % p == 0:
            n //= p
            primes.append(p)
        p += 1
    if n > 1:
        primes.append(n)
    coefficient = Fraction(outside, q.denominator)
    if not coefficient:
        return _constant(Fraction(0))
    key = tuple(sorted((f"#{p}", 1) for p in primes))
    return {key: coefficient}, {_ONE: Fraction(1)}
