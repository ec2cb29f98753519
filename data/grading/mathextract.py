"""Competition-math answers: which LaTeX answer a reply commits to (the README's extraction policy).

1. The text is cut at a runaway continuation ('Problem:', 'Question:', a chat end marker).
2. The answer is in the *last* answer statement that holds one: a group of `\\boxed{}` (adjacent boxes,
   '\\boxed{1}, \\boxed{2}', are one answer: a set), 'Final Answer: ...', 'the answer is ...', '####', or
   a JSON `answer` field. After a phrase, the clause commits to the math it opens with, else to what
   follows its last 'is' ('Final Answer: The largest $n$ is 34' is 34), else to its only item.
3. Two statements with different answers are two answers (ambiguous), unless words between them move
   on ('wait', 'so', 'therefore', 'Final Answer'; `data.grading.hedges`): then the later one. Answers joined by
   'or' are a set only when each gives one variable a value ('$x=2$ or $x=3$'); else ('$2$ or $3$',
   '\\boxed{3} or \\boxed{5}', '$12$, or maybe $14$') they are a hedge: ambiguous. A later statement
   that denies the answer ('the answer is not $5$') voids it; a correction right after it replaces it
   when it says so outright ('Wait, no, $6$' is 6), and voids it after 'actually' or 'rather'. Answers
   given per case before a concluding sentence give way to it.
4. Without statements: a short one-line reply is its own answer ('\\frac{1}{2}', 'Evelyn'; prose such as
   'no answer here' is none); else the last sentence that holds math commits to it as a clause does.
"""

from __future__ import annotations

import re
from bisect import bisect_left

from data.grading.hedges import among_cases, conclusion_after, rival
from data.grading.mathnorm import MAX_ANSWER_CHARS, same_answer
from data.grading.mathspans import clause_answer, masked, sentence_items, spans
from data.grading.number_text import NUMBER
from data.grading.outcome import AMBIGUOUS, NO_ANSWER
from data.grading.statements import REVISION, SELF_CORRECTION, Statement, statements, states, unquoted
from data.grading.textutil import prepare

Read = tuple[str | None, str]
_REVISION_WINDOW = 160
_OR = re.compile(r"(?i)\bor\b")
_ASSIGNS = re.compile(r"[A-Za-z](?:_\{?\w{1,3}\}?)?\s*=")
_HEDGE_CUE = re.compile(r"(?i)\b(?:or|but|maybe|perhaps|possibly|alternatively|could\s+(?:also\s+)?be)\b")
_OR_NEXT = re.compile(r"(?i)[\s*]*(?:or|maybe|perhaps|possibly|alternatively)\b")
_SENTENCE_STOP = re.compile(r"[.!?](?=\s|$)|\n")


def read_math(output: object, nested: bool = False) -> Read:
    """The LaTeX answer `output` commits to (see the module doc), or None and why ('no answer',
    'ambiguous')."""
    text = prepare(output)
    found = statements(text)
    denials = [s for s in found if s.negated and s.kind == "phrase"]
    if denials and not any(states(s) and s.start > denials[-1].start for s in found):
        # 'The answer is not $5$; it is $6$': with no statement after it, what follows the denial may answer
        after, reason = _after_denial(text, denials[-1])
        if after is not None or reason == AMBIGUOUS:
            denied = after is not None and _denied(after, denials)
            return (None, AMBIGUOUS) if denied else (after, reason)
    for index in range(len(found) - 1, -1, -1):
        chosen = found[index]
        if not states(chosen):
            continue
        answer, reason = _read_statement(chosen, nested)
        if answer is None and reason != AMBIGUOUS:
            continue  # it holds no answer: an earlier statement may
        if among_cases(text, found, index) and (concluded := _concluded(text, chosen)) is not None:
            return concluded  # 'Case 1: the answer is $2$. Case 2: ... $3$. So the total is $5$.'
        if answer is None or rival(text, found, index, answer, _earlier_answer, same_answer):
            return None, AMBIGUOUS
        if _denied(answer, [d for d in denials if d.start > chosen.start]):
            return None, AMBIGUOUS
        return _revision(text, chosen, answer) or _hedge(text, chosen, answer) or (answer, "")
    if denials:
        return None, AMBIGUOUS  # 'the answer is not $5$' and nothing else
    return _unmarked(unquoted(text, found))


def _read_statement(statement: Statement, nested: bool) -> Read:
    if statement.kind == "boxed":
        parts: list[str] = []
        for part in (p.strip() for p in statement.parts):
            if part and not any(same_answer(part, seen) for seen in parts):
                parts.append(part)
        if len(parts) > 1 and any(_OR.search(join) for join in statement.joins):
            # '\boxed{3} or \boxed{5}' offers two answers; '$x=\boxed{2}$ or $x=\boxed{3}$' gives x both
            assigned = all(_ASSIGNS.search(join) for join in statement.joins)
            return (",".join(parts), "") if assigned else (None, AMBIGUOUS)
        return (",".join(parts), "") if parts else (None, NO_ANSWER)
    if statement.kind == "json":
        if statement.listed:
            return None, AMBIGUOUS
        return clause_answer(statement.body) if nested else read_math(statement.body, nested=True)
    return clause_answer(statement.body)


