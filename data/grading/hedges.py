"""Hedges between answers, shared by the number and math readers: two answer statements that
disagree, a statement that goes on to another value ('The answer is 12, so 10 are left'), and answers
given per case ('If n is even the answer is 4; if n is odd it is 6') before a conclusion.

The policy (the README's "Benchmarks and graders"): the last statement is the answer, unless an earlier
statement gives another answer and nothing between them moves on (`MOVES_ON`: 'wait', 'so', 'then', a
'Final Answer', 'was my first guess', GSM8K's '####' line): then the reply states two answers and is
ambiguous. An answer given in a case (its sentence opens with 'if', 'when', 'case', 'for the first
...') is intermediate: a later answer beats it, and a concluding sentence after the last case ('So the
total is 10.') is the answer; cases that disagree with no conclusion after them are ambiguous. Every
regex here runs in linear time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from data.grading.statements import MOVES_ON, Statement, states

Answer = TypeVar("Answer")
_FINAL = re.compile(r"(?i)\bfinal(?:ly)?\b[\s*:]*(?:answer)?[\s*:]*\Z")
# Words that put an earlier answer behind: '\boxed{18} was my first guess; the answer is 20'.
_SUPERSEDED = re.compile(
    r"(?i)\b(?:guess\w*|initial(?:ly)?|original(?:ly)?|first|earlier|previous(?:ly)?|reconsider\w*|rethink\w*"
    r"|re-?evaluat\w*|on\s+(?:second\s+thought|reflection)|looking\s+again|hmm+)\b"
)
_SENTENCE_START = re.compile(r"[.?](?=\s)|!(?=\s+[A-Z])|\n")  # '3! \times 5!' goes on
_CASE = re.compile(
    r"(?i)\b(?:case|sub-?case|scenario|if|when|whenever|otherwise"
    r"|for\s+(?:the\s+)?(?:first|second|third|fourth|fifth|last|other|remaining|next)\b"
    r"|for\s+[a-z]\s*(?:=|\\?[<>]|\\[lg]eq?)|in\s+the\s+(?:first|second|third|fourth|other|last)\b)"
)
# A sentence that concludes from the cases before it: what it commits to is the answer.
_CONCLUSION = re.compile(
    r"(?im)(?:^|(?<=[.!?])\s)[ \t*#>_-]{0,20}(?:so|thus|therefore|hence|overall|altogether|in\s+total|in\s+all"
    r"|combined|combining|adding|summing|finally|total(?:ling)?|the\s+total|in\s+conclusion)\b"
)
_CASE_LOOKBACK = 160  # how far back a sentence's opening words are looked for


def in_case(text: str, statement: Statement) -> bool:
    """Whether `statement` stands in a sentence that opens a case ('If n is odd, the answer is 6')."""
    start = max(0, statement.start - _CASE_LOOKBACK)
    opening = start
    for m in _SENTENCE_START.finditer(text, start, statement.start):
        opening = m.end()
    return _CASE.search(text, opening, statement.start) is not None


def moves_on(text: str, end: int, start: int) -> bool:
    """Whether the words from `end` (of an answer) to `start` (of a later one) move on to a new answer
    ('wait', 'so', 'was my first guess', 'Final Answer')."""
    if MOVES_ON.search(text, end, start) or _SUPERSEDED.search(text, end, start):
        return True
    return _FINAL.search(text, max(end, start - 40), start) is not None


def among_cases(text: str, found: Sequence[Statement], index: int) -> bool:
    """Whether `found[index]` is an answer given in a case after another case's answer: the answers of
    worked cases, which a concluding sentence after them may sum up."""
    return in_case(text, found[index]) and any(states(s) and in_case(text, s) for s in found[:index])


def conclusion_after(text: str, statement: Statement) -> int | None:
    """Where a concluding sentence ('So the total is 10.') starts after `statement`'s sentence, or None."""
    m = _CONCLUSION.search(text, statement.end)
    return m.start() if m is not None else None


def rival(
    text: str,
    found: Sequence[Statement],
    index: int,
    answer: Answer,
    read: Callable[[Statement], Answer | None],
    same: Callable[[Answer, Answer], bool],
) -> bool:
    """Whether an earlier statement gives another answer than `found[index]` without anything between
    them that moves on: the reply states two answers. An answer given in a case is intermediate, so it
    rivals only an answer given in a case too."""
    chosen = found[index]
    if chosen.kind == "hashes":
        return False  # GSM8K's '#### 120' line is the final answer by convention
    chosen_in_case = in_case(text, chosen)
    for statement in reversed(found[:index]):
        earlier_in_case = in_case(text, statement)
        if not states(statement) or (earlier_in_case and not chosen_in_case):
            continue
        if statement.end > chosen.start:
            continue  # it holds the chosen one ('{"answer": "The answer is 5"}'): the same answer
        if chosen.kind == "boxed" != statement.kind and not _SENTENCE_START.search(
            text, statement.end, chosen.start
        ):
            continue  # 'The answer is $\boxed{5}$': the box is that phrase's own answer
        other = read(statement)
        if other is None:
            continue  # it states nothing ('The answer is below'): look further back
        if same(other, answer):
            return False
        # two cases that disagree stay two answers, whatever words stand between them
        return (earlier_in_case and chosen_in_case) or not moves_on(text, statement.end, chosen.start)
    return False
