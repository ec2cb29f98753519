"""Prompt templates. Rendering is byte-stable and puts the shared question prefix first, so an
engine's prefix cache reuses it across agents, rounds and methods."""

from __future__ import annotations

from collections.abc import Sequence

from actors.base import Message
from data.types import Sample
from debate.state import View

MAX_PEER_REASONING_CHARS = 600  # keeps prompts bounded however verbose the peers were

SYSTEM = (
    "You are a careful problem solver taking part in a debate with other agents. "
    "Think step by step, then reply with a single JSON object and nothing else."
)

JSON_SHAPE = '{"reasoning": "<your step-by-step reasoning>", "answer": "<final answer>", "confidence": <1-5>}'

FORMAT_BLOCKS = {
    "numeric": 'Put only the final number in "answer" (no units, no commas).',
    "choice": 'Put only the letter of the correct option in "answer".',
    "math": 'Put only the final answer in "answer", as a LaTeX expression without $ signs.',
}


def question_block(sample: Sample) -> str:
    """The question (with lettered options for multiple choice): the prefix every prompt shares."""
    text = f"Question:\n{sample.question.strip()}"
    if sample.choices:
        letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        text += "\n" + "\n".join(f"{letters[i]}. {c}" for i, c in enumerate(sample.choices))
    return text


def _instructions(sample: Sample) -> str:
    return (
        f"{FORMAT_BLOCKS[sample.kind]} Confidence is an integer from 1 (guess) to 5 (certain).\n"
        f"Reply with JSON: {JSON_SHAPE}"
    )


def _describe(view: View) -> str:
    reasoning = view.reasoning.strip().replace("\n", " ")[:MAX_PEER_REASONING_CHARS]
    answer = view.answer if view.answer is not None else "(no answer)"
    return f"answer {answer} (confidence {view.confidence}). Reasoning: {reasoning}"


def initial_messages(sample: Sample) -> tuple[Message, ...]:
    """Round 0: answer independently."""
    user = f"{question_block(sample)}\n\n{_instructions(sample)}"
    return (Message("system", SYSTEM), Message("user", user))


def update_messages(sample: Sample, own: View, peers: Sequence[tuple[int, View]]) -> tuple[Message, ...]:
    """A debate round: the agent sees its own previous answer and its sources' answers."""
    lines = [question_block(sample), "", f"Your previous answer: {_describe(own)}"]
    if peers:
        lines += ["", "Answers from other agents:"]
        lines += [f"Agent {j + 1}: {_describe(v)}" for j, v in peers]
        lines += ["", "Weigh their arguments against yours; change your answer only if they convince you."]
    else:
        lines += ["", "Check your reasoning once more and correct any mistake."]
    lines += ["", _instructions(sample)]
    return (Message("system", SYSTEM), Message("user", "\n".join(lines)))