def _earlier_answer(statement: Statement) -> str | None:
    return _read_statement(statement, nested=True)[0]


def _concluded(text: str, chosen: Statement) -> Read | None:
    """What a concluding sentence after an answer given in a case commits to, if it holds math."""
    start = conclusion_after(text, chosen)
    if start is None:
        return None
    answer, reason = _unmarked(text[start:], short=False)
    return (answer, reason) if answer is not None or reason == AMBIGUOUS else None


def _hedge(text: str, chosen: Statement, answer: str) -> Read | None:
    """'\boxed{12}, or maybe $14$', 'The answer is $12$, but it could be $14$': the answer's sentence (or a
    next one opening with 'or' / 'maybe') offers another answer across 'or', 'but', 'maybe'."""
    window = text[chosen.end : chosen.end + _REVISION_WINDOW]
    items = _items(window)
    plain = masked(window, spans(window))
    end = _SENTENCE_STOP.search(plain)
    stop = end.end() if end is not None else len(window)
    if end is not None and (alternative := _OR_NEXT.match(plain, stop)) is not None:
        stop = m.end() if (m := _SENTENCE_STOP.search(plain, alternative.end())) is not None else len(window)
    for cue in _HEDGE_CUE.finditer(plain, 0, stop):
        before = [answer] if chosen.kind == "boxed" else []
        before += [item for _, end_at, item in items if end_at <= cue.start()]
        after = next((item for start, _, item in items if cue.end() <= start < stop), None)
        if not before or after is None or same_answer(before[-1], after):
            continue
        # the answer offered beside another ('$12$, or maybe $14$'); two members of the set the answer
        # is ('$x=2$ or $x=3$') are no hedge, nor two items that are not the answer ('by 2, 3, or 6')
        members = _member(before[-1], answer), _member(after, answer)
        if any(members) and not all(members):
            return None, AMBIGUOUS
    return None


def _member(item: str, answer: str) -> bool:
    """Whether `item` is the answer or one of its set's members ('x=3' of 'x=2,x=3')."""
    return any(same_answer(item, part) for part in answer.split(","))


def _items(text: str) -> list[tuple[int, int, str]]:
    """The math spans and the numbers outside them, in order: (start, end, content)."""
    found = spans(text)
    plain = masked(text, found)
    numbers = [(m.start(), m.end(), m[0]) for m in NUMBER.finditer(plain)]
    return sorted([(s.start, s.end, s.content.strip()) for s in found] + numbers)


def _denied_item(denial: Statement) -> tuple[str | None, int]:
    """The answer a denial denies ('the answer is not $5$' -> '5') and where it ends in the denial's body."""
    body = denial.body
    found = spans(body)
    number = NUMBER.search(masked(body, found))
    first = min(
        [(s.start, s.end, s.content) for s in found[:1]]
        + ([(number.start(), number.end(), number[0])] if number else []),
        default=None,
    )
    return (first[2].strip(), first[1]) if first is not None else (None, 0)


def _after_denial(text: str, denial: Statement) -> Read:
    """What the text after a denial's denied answer commits to ('...; it is $6$'), if it holds math."""
    denied, end = _denied_item(denial)
    if denied is None:
        return None, NO_ANSWER
    rest = text[denial.end + end :]
    return _unmarked(rest, short=False)


def _denied(answer: str, denials: list[Statement]) -> bool:
    """Whether one of `denials` denies `answer`."""
    return any((d := _denied_item(denial)[0]) is not None and same_answer(d, answer) for denial in denials)


def _revision(text: str, chosen: Statement, answer: str) -> Read | None:
    """A correction right after the answer that gives another: that answer when the correction says so
    outright ('Wait, no, $6$'), else no answer; None when there is no such correction."""
    window = text[chosen.end : chosen.end + _REVISION_WINDOW]
    for cue in REVISION.finditer(window):
        rest = window[cue.end() :]
        if not (rest[:1] in ("$", "\\") or NUMBER.match(rest)):
            continue  # 'Actually, let me check': no new answer right there
        other, _ = clause_answer(rest)
        if other is not None and not same_answer(other, answer):
            return (other, "") if SELF_CORRECTION.match(cue[0]) is not None else (None, AMBIGUOUS)
    return None


def _unmarked(text: str, short: bool = True) -> Read:
    """No statement: the last sentence that holds math commits to it; else a short one-line reply is
    its own answer when it is math or one word ('\\pi', 'Evelyn'), and prose is no answer."""
    found = spans(text)
    plain = masked(text, found)
    starts = [s.start for s in found]
    for start, end in reversed(sentence_items(text)):
        first = bisect_left(starts, start)
        if (first < len(starts) and starts[first] < end) or NUMBER.search(plain, start, end):
            return clause_answer(text[start:])
    stripped = text.strip()
    if short and stripped and "\n" not in stripped and len(stripped) <= MAX_ANSWER_CHARS:
        return clause_answer(stripped)
    return None, NO_ANSWER
