"""Numeric answers (GSM8K, arith): read the number a reply commits to, and grade it by rational equality.

The policy (the README's "Benchmarks and graders" has it in prose):
1. The text is cut at a runaway continuation ('Question:', 'Q:' after the answer), GSM8K's `<<48/2=24>>`
   annotations and confidence statements ('Confidence: 4', '90% sure') are dropped.
2. The answer is in the *last* answer statement that holds a number: a group of `\\boxed{}`, the last
   '####', 'the answer is' / 'Answer:' / 'Final Answer', or a JSON `answer` field. In a statement the
   number must come first ('The answer is 4 + 3 = 7' is 7); else the statement's clause must name one
   number. A statement naming several ('18 or 20', '4, 2, 1', a JSON list) gives no answer.
3. An answer is void when a later statement denies it ('the answer is not 18'); a correction right
   after it replaces it when it says so outright and names one number ('The answer is 18. Wait, no,
   20.' is 20), and voids it otherwise ('The answer is 18. Actually, 3 of them are left'). It is
   ambiguous when an earlier statement gives another number with nothing between that moves on
   ('Answer: 12' then 'Answer: 14'; `data.grading.hedges`), or when its sentence goes on to another number
   ('The answer is 12, so she has 10 left', 'Answer: 12 (or 14)'). Answers given per case before a
   concluding sentence ('... So the total is 10.') give way to it.
4. Without statements: the last sentence with a number must commit to one (the result after its last
   '=', its only number, or a number that ends it); 'She sold 72 clips in 2 months.' commits to none.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction

from data.grading.hedges import among_cases, conclusion_after, rival
from data.grading.number_text import (
    AMBIGUOUS,
    NO_ANSWER,
    NUMBER,
    RESULT,
    clause_at,
    committed,
    format_fraction,
    numbers,
    read_leading,
    spell_plainly,
    value,
)
from data.grading.outcome import Graded
from data.grading.statements import REVISION, SELF_CORRECTION, Statement, statements, states, unquoted
from data.grading.textutil import last_match, prepare
from data.types import AnswerKind, Verdict

__all__ = ["NumericGrader", "canonical_number", "format_fraction", "read_number"]

Read = tuple[str | None, str]  # (canonical number, '') or (None, why not)
_CALCULATOR = re.compile(r"<<[^<>\n]{0,200}>>")
_META = re.compile(
    r"(?i)\bconfiden(?:ce|t)\b(?:\s+level)?[\"'\s*:=]*(?:is\s+)?\d{1,3}(?:\.\d+)?\s*(?:/\s*\d{1,3}|out\s+of\s+\d{1,3}|%)?"
    r"|\b\d{1,3}(?:\.\d+)?\s*%\s*(?:sure|confident|certain)\b|\b(?P<label>step|part|case)\s+\d{1,2}\b"
)
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")
_CLOSING = re.compile(r"[\s.,!?;:*_`'\")\]}$%]*")
_CONCLUSION = re.compile(
    r"(?i)(?:,|\b)\s*(?:so|thus|therefore|hence|which\s+means|meaning|giving|making|that\s+is|i\.e\.)\b[,:]?"
)
_LIST = re.compile(r"\s*\[\s*[\"']?[-+$.0-9]")  # '[4, 2]', or the '[4' a broken JSON reply leaves
# After an answer, words that go on to another value: a hedge, or a result that is not the answer.
_HEDGE_CUE = re.compile(
    r"(?i)\b(?:(?P<result>so|thus|therefore|hence|then|leaving|giving|meaning|to\s+get"
    r"|resulting\s+in)|or|but|however|maybe|perhaps|possibly|alternatively)\b"
)
_OR_NEXT = re.compile(r"(?i)[\s*]*(?:or|maybe|perhaps|possibly|alternatively)\b")
_REVISION_WINDOW = 160  # how far after an answer a correction ('Wait, no, 20') is looked for
_MEMO_CHARS = 256  # texts up to this long are read once per process (see `read_number`)


def read_number(output: object, nested: bool = False) -> Read:
    """The number `output` commits to (see the module doc), canonical ('1250.5', '-3', '0.75'), or None
    and the reason: 'no answer' or 'ambiguous'."""
    # A sweep reads the same short answers over and over (an answer field like '12', once per agent, round,
    # vote and diagnostic): 98 % of the reads in a simulated sweep repeat a text. Reading is a pure
    # function of the text, so short texts are remembered; long ones rarely repeat and are read afresh.
    if type(output) is str and len(output) <= _MEMO_CHARS:
        return _read_short(output, nested)
    return _read(output, nested)


@functools.lru_cache(maxsize=4096)
def _read_short(text: str, nested: bool) -> Read:
    return _read(text, nested)


def _read(output: object, nested: bool) -> Read:
    # 'Case 2' keeps its word (it opens a case), not its number
    text = _META.sub(lambda m: m["label"] or " ", _CALCULATOR.sub("", spell_plainly(prepare(output))))
    if _LIST.match(text):
        return None, AMBIGUOUS
    found = statements(text)
    denials = [s for s in found if s.negated and s.kind == "phrase"]
    if denials and not any(states(s) and s.start > denials[-1].start for s in found):
        # 'The answer isn't 20, it's 18': with no statement after it, what follows the denial may answer
        after, reason = _after_denial(text, denials[-1])
        if after is not None or reason == AMBIGUOUS:
            return (None, AMBIGUOUS) if after is not None and _denied(after, denials) else (after, reason)
    for index in range(len(found) - 1, -1, -1):
        chosen = found[index]
        if not states(chosen):
            continue
        answer, reason = _read_statement(chosen, nested)
        if answer is None and reason != AMBIGUOUS:
            continue  # it holds no number ('The answer is below'): an earlier statement may
        if among_cases(text, found, index) and (concluded := _concluded(text, chosen)) is not None:
            return concluded  # 'If n is even the answer is 4; if odd, 6. So the total is 10.'
        if answer is None or _competes(text, found, index, answer):
            return None, AMBIGUOUS
        if _denied(answer, [d for d in denials if d.start > chosen.start]):
            return None, AMBIGUOUS
        return _revision(text, chosen, answer) or _hedge(text, chosen, answer) or (answer, "")
    if denials:
        return None, AMBIGUOUS  # 'The answer is not 18' and nothing else
    return _last_sentence(unquoted(text, found))


def _after_denial(text: str, denial: Statement) -> Read:
    """What the text after a denial's denied number commits to ('..., it's 18'), if it names a number."""
    denied = NUMBER.search(denial.body)
    if denied is None:
        return None, NO_ANSWER
    rest = text[denial.end + denied.end() :]
    return _last_sentence(rest) if NUMBER.search(rest) else (None, NO_ANSWER)


def _denied(answer: str, denials: list[Statement]) -> bool:
    """Whether one of `denials` ('the answer is not 18') denies `answer`."""
    for denial in denials:
        denied = NUMBER.search(denial.body)
        value = denied is not None and _value_text(denied)
        if value and Fraction(value) == Fraction(answer):
            return True
    return False


def _value_text(m: re.Match[str]) -> str | None:
    number = value(m)
    return None if number is None else format_fraction(number)


def _competes(text: str, found: list[Statement], index: int, answer: str) -> bool:
    """Whether an earlier statement gives another number with nothing between that moves on
    (`data.grading.hedges.rival`): 'Answer: 12' then 'Answer: 14' states two answers."""
    return rival(text, found, index, answer, lambda s: _read_statement(s, nested=True)[0], _equal)


def _equal(a: str, b: str) -> bool:
    return Fraction(a) == Fraction(b)


def _concluded(text: str, chosen: Statement) -> Read | None:
    """What a concluding sentence after an answer given in a case commits to, if it names a number."""
    start = conclusion_after(text, chosen)
    if start is None:
        return None
    answer, reason = _last_sentence(text[start:])
    return (answer, reason) if answer is not None or reason == AMBIGUOUS else None


def _hedge(text: str, chosen: Statement, answer: str) -> Read | None:
    """'The answer is 12, so she has 10 left', 'Answer: 12 (or 14)', 'The answer is 12. Or 14.': after
    the answer, its sentence (or a next one opening with 'or' / 'maybe') goes on to another number."""
    window = text[chosen.end : chosen.end + _REVISION_WINDOW]
    at = next((m for m in NUMBER.finditer(window) if _same(m, answer)), None)
    if at is None:
        return None
    stop = _sentence_stop(window, at.end())
    if stop < len(window) and (alternative := _OR_NEXT.match(window, stop)) is not None:
        stop = _sentence_stop(window, alternative.end())
    for cue in _HEDGE_CUE.finditer(window, at.end(), stop):
        other = NUMBER.search(window, cue.end(), stop)
        if other is None or _value_text(other) is None or _same(other, answer):
            continue
        # 'so'/'leaving' go on to a result whatever stands before; 'or'/'but' offer an alternative to
        # the number right before them, which must be the answer ('divided by 2, 3, or 6' offers none)
        nearest = last_match(NUMBER.finditer(window, at.start(), cue.start()))
        if cue["result"] is not None or (nearest is not None and _same(nearest, answer)):
            return None, AMBIGUOUS
    return None


def _same(m: re.Match[str], answer: str) -> bool:
    number = _value_text(m)
    return number is not None and Fraction(number) == Fraction(answer)


def _sentence_stop(text: str, start: int) -> int:
    end = _SENTENCE_END.search(text, start)
    return end.end() if end is not None else len(text)


def _read_statement(statement: Statement, nested: bool) -> Read:
    if statement.kind == "json":
        if statement.listed or nested:
            return None, AMBIGUOUS
        return read_number(statement.body, nested=True)  # the field's text, read as a reply of its own
    if statement.kind == "boxed":
        reads = [_read_clause(part.strip()) for part in statement.parts]
        if any(reason == AMBIGUOUS for _, reason in reads):
            return None, AMBIGUOUS
        values = {Fraction(answer) for answer, _ in reads if answer is not None}
        if len(values) > 1:
            return None, AMBIGUOUS  # '\boxed{18} and \boxed{20}'
        return (format_fraction(values.pop()), "") if values else (None, NO_ANSWER)
    return _read_clause(clause_at(statement.body))


def _read_clause(clause: str) -> Read:
    """What a statement's clause commits to: its leading number, else what its sentence commits to."""
    answer, reason = read_leading(clause)
    if answer is not None or reason == AMBIGUOUS:
        return answer, reason
    return _sentence_answer(clause)


