"""Multiple-choice answers: the option letter a reply commits to, read from its output, and graded.

The policy (the README's "Benchmarks and graders" has it in prose):
1. The whole output is a letter ('B', '(b)', 'B.'), or, when the options are known, one option's text
   (the whole output, its boxed answer, its JSON `answer`, or the rest of its 'answer is' line).
2. Else the *last* positive statement: an answer phrase or JSON `answer` ('The answer is (C)',
   `{"answer": "b"}`), `\\boxed{C}`, 'the correct option is C', 'Option C is correct', "I'd go with C",
   "it's C". It is void when it names several letters ('B or C', '(B) and (D)', a JSON list), when a later
   statement rules its letter out ('C is wrong'); a correction right after it names another letter
   instead ('The answer is B. Wait, no, C.' is C; after 'actually' or 'rather' it is void). A letter
   outside the options is no answer either. It is void too when an earlier pick names another letter
   with nothing between that moves on ('Answer: B' then 'Answer: D'), or when its sentence offers
   another beside a word of doubt ('B, or maybe D', 'B (or possibly D)'): ambiguous.
3. Without a positive statement: a last line that is only a letter, or an option's text; else an
   option-by-option walkthrough that marks exactly one option correct (`data.grading.walkthrough`); else the
   one letter the text mentions without ruling it out. 'A is wrong', 'B or C' and 'Between A and B'
   commit to no single letter: unparsable.
An answer labelled with one letter but giving another option's text is unparsable.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from data.grading.hedges import moves_on
from data.grading.letters import Mention, is_prose, prose_mentions, revision_letter, statement_mention
from data.grading.outcome import AMBIGUOUS, NO_ANSWER, REFUSED, Graded
from data.grading.statements import REVISION, SELF_CORRECTION, statements, unquoted
from data.grading.textutil import boxed_contents, prepare
from data.grading.walkthrough import marked_option
from data.types import AnswerKind, Verdict

_LETTER_TOKEN = re.compile(r"(?<![\w'’])(?P<open>[(\[])?(?P<letter>[A-Z])(?P<close>[)\]])?(?![\w'’])")
_WHOLE_LETTER = re.compile(r"[(\[]?([A-Za-z])[)\].:]?")
_LABELLED = re.compile(r"[(\[]?([A-Za-z])[)\].:]\s+(\S.*)", re.S)  # 'B. Paris', '(c) the text'
_TEXT_MACRO = re.compile(r"\\text(?:bf|rm|it)?\s*\{([^{}]{0,500})\}")
_EDGE_JUNK = " \t\r\n*\"'`.,;:!?$"
_NO_MATCH = ""  # _option_by_text's "the options disagree with the letter given": unparsable
_REVISION_WINDOW = 120
_LIST = re.compile(r"\s*\[\s*[\"']?[A-Za-z][\"']?\s*(?:,|$)")  # '["A", "B"]', or the '["A"' of a broken reply
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_DOUBT = re.compile(
    r"(?i)\b(?:or|maybe|perhaps|possibly|possible|alternatively|also|could|might|unsure|not\s+sure)\b"
)
_CONCLUDING = re.compile(r"(?i)(?:so|thus|therefore|hence)\b")
_OR_NEXT = re.compile(r"(?i)[\s*]*(?:or|maybe|perhaps|possibly|alternatively)\b")
_SENTENCE_STOP = re.compile(r"[.!?](?=\s|$)|\n")
Read = tuple[str | None, str]


def letters(n_choices: int) -> str:
    """The valid option letters for `n_choices` options ('ABCD' for 4)."""
    if not 1 <= n_choices <= 26:
        raise ValueError(f"n_choices must be in 1..26, got {n_choices}")
    return _ALPHABET[:n_choices]


def normalize_option(text: str) -> str:
    """Option text for comparison: `\\text{}` unwrapped, case and spacing folded, edge punctuation gone."""
    return " ".join(_TEXT_MACRO.sub(r"\1", text).casefold().split()).strip(_EDGE_JUNK)


def read_choice(output: object, n_choices: int = 4, choices: Sequence[str] = ()) -> Read:
    """The option letter `output` commits to (see the module doc), or None and why: 'no answer' or
    'ambiguous'. With `choices` (the options' texts, in shown order) an option's text counts too."""
    valid = letters(n_choices)
    text = prepare(output)
    stripped = text.strip().strip("*\"'` ")
    if (whole := _WHOLE_LETTER.fullmatch(stripped)) is not None:
        return (whole[1].upper(), "") if whole[1].upper() in valid else (None, REFUSED)
    found = statements(text)
    options = choices[: len(valid)]
    if options and (by_text := _option_by_text(_strong_candidates(text, found), options)) is not None:
        return (by_text, "") if by_text else (None, AMBIGUOUS)
    if _LIST.match(text):
        return None, AMBIGUOUS
    mentions = sorted(
        [m for s in found if (m := statement_mention(text, s, valid)) is not None] + prose_mentions(text),
        key=lambda m: m.start,
    )
    positive = [m for m in mentions if m.positive]
    if positive:
        return _final(text, positive[-1], mentions, valid)
    rest = unquoted(text, found)  # 'Agent 2's answer is B' names no letter of this reply's
    if options and (by_text := _option_by_text(_last_line(rest), options)) is not None:
        return (by_text, "") if by_text else (None, AMBIGUOUS)
    if (marked := marked_option(rest, valid)) is not None:
        return marked, ""  # 'A) ... incorrect. B) ... correct. C) ... incorrect.'
    return _fallback(rest, mentions, valid)


def _final(text: str, chosen: Mention, mentions: list[Mention], valid: str) -> Read:
    """The letter of the last positive mention, unless it names several, lies outside the options, is
    ruled out later, or a correction right after it names another."""
    if chosen.several or len(set(chosen.letters)) != 1:
        return None, AMBIGUOUS
    if chosen.letters[0] not in valid:
        return None, REFUSED
    letter = chosen.letters[0]
    if any(not m.positive and m.start > chosen.start and letter in m.letters for m in mentions):
        return None, AMBIGUOUS
    if _rival(text, chosen, mentions) or _hedged(text, chosen, mentions, valid):
        return None, AMBIGUOUS
    window = text[chosen.end : chosen.end + _REVISION_WINDOW]
    for cue in REVISION.finditer(window):
        other = revision_letter(window, cue.end(), valid)
        if other is not None and other != letter:
            outright = SELF_CORRECTION.match(cue[0]) is not None and other != "?"
            return (other, "") if outright else (None, AMBIGUOUS)  # 'Wait, no, C.' is C
    return letter, ""


def _rival(text: str, chosen: Mention, mentions: list[Mention]) -> bool:
    """Whether the nearest earlier pick names another letter with nothing between that moves on:
    'Answer: B' then 'Answer: D', or 'B is correct. ... D is correct.' pick two."""
    for m in reversed([m for m in mentions if m.positive and m.end <= chosen.start]):
        if m.several or len(set(m.letters)) != 1 or m.letters == chosen.letters:
            return False
        # '..., so B' moves on with the pick's own first word
        return not (moves_on(text, m.end, chosen.start) or _CONCLUDING.match(text, chosen.start))
    return False


def _hedged(text: str, chosen: Mention, mentions: list[Mention], valid: str) -> bool:
    """'The answer is B, or maybe D', 'B (or possibly D)', 'I'd go with B, but D is also possible',
    'The answer is B. Or D.': the pick's sentence (or a next one opening with 'or') names another
    letter, not ruled out, beside a word of doubt."""
    window = text[chosen.end : chosen.end + _REVISION_WINDOW]
    stop = _stop(window, 0)
    if stop < len(window) and _OR_NEXT.match(window, stop):
        stop = _stop(window, stop)
    if _DOUBT.search(window, 0, stop) is None:
        return False
    ruled_out = {x for m in mentions if not m.positive and m.start >= chosen.end for x in m.letters}
    for token in _LETTER_TOKEN.finditer(window, 0, stop):
        other = token["letter"]
        set_off = bool(token["open"] or token["close"])
        named = other in valid and other not in chosen.letters and other not in ruled_out
        if named and not is_prose(window, other, token.end(), set_off):
            return True
    return False


def _stop(text: str, start: int) -> int:
    end = _SENTENCE_STOP.search(text, start)
    return end.end() if end is not None else len(text)


def _fallback(text: str, mentions: list[Mention], valid: str) -> Read:
    """No positive statement: a last line that is only a letter, else the one letter mentioned and not
    ruled out."""
    lines = [line.strip().strip("*\"'` ") for line in text.splitlines() if line.strip()]
    if lines and (last := _WHOLE_LETTER.fullmatch(lines[-1])) is not None and len(lines) > 1:
        return (last[1].upper(), "") if last[1].upper() in valid else (None, REFUSED)
    ruled_out = {letter for m in mentions if not m.positive for letter in m.letters}
    named: set[str] = set()
    for token in _LETTER_TOKEN.finditer(text):
        letter = token["letter"]
        if letter in valid and not is_prose(text, letter, token.end(), bool(token["open"] or token["close"])):
            named.add(letter)
            if len(named) > 1:
                return None, AMBIGUOUS  # two different letters: no single one stands out
    if named and not ruled_out:
        return named.pop(), ""
    return None, AMBIGUOUS if named or ruled_out else NO_ANSWER


def _strong_candidates(text: str, found: Sequence[object]) -> list[str]:
    """Where an answer given as option text stands explicitly: the whole output, its boxed answer, its
    JSON `answer`, and the rest of the line after its last answer phrase."""
    candidates = [text]
    if (boxed := boxed_contents(text)) is not None:
        candidates.append(boxed)
    for statement in reversed(found):
        kind, body = getattr(statement, "kind", ""), getattr(statement, "body", "")
        if kind == "json":
            candidates.append(body)
        elif kind == "phrase" and not getattr(statement, "negated", False):
            candidates.append(body.split("\n", 1)[0])
            break
    return candidates


def _last_line(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1:]


def _option_by_text(candidates: list[str], choices: Sequence[str]) -> str | None:
    """The letter of the one option whose text a candidate is, also after the candidate's own letter
    label ('B. Paris'); `_NO_MATCH` when that label names another option than the text does."""
    options = [normalize_option(c) for c in choices]

    def hit(said: str) -> int | None:
        core = said.strip("()[].: ")
        if len(core) == 1 and core.isascii() and core.isalpha():
            return None  # a bare letter is a letter, even where some option's text is that letter
        hits = [i for i, option in enumerate(options) if said and option == said]
        return hits[0] if len(hits) == 1 else None

    for candidate in candidates:
        if (index := hit(normalize_option(candidate))) is not None:
            return _ALPHABET[index]
        m = _LABELLED.fullmatch(candidate.strip().strip("*`\"' "))
        if m is not None and (index := hit(normalize_option(m[2]))) is not None:
            letter = _ALPHABET[index]
            return letter if m[1].upper() == letter else _NO_MATCH
    return None


def canonical_choice(text: str, n_choices: int = 4, choices: Sequence[str] = ()) -> str | None:
    """The option letter (A.. the n_choices-th) that `text` answers with, or None (see the module doc)."""
    return read_choice(text, n_choices, choices)[0]


class ChoiceGrader:
    """Grades multiple-choice answers by option letter; knows the options' texts when given them."""

    kind: AnswerKind = "choice"

    def __init__(self, n_choices: int = 4, choices: Sequence[str] = ()) -> None:
        if choices:
            n_choices = len(choices)
        letters(n_choices)
        self.n_choices = n_choices
        self.choices = tuple(choices)

    def canonical(self, output: str) -> str | None:
        return canonical_choice(output, self.n_choices, self.choices)

    def read(self, output: str) -> Read:
        """The option letter, or None and why ('no answer', 'ambiguous', 'refused'): `canonical` with its reason."""
        return read_choice(output, self.n_choices, self.choices)

    def explain(self, output: str, gold: str) -> Graded:
        """The verdict with the letter read and, when unparsable, why."""
        expected = canonical_choice(gold, self.n_choices)
        if expected is None:
            raise ValueError(f"gold {gold[:80]!r} is not one of {letters(self.n_choices)}")
        answer, reason = read_choice(output, self.n_choices, self.choices)
        if answer is None:
            return Graded("unparsable", None, reason)
        return Graded("correct" if answer == expected else "wrong", answer)

    def grade(self, output: str, gold: str) -> Verdict:
        return self.explain(output, gold).verdict
