"""How an item and an earlier reply read inside a prompt, shared by both prompt families
(`debate.prompts`, `debate.prompts_rumad`)."""

from __future__ import annotations

from data.types import Sample
from debate.state import View

# How much of an earlier reply's reasoning a prompt shows by default (a method's `reasoning_chars`; 0:
# all of it). The cap keeps prompts bounded however verbose the agents were; the papers show replies
# in full, which a method asks for with reasoning_chars 0.
MAX_PEER_REASONING_CHARS = 600

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def options(sample: Sample) -> str:
    return "\n".join(f"{_LETTERS[i]}. {c}" for i, c in enumerate(sample.choices))


def question_block(sample: Sample) -> str:
    """The question (with lettered options for multiple choice), RUMAD's `<Question>`."""
    text = f"Question:\n{sample.question.strip()}"
    return f"{text}\n{options(sample)}" if sample.choices else text


def clip(text: str, limit: int) -> str:
    """One line of at most `limit` characters (0: no limit)."""
    line = text.strip().replace("\n", " ")
    return line[:limit] if limit > 0 else line


def describe(view: View, chars: int = MAX_PEER_REASONING_CHARS) -> str:
    answer = view.answer if view.answer is not None else "(no answer)"
    reasoning = clip(view.reasoning, chars)
    return f"Answer: {answer}\nConfidence: {view.confidence}\nReasoning: {reasoning}"