def _revision(text: str, chosen: Statement, answer: str) -> Read | None:
    """A correction right after the answer that names another number: that number when the correction
    says so outright and names nothing else ('Wait, no, 20.'), else no answer ('Actually, 3 of them...');
    None when there is no such correction."""
    window = text[chosen.end : chosen.end + _REVISION_WINDOW]
    for cue in REVISION.finditer(window):
        clause = clause_at(window, cue.end())
        other, reason = read_leading(clause)
        if reason == AMBIGUOUS:
            return None, AMBIGUOUS  # 'Wait, no, 20 or 21'
        if other is None or Fraction(other) == Fraction(answer):
            continue
        lead = NUMBER.search(clause)
        outright = SELF_CORRECTION.match(cue[0]) is not None
        if outright and lead is not None and _CLOSING.fullmatch(clause, lead.end()):
            return other, ""
        return None, AMBIGUOUS
    return None


def _last_sentence(text: str) -> Read:
    """What the last sentence that holds a number commits to."""
    end = len(text)
    for boundary in reversed([0, *(m.end() for m in _SENTENCE_END.finditer(text))]):
        sentence = text[boundary:end]
        if NUMBER.search(sentence) is not None:
            return _sentence_answer(sentence)
        end = boundary
    return None, NO_ANSWER


