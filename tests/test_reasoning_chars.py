"""`reasoning_chars`, an argument of every method: how much of each earlier reply's reasoning a
prompt shows (default 600 characters; 0: all of it). At its default it stays out of the method's id,
so every earlier episode keeps its id; any other value is a different method everywhere. The
simulated engine counts prompt tokens on what the prompt shows, so showing replies in full costs
their whole length."""

from __future__ import annotations

import asyncio

import pytest

from actors.simulated import SimulatedBackend
from data.benchmarks.registry import load_benchmark
from data.grading.graders import grader_for
from data.types import Sample
from debate.decision import Decision
from debate.episode import Agent, run_episode
from debate.graph import Graph
from debate.methods import build_method
from debate.phases import critique_calls, revise_calls, update_calls
from debate.state import DebateState, Turn, View

LONG = "step " * 400  # 2,000 characters
SAMPLE = Sample(id="q", question="What is 6 * 7?", gold="42", kind="numeric")


def _state() -> DebateState:
    views = (View("41", 3, LONG), View("42", 4, LONG))
    turns = tuple(Turn(i, 0, "initial", "m", "t", v.answer, 3, "", True, 10, 5) for i, v in enumerate(views))
    return DebateState(2).advance(views, turns, None)


@pytest.mark.parametrize("style", ["pear", "rumad"])
def test_a_prompt_shows_600_characters_by_default_and_all_with_0(style: str) -> None:
    state, decision = _state(), Decision(Graph.clique(2))
    clipped = update_calls(SAMPLE, state, decision, [], style)[0].messages
    full = update_calls(SAMPLE, state, decision, [], style, 0)[0].messages
    text = lambda ms: "\n".join(m.content for m in ms)  # noqa: E731
    assert LONG.strip() not in text(clipped) and LONG.strip()[:600] in text(clipped)
    assert LONG.strip() in text(full)


def test_critique_and_revise_prompts_take_it_too() -> None:
    state, decision = _state(), Decision(Graph.clique(2))
    critiques = critique_calls(SAMPLE, state, decision, [], "pear", 0)
    assert all(LONG.strip() in c.messages[1].content for c in critiques)
    revised = revise_calls(SAMPLE, state, decision, critiques and [], "pear", 0)
    assert all(LONG.strip() in c.messages[1].content for c in revised)
    short = revise_calls(SAMPLE, state, decision, [], "pear", 50)
    assert all(LONG.strip()[:50] in c.messages[1].content and LONG.strip()[:51] not in c.messages[1].content
               for c in short)  # fmt: skip


def test_its_default_stays_out_of_the_id_and_any_other_value_is_another_method() -> None:
    plain = build_method("fixed", {"topology": "clique"})
    same = build_method("fixed", {"topology": "clique", "reasoning_chars": 600})
    full = build_method("fixed", {"topology": "clique", "reasoning_chars": 0})
    assert plain.spec.identity() == same.spec.identity() != full.spec.identity()
    assert "reasoning_chars" not in plain.spec.identity()["args"] and plain.reasoning_chars == 600
    assert full.spec.identity()["args"]["reasoning_chars"] == 0 and full.reasoning_chars == 0


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "reasoning_chars must be >= 0"),
        ("all", "argument 'reasoning_chars' must be int"),
        (True, "must be int"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_argument(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_method("fixed", {"reasoning_chars": value})


def test_whole_replies_cost_their_length_in_prompt_tokens() -> None:
    """On verbose simulated agents a clique that shows replies in full reads more prompt tokens than
    one that shows 600 characters; the answers' first round is the same (paired seeds)."""
    items = load_benchmark("arith", "test", limit=4, seed=0)
    backend = SimulatedBackend("sim", skill=0.6, verbosity=12.0)
    team = [Agent("sim", backend), Agent("sim", backend), Agent("sim", backend)]

    async def prompt_tokens(chars: int) -> tuple[int, list[str | None]]:
        method = build_method("fixed", {"topology": "clique", "reasoning_chars": chars})
        results = [await run_episode(method, team, s, grader_for(s), seed=0, rounds=2) for s in items]
        turns = [t for r in results for t in r.turns]
        return sum(t.prompt_tokens for t in turns), [r.round_answers[0] for r in results]

    clipped, first = asyncio.run(prompt_tokens(600))
    full, first_full = asyncio.run(prompt_tokens(0))
    assert first == first_full
    assert full > clipped * 1.2
