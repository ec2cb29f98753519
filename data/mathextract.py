"""Competition-math answers: which LaTeX answer a reply commits to (the README's extraction policy).

1. The text is cut at a runaway continuation ('Problem:', 'Question:', a chat end marker).
2. The answer is in the *last* answer statement that holds one: a group of `\\boxed{}` (adjacent boxes,
   '\\boxed{1}, \\boxed{2}', are one answer: a set), 'Final Answer: ...', 'the answer is ...', '####', or
   a JSON `answer` field. After a phrase, the clause commits to the math it opens with, else to what
   follows its last 'is' ('Final Answer: The largest $n$ is 34' is 34), else to its only item.
3. Two separate boxes with different answers are two answers, unless words between them move on
   ('wait', 'so', 'therefore', 'the answer'): then the later one. A later statement that denies the
   answer ('the answer is not $5$') voids it; a correction right after it replaces it when it says so
   outright ('Wait, no, $6$' is 6), and voids it after 'actually' or 'rather'.
4. Without statements: a short one-line reply is its own answer ('\\frac{1}{2}', 'Evelyn'; prose such as
   'no answer here' is none); else the last sentence that holds math commits to it as a clause does.
"""

from __future__ import annotations

from bisect import bisect_left

from data.graded import AMBIGUOUS, NO_ANSWER
from data.mathnorm import MAX_ANSWER_CHARS, same_answer
from data.mathspans import clause_answer, masked, sentence_items, spans
from data.numbers import NUMBER
from data.statements import MOVES_ON, REVISION, SELF_CORRECTION, Statement, statements, states, unquoted
from data.textutil import prepare

Read = tuple[str | None, str]
_REVISION_WINDOW = 160


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
        if answer is None or _competes(text, found[:index], chosen, answer):
            return None, AMBIGUOUS
        if _denied(answer, [d for d in denials if d.start > chosen.start]):
            return None, AMBIGUOUS
        return _revision(text, chosen, answer) or (answer, "")
    if denials:
        return None, AMBIGUOUS  # 'the answer is not $5$' and nothing else
    return _unmarked(unquoted(text, found))


def _read_statement(statement: Statement, nested: bool) -> Read:
    if statement.kind == "boxed":
        parts: list[str] = []
        for part in (p.strip() for p in statement.parts):
            if part and not any(same_answer(part, seen) for seen in parts):
                parts.append(part)
        return (",".join(parts), "") if parts else (None, NO_ANSWER)
    if statement.kind == "json":
        if statement.listed:
            return None, AMBIGUOUS
        return clause_answer(statement.body) if nested else read_math(statement.body, nested=True)
    return clause_answer(statement.body)


def _competes(text: str, earlier: list[Statement], chosen: Statement, answer: str) -> bool:
    """Whether the nearest earlier box gives another answer, with no words between that move on."""
    if chosen.kind != "boxed":
        return False
    for statement in reversed(earlier):
        if statement.kind != "boxed":
            continue
        other, _ = _read_statement(statement, nested=True)
        if other is None or same_answer(other, answer):
            return False
        return MOVES_ON.search(text, statement.end, chosen.start) is None
    return False


def _denied_item(denial: Statement) -> tuple[str | None, int]:
    """The answer a denial denies ('the answer is not $5$' -> '5') and where it ends in the denial's body."""
    body = denial.body
    found = spans(body)
    number = NUMBER.search(masked(body, found))
    first = min(
        [(s.start, s.end, s.content) for s in found[:1]] + ([(number.start(), number.end(), number[0])] if number else []),
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