def _sentence_answer(sentence: str) -> Read:
    """What a sentence commits to: that of its last clause after 'so'/'thus'/'which means' when that
    clause has a number; else the result after its last '=', its only number, or a number that ends it."""
    conclusions = list(_CONCLUSION.finditer(sentence))
    if conclusions and NUMBER.search(sentence, conclusions[-1].end()):
        sentence = sentence[conclusions[-1].end() :]
    results = list(RESULT.finditer(sentence))
    if results:
        return read_leading(sentence[results[-1].end() :])
    found = numbers(sentence)
    if not found:
        return None, NO_ANSWER
    if len(found) == 1 or _CLOSING.fullmatch(sentence, found[-1].end()):
        return committed(sentence, found[-1])
    return None, AMBIGUOUS


def canonical_number(text: str) -> str | None:
    """The number `text` commits to, canonical ('$1,250.50' -> '1250.5', '3/4' -> '0.75'), or None."""
    return read_number(text)[0]


class NumericGrader:
    """Grades numeric answers by exact rational equality, so '18' == '18.00' == '$18'."""

    kind: AnswerKind = "numeric"

    def canonical(self, output: str) -> str | None:
        return canonical_number(output)

    def read(self, output: str) -> Read:
        """The canonical number, or None and why ('no answer', 'ambiguous'): `canonical` with its reason."""
        return read_number(output)

    def explain(self, output: str, gold: str) -> Graded:
        """The verdict with the answer read and, when unparsable, why."""
        expected = canonical_number(gold)
        if expected is None:
            raise ValueError(f"gold {gold[:80]!r} is not a number")
        answer, reason = read_number(output)
        if answer is None:
            return Graded("unparsable", None, reason)
        return Graded("correct" if Fraction(answer) == Fraction(expected) else "wrong", answer)

    def grade(self, output: str, gold: str) -> Verdict:
        return self.explain(output, gold).verdict
