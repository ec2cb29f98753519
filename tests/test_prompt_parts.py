"""The prefix-reuse reordering moved parts of the prompts, never changed one: every template of both
families gives the same sentences, as many times each, as before it (`tests/golden/prompt_parts.json`,
written from the code before the reordering); and the RUMAD debate turn carries the agent's own reply
as generated, the one its current view came from."""

from __future__ import annotations

import json

import pytest
from golden_prompts import GOLDEN, fingerprint

from data.types import Sample
from debate.decision import Decision
from debate.graph import Graph
from debate.phases import own_reply, update_calls
from debate.state import DebateState, Turn, View

BEFORE = json.loads(GOLDEN.read_text(encoding="utf-8"))
NOW = fingerprint()


@pytest.mark.parametrize("case", sorted(BEFORE))
def test_each_template_keeps_every_sentence(case: str) -> None:
    assert NOW[case]["roles"] == BEFORE[case]["roles"]
    assert NOW[case]["parts"] == BEFORE[case]["parts"]


def turn(agent: int, r: int, text: str, answer: str | None, phase: str = "update") -> Turn:
    return Turn(agent, r, phase, "m", text, answer, 3, "", answer is not None, 10, 5)


def test_the_rumad_turn_goes_on_from_the_reply_the_view_came_from() -> None:
    sample = Sample(id="q", question="What is 6 * 7?", gold="42", kind="numeric")
    r0 = (turn(0, 0, "first: 41", "41", "initial"), turn(1, 0, "first: 42", "42", "initial"))
    r1 = (turn(0, 1, "garbled", None), turn(1, 1, "second: 42", "42"))  # agent 0's reply unreadable
    views0 = (View("41", 3, ""), View("42", 3, ""))
    state = DebateState(2).advance(views0, r0, None).advance(views0, r1, Graph.clique(2))
    assert own_reply(state, 0) == "first: 41" and own_reply(state, 1) == "second: 42"
    calls = update_calls(sample, state, Decision(Graph.clique(2)), [], "rumad")
    assert [c.messages[2].content for c in calls] == ["first: 41", "second: 42"]
    pear = update_calls(sample, state, Decision(Graph.clique(2)), [], "pear")
    assert all(len(c.messages) == 2 for c in pear)  # PEAR's update is one turn, history inside it
