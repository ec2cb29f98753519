"""RUMAD's prompt family (Table 8), chosen by a method's `prompt_style: rumad` (`debate.prompts`): its
system, "Starting" and "Debate" prompts, with Table 7's output format (a free-text explanation ending
in `\\boxed{answer}`) and one more sentence asking for a "Confidence: N" last line; the debate prompt
is a second user turn after the agent's own previous reply, as in Du et al."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from actors.base import Message
from data.benchmarks.formats import format_block
from data.types import Sample
from debate.prompt_views import describe, question_block
from debate.state import View

RUMAD_SYSTEM = (
    "Welcome to the debate! You are a seasoned debater with expertise in succinctly and persuasively "
    "expressing your viewpoints. You will be assigned to debate groups, where you will engage in "
    "discussions with fellow participants. The outcomes of each group's deliberations will be shared "
    "among all members. It is crucial for you to leverage this information effectively in order to "
    "critically analyze the question at hand and ultimately arrive at the correct answer. Best of luck!"
)
RUMAD_CONFIDENCE = (
    "On the last line write your confidence as 'Confidence: N', N from 1 (guess) to 5 (certain)."
)


def _rumad_format(sample: Sample) -> str:
    return f"{format_block(sample.kind, 'rumad')} {RUMAD_CONFIDENCE}"


def rumad_reply(view: View) -> str:
    """An agent's previous view as the free-text reply the RUMAD prompts ask for."""
    answer = view.answer if view.answer is not None else "(no answer)"
    return f"{view.reasoning.strip()}\nThe answer is \\boxed{{{answer}}}.\nConfidence: {view.confidence}"


def rumad_start(sample: Sample) -> str:
    return (
        "Can you answer the following question as accurately as possible?\n"
        f"{question_block(sample)}\nExplain your answer. {_rumad_format(sample)}"
    )


def rumad_update(
    sample: Sample,
    own: View | None,
    peers: Sequence[tuple[int, View]],
    weights: Mapping[int, float] | None,
    own_text: str | None,
    chars: int,
) -> tuple[Message, ...]:
    weights = weights or {}
    shown = "\n\n".join(
        f"Agent {j + 1}{f' (importance {weights[j]:.2f})' if j in weights else ''}: {describe(v, chars)}"
        for j, v in peers
    )
    basis = " with their indicated importance" if weights else ""
    ask = (
        f"These are the solutions from other agents:\n\n{shown}\n\nBased on the above responses{basis}, "
        "can you provide an updated answer? Examine all solutions step by step."
        if peers
        else "No solutions from other agents reach you this round. Can you examine your solution step by "
        "step and provide an updated answer?"
    )
    if own is None:  # its own previous reply hidden: the question, then the others' solutions if any
        user = f"{rumad_start(sample)}\n\n{ask}" if peers else rumad_start(sample)
        return (Message("system", RUMAD_SYSTEM), Message("user", user))
    return (
        Message("system", RUMAD_SYSTEM),
        Message("user", rumad_start(sample)),
        Message("assistant", own_text if own_text is not None else rumad_reply(own)),
        Message("user", f"{ask} {_rumad_format(sample)}"),
    )
