"""What a v2 population agent writes (`actors.population` decides what it says): a reasoning of the
length the member would write, cut mid-sentence when an output cap stops it — the answer and the
confidence always survive the cut (a real model asked for JSON last-writes them too, but the v2 model
treats a cap as a shorter argument, not a lost answer). No seat identity appears in any reply."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

_OPEN = {
    "initial": (
        "Working through the problem step by step, the result comes out to {a}.",
        "I set up the relevant quantities and solved for the unknown, which gives {a}.",
        "The key constraint in the question pins the answer down to {a}.",
    ),
    "kept": (
        "Having read the other responses, I checked my derivation again and {a} still holds.",
        "The other arguments do not survive a check of their key step, so I keep {a}.",
    ),
    "switched": (
        "One of the other arguments shows where my derivation went wrong; the answer is {a}.",
        "Checking the other responses' key step, theirs holds and mine does not: {a}.",
    ),
    "fixed": (
        "Solving the problem again from the start, I find a different result: {a}.",
        "On a second, independent pass the answer comes out as {a}.",
    ),
    "adversary": (
        "I verified this twice with two independent methods: the answer is definitely {a}.",
        "The other solutions contain a subtle error in the key step; done correctly it gives {a}.",
    ),
    "blind": ("I am not sure what is being asked, so my best guess is {a}.",),
}
_STEPS = (
    "First I restate the quantities given in the problem and what is being asked.",
    "Next I write down the relation between them and substitute the known values.",
    "Then I simplify the expression carefully, keeping track of every sign and unit.",
    "I double-check the intermediate result against a rough estimate of its magnitude.",
    "I also consider whether any of the conditions in the question rule out a case.",
    "Finally I compare the result with the form of answer the question expects.",
)
_STEP_TEXT = " ".join(_STEPS)


def reply_length(rng: np.random.Generator, median: int, q95: int) -> int:
    """A full reply's completion tokens: log-normal through the member's median and 95th percentile."""
    sigma = math.log(max(q95, median) / median) / 1.6449 if median > 0 else 0.0
    return max(8, int(round(median * math.exp(sigma * float(rng.standard_normal())))))


def reasoning_text(rng: np.random.Generator, tag: str, label: str, chars: int) -> str:
    """An argument of about `chars` characters ending on the stated answer."""
    opening = _OPEN[tag][int(rng.integers(len(_OPEN[tag])))].format(a=label)
    room = chars - len(opening) - 1
    if room <= 0:
        return opening
    start = int(rng.integers(len(_STEPS)))
    body = (_STEP_TEXT + " ") * (room // (len(_STEP_TEXT) + 1) + 2)
    offset = sum(len(s) + 1 for s in _STEPS[:start])
    return (body[offset : offset + room].rsplit(" ", 1)[0] + " " + opening).strip()


def write(fields: dict[str, Any], cap: int, tokens_per_char: float) -> tuple[str, int, str]:
    """(text, completion_tokens, finish_reason) of a reply as JSON, cut at `cap` tokens by
    shortening the reasoning mid-sentence (finish "length"); the JSON stays whole."""
    body = json.dumps(fields)
    used = math.ceil(len(body) * tokens_per_char)
    if used <= max(1, cap):
        return body, used, "stop"
    reasoning = str(fields.get("reasoning", ""))
    over = math.ceil((used - max(1, cap)) / tokens_per_char)
    kept = reasoning[: max(0, len(reasoning) - over)].rstrip(" .")  # mid-sentence: no full stop
    text = json.dumps({**fields, "reasoning": kept})
    return text, math.ceil(len(text) * tokens_per_char), "length"


def complete_argument(reasoning: str) -> bool:
    """Whether an argument reads as finished (ends a sentence) rather than cut off by a cap."""
    return reasoning.rstrip().endswith((".", "!", "?", "}", ")", "$"))
