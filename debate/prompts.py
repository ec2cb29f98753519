"""Prompt templates, in two families chosen per method by `prompt_style`:

- `pear` (default): PEAR appendix E — system instruction (E.1), confidence rubric (E.2), initial answer
  (E.3), per-turn update for the `update` protocol (E.6), critique (E.5) and revision (E.4) for
  `critique_revise`, with the benchmark kind's task and answer-format line (E.7); replies are JSON.
- `rumad`: RUMAD Table 8 — its system, "Starting" and "Debate" prompts, with Table 7's output format (a
  free-text explanation ending in `\\boxed{answer}`); the debate prompt is a second user turn after the
  agent's own previous reply, as in Du et al. It has no critique templates.
The answer-format lines come from `data.benchmarks.formats.format_block(kind, style)`.

Rendering is byte-stable and ordered for engines' prefix caches (blocks of e.g. 128 tokens are reused
only while every token before them matches): what is the same for every item comes first (system,
confidence rubric, the phase's fixed instructions and reply format), then the item (the PROBLEM
block), then what is agent- and round-specific ("You are Agent k", its own and its peers' answers,
reply shapes that name agents). So every item's prompts share their first blocks, and the agents of an
episode share everything up to their names. The templates' sentences are the papers' words; only their
order differs from the papers' (and `tests/test_prompt_parts.py` checks no sentence changed). The RUMAD
debate turn carries the agent's own previous reply as it generated it (when known), so the turn
extends what the engine already holds. Agents are named 1-based ("Agent 3" is index 2).

Departures from the papers' text, all so that prompts, parsing and structured output agree:
- PEAR replies are asked with `reasoning` first (as `REPLY_SCHEMA` orders it, so that under constrained
  decoding the answer follows the reasoning); PEAR lists `answer` first;
- E.6's extra `neighbor_assessment` key is not asked: update replies share `REPLY_SCHEMA`;
- RUMAD's output format gets one more sentence asking for a "Confidence: N" last line (RUMAD's
  controller may observe a confidence; the vote breaks ties with it); its "indicated importance" is
  shown only when weights are given. RUMAD prompts ask for free text, so `structured_schema` gives
  them no JSON schema even where the seat uses structured output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from actors.base import Message
from data.benchmarks.formats import format_block
from data.types import Sample
from debate.prompt_views import MAX_PEER_REASONING_CHARS, clip, describe, options
from debate.prompts_rumad import RUMAD_SYSTEM, rumad_start, rumad_update
from debate.state import View

STYLES = ("pear", "rumad")
STYLE_PHASES = {"pear": ("initial", "update", "critique", "revise"), "rumad": ("initial", "update")}
MAX_CRITIQUE_CHARS = 800

PEAR_SYSTEM = (
    "You are a careful reasoner participating in a structured multi-agent debate. Judge every critique by "
    "the logic of the problem, not by social agreement or majority pressure. Return only valid JSON in the "
    "requested schema, with no markdown fences and no extra commentary."
)
CONFIDENCE_RUBRIC = (
    "Confidence rubric (integer 1-5): 1 = no reliable basis; mostly guessing, unable to solve, or the "
    "selected answer is just a placeholder. 2 = low confidence; some clue or partial reasoning, but you "
    "cannot rule out multiple plausible alternatives. 3 = moderate confidence; reasoning supports the "
    "answer, but there is a real unresolved doubt, unchecked step, or possible competing option. 4 = high "
    "confidence; reasoning is complete and checked, and only minor residual uncertainty remains. 5 = fully "
    "verified; every necessary step has been checked and all plausible alternatives or answer choices are "
    "ruled out. Use 1 or 2 whenever you are guessing, relying on incomplete reasoning, or cannot eliminate "
    "serious alternatives. Do not use 5 unless the solution is fully verified; do not default to 4 or 5."
)
_CALIBRATE = (
    "Calibrate the score strictly: use low confidence when your reasoning is incomplete or competing "
    "answers remain plausible."
)
_CONF_INT = "The confidence field must be an integer from 1 to 5."
OWN_HIDDEN = "(not shown this round: solve the problem afresh, using the messages below)"

# What engines with structured output are constrained to. Confidence is an enum, not an integer
# range: llama.cpp's grammar compiler ignores integer minimum/maximum.
REPLY_PROPERTIES: dict[str, Any] = {
    "reasoning": {"type": "string", "maxLength": 1000},
    "answer": {"type": "string", "maxLength": 200},
    "confidence": {"enum": [1, 2, 3, 4, 5]},
}
REPLY_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": REPLY_PROPERTIES,
    "required": list(REPLY_PROPERTIES),
}
REPLY_SHAPE = (
    '{"reasoning": "concise step-by-step justification", "answer": "task-specific answer token only", '
    '"confidence": 3}'
)


def problem_block(sample: Sample) -> str:
    """PEAR's PROBLEM block: the E.7 task line for the sample's kind, then the question and options."""
    text = f"PROBLEM\n{format_block(sample.kind, 'pear')}\nProblem: {sample.question.strip()}"
    return f"{text}\nOptions:\n{options(sample)}" if sample.choices else text


def _then_problem(fixed: str, sample: Sample) -> str:
    """The shared part of a PEAR prompt: fixed text first, then the item."""
    return f"{fixed}\n\n{problem_block(sample)}"


def _check(style: str, phase: str) -> None:
    if phase not in STYLE_PHASES.get(style, ()):
        raise ValueError(f"prompt style '{style}' has no '{phase}' template; styles: {', '.join(STYLES)}")


def initial_messages(sample: Sample, agent: int = 0, style: str = "pear") -> tuple[Message, ...]:
    """Round 0: answer independently (PEAR E.3 / RUMAD "Starting")."""
    _check(style, "initial")
    if style == "rumad":
        return (Message("system", RUMAD_SYSTEM), Message("user", rumad_start(sample)))
    fixed = (
        f"{CONFIDENCE_RUBRIC}\n\nSolve the problem independently. Use the task-specific answer format stated "
        "in the PROBLEM block. You should provide a step-by-step justification for your answer. The "
        "reasoning should be clear, logical, and directly support your final answer. After solving, assign "
        f"a confidence score to your own final answer using the 1-5 rubric above. {_CALIBRATE}\n\nReturn "
        f"valid JSON with exactly these keys:\n{REPLY_SHAPE}\n{_CONF_INT}"
    )
    user = f"{_then_problem(fixed, sample)}\n\nYou are Agent {agent + 1}."
    return (Message("system", PEAR_SYSTEM), Message("user", user))


def update_messages(
    sample: Sample,
    own: View | None,
    peers: Sequence[tuple[int, View]],
    agent: int = 0,
    style: str = "pear",
    weights: Mapping[int, float] | None = None,
    own_text: str | None = None,
    chars: int = MAX_PEER_REASONING_CHARS,
) -> tuple[Message, ...]:
    """The `update` protocol: the agent's own previous answer and its sources' (PEAR E.6 / RUMAD
    "Debate"). `weights` (source -> importance) are shown by the RUMAD template when given;
    `own_text`, the agent's previous reply as generated, is its turn in the RUMAD conversation. `own`
    None: the agent's own previous response is hidden this round (CPP pruned it). `chars`: how much of
    each shown reasoning (0: all of it)."""
    _check(style, "update")
    if style == "rumad":
        return rumad_update(sample, own, peers, weights, own_text, chars)
    names = ", ".join(f"Agent {j + 1}" for j, _ in peers)
    topology = (
        f"This round you see messages from {names}."
        if peers
        else "This round no neighbor messages reach you."
    )
    transcript = "\n\n".join(f"Agent {j + 1}\n{describe(v, chars)}" for j, v in peers) or "(none)"
    fixed = (
        f"{CONFIDENCE_RUBRIC}\n\nUse the task-specific answer format stated in the PROBLEM block. Judge "
        "neighbor messages by logic and evidence, not by majority pressure. Evaluate every distinct neighbor "
        "argument. ACCEPT only claims that fix a real error; REJECT claims with invalid logic, wrong facts, "
        "or irrelevant reasoning. If messages conflict, weigh the strongest argument on each side before "
        f"updating your answer. {_CALIBRATE}\n\nReturn valid JSON with exactly these keys:\n{REPLY_SHAPE}\n"
        f"{_CONF_INT}"
    )
    history = describe(own, chars) if own is not None else OWN_HIDDEN
    user = (
        f"{_then_problem(fixed, sample)}\n\nYou are Agent {agent + 1} in a structured multi-agent debate. "
        f"{topology}\n\nYOUR PRIVATE HISTORY\n{history}\n\nVISIBLE NEIGHBOR MESSAGES\n{transcript}"
    )
    return (Message("system", PEAR_SYSTEM), Message("user", user))


def critique_messages(
    sample: Sample,
    agent: int,
    own: View,
    targets: Sequence[tuple[int, View]],
    style: str = "pear",
    chars: int = MAX_PEER_REASONING_CHARS,
) -> tuple[Message, ...]:
    """PEAR E.5: one call in which `agent` reviews every target it was routed to."""
    _check(style, "critique")
    solutions = "\n\n".join(f"Target Agent {t + 1}\n{describe(v, chars)}" for t, v in targets)
    first = targets[0][0] + 1 if targets else 1
    shape = (
        f'{{"reviews": [{{"target": {first}, "step_loc": "first incorrect step, or No error identified", '
        '"correction": "correction for that step only, or empty string", "assessment": "Strong"}]}'
    )
    fixed = (
        "Review the target solutions below for logical correctness. Do not judge by whether the target "
        "answer matches your own; judge only by the reasoning steps. For each target, identify the first "
        "incorrect step if one exists. If no error is identified, say so. Write one review per target, with "
        '"target" set to its agent number. assessment must be one of Strong, Acceptable, Flawed.'
    )
    user = (
        f"{_then_problem(fixed, sample)}\n\nYou are Agent {agent + 1}.\n\nYOUR CURRENT ANSWER\n"
        f"{describe(own, chars)}\n\nSOLUTIONS TO REVIEW\n{solutions}\n\nReturn valid JSON with exactly this "
        f"shape:\n{shape}"
    )
    return (Message("system", PEAR_SYSTEM), Message("user", user))


def revise_messages(
    sample: Sample,
    agent: int,
    own: View,
    critiques: Sequence[tuple[int, View, str]],
    style: str = "pear",
    chars: int = MAX_PEER_REASONING_CHARS,
) -> tuple[Message, ...]:
    """PEAR E.4: revise with the critiques received, ACCEPTing or REJECTing each. `critiques` holds
    (critic, the critic's own view, the critique text)."""
    _check(style, "revise")
    received = "\n\n".join(
        f"Critique from Agent {s + 1} (its answer: {v.answer if v.answer is not None else '(no answer)'}, "
        f"confidence {v.confidence}):\n{clip(text, MAX_CRITIQUE_CHARS)}"
        for s, v, text in critiques
    )
    verdicts = ", ".join(
        f'"{s + 1}": {{"decision": "ACCEPT", "reason": "one sentence"}}' for s, _, _ in critiques
    )
    shape = REPLY_SHAPE[:-1] + f', "critique_response": {{{verdicts}}}}}'
    ask = (
        "For each critique, explicitly ACCEPT or REJECT it. Accept a critique only when its correction is "
        "logically sound for this problem."
        if critiques
        else "No critiques reached you this round: check your reasoning once more and correct any mistake."
    )
    fixed = (
        f"{CONFIDENCE_RUBRIC}\n\nUpdate your answer using only critiques that identify a real error in your "
        "reasoning. After updating, assign a new confidence score to your own updated answer using the 1-5 "
        "rubric above. Calibrate it strictly: lower the score when accepted critiques leave unresolved "
        f"uncertainty or multiple plausible answers. {ask} Use only ACCEPT or REJECT. {_CONF_INT}"
    )
    user = (
        f"{_then_problem(fixed, sample)}\n\nYou are Agent {agent + 1}.\n\nYOUR PREVIOUS ANSWER\n"
        f"{describe(own, chars)}\n\nCRITIQUES YOU RECEIVED\n{received or '(none)'}\n\nReturn valid "
        f"JSON with exactly these keys:\n{shape}"
    )
    return (Message("system", PEAR_SYSTEM), Message("user", user))
