"""What the simulated agents write: templated reasoning sentences, PEAR's E.5 reviews and E.4
verdicts, and the JSON text around them (fenced, trailed, or malformed at a rate). The decisions (which
answer, which confidence) are made in `actors.simulated`; this module only words them. Every `rng`
draw here is part of the population's reproducible stream, so adding a field that draws nothing
(the verdicts) leaves every other reply unchanged."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from actors.sim_hints import Hints

_SAY = {
    "initial": (
        "Working through the problem step by step, the result comes out to {a}.",
        "I set up the relevant quantities and solved for the unknown, which gives {a}.",
        "Checking each step of the calculation again, I arrive at {a}.",
        "The key constraint in the question pins the answer down to {a}.",
    ),
    "kept": (
        "After reviewing the other agents' answers, I still believe {a} is right.",
        "I re-checked my work against the other responses and {a} still holds.",
    ),
    "switched": (
        "The other agents' reasoning is convincing; I revise my answer to {a}.",
        "I found a slip in my earlier work, and the answer {a} from the others is correct.",
        "Reconsidering with the others' arguments in mind, {a} is better supported.",
    ),
    "fixed": (
        "Re-checking my own work, I found an error; the answer should be {a}.",
        "On a second pass my earlier answer does not hold up; it is {a}.",
    ),
    "blind": ("I am not sure what is being asked, so my best guess is {a}.",),
    "adversary": (
        "I verified this twice with two independent methods: the answer is definitely {a}.",
        "The other solutions contain a subtle error in the key step; done correctly it gives {a}.",
        "Every careful check I ran confirms {a}; the alternatives rest on a common misreading.",
    ),
}
_STEPS = (
    "First I restate the quantities given in the problem and what is being asked.",
    "Next I write down the relation between them and substitute the known values.",
    "Then I simplify the expression carefully, keeping track of every sign and unit.",
    "I double-check the intermediate result against a rough estimate of the magnitude.",
    "I also consider whether any of the conditions in the question rule out a case.",
    "Finally I compare the result with the form of answer the question expects.",
)
_FLAWS = ("drops a term in the calculation", "misreads the question", "makes an arithmetic slip")
_TRAILERS = ("I am fairly confident in this.", "This matches a quick sanity check.", "Happy to revisit it.")
_PROSE = ("This problem needs more careful thought than I can give it now.", "There are several ways in.")


def pick(rng: np.random.Generator, options: Sequence[str]) -> str:
    """One of `options`, uniformly (one `rng` draw)."""
    return options[int(rng.integers(len(options)))]


def render(rng: np.random.Generator, fields: dict[str, Any], malformed_rate: float) -> tuple[str, str]:
    """(text, finish_reason): the fields as a model would write them, or malformed at `malformed_rate`."""
    body = json.dumps(fields)
    style, r = int(rng.integers(4)), rng.random()
    if r < malformed_rate:
        broken = int(rng.integers(3))
        if broken == 0:  # cut off before the confidence: a reply that hit its token limit
            cut = int(rng.integers(1, body.index('"confidence"')))
            return ("```json\n" if style % 2 else "") + body[:cut], "length"
        if broken == 1:
            return pick(rng, _PROSE), "stop"
        body = json.dumps({k: v for k, v in fields.items() if k != "confidence"})
    fenced = f"```json\n{body}\n```"
    return (body, fenced, fenced, f"{fenced}\n{pick(rng, _TRAILERS)}")[style], "stop"


def payload(rng: np.random.Generator, h: Hints, tag: str, answer: str, conf: int) -> dict[str, Any]:
    """The reply's fields: a templated reasoning sentence (or per-target reviews), answer, confidence;
    a revision also answers each critique. Verdicts draw nothing from `rng`, so adding them left every
    other reply of the population unchanged."""
    label = f"option {answer}" if h.kind == "choice" else answer
    if tag == "critique":
        return {
            "reviews": [review(rng, j, a, answer) for j, a in h.sources],
            "answer": answer,
            "confidence": conf,
        }
    out = {"reasoning": pick(rng, _SAY[tag]).format(a=label), "answer": answer, "confidence": conf}
    if h.phase == "revise" and h.sources:
        out["critique_response"] = {
            str(j + 1): {"decision": "ACCEPT", "reason": f"Its answer {a} is what I now hold."}
            if same(a, answer)
            else {"decision": "REJECT", "reason": f"Its answer {a} does not survive my check."}
            for j, a in h.sources
        }
    return out


def elaborate(rng: np.random.Generator, reasoning: str, verbosity: float) -> str:
    """`reasoning` after Poisson(`verbosity`) worked-step sentences (a verbose model's reply)."""
    steps = [pick(rng, _STEPS) for _ in range(int(rng.poisson(verbosity)))]
    return " ".join([*steps, reasoning])


def review(rng: np.random.Generator, target: int, theirs: str | None, mine: str) -> dict[str, Any]:
    """One E.5 review: agreement is "no error", disagreement names a flaw (an `rng` draw, as before)."""
    if theirs is None:
        return {
            "target": target + 1,
            "assessment": "Flawed",
            "step_loc": "No final answer is given.",
            "correction": f"State a final answer; mine is {mine}.",
        }
    if same(theirs, mine):
        return {
            "target": target + 1,
            "assessment": "Strong",
            "step_loc": "No error identified",
            "correction": f"Agent {target + 1} also reaches {theirs}; the argument holds.",
        }
    return {
        "target": target + 1,
        "assessment": "Flawed",
        "step_loc": f"It {pick(rng, _FLAWS)}.",
        "correction": f"Agent {target + 1} answers {theirs}, but the answer should be {mine}.",
    }


def same(a: str | None, b: str | None) -> bool:
    """Whether two canonical answers agree (numbers compared by value: "18" == "18.0")."""
    if a is None or b is None:
        return False
    try:
        return a.strip() == b.strip() or float(a) == float(b)
    except ValueError:
        return False
