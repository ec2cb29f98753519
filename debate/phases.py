"""The calls of each protocol phase, built from the state and the round's decision. Only agents in the
decision's active set make calls; an edge into an inactive agent delivers nothing.

- `update`: every active agent sees its own previous view (unless the decision hides it: CPP can
  prune an agent's own response) and its sources' views (with the edges' weights, which the `rumad`
  prompt family shows as importance), and answers again.
- `critique`: every active agent with active targets writes ONE call reviewing all of them (its
  `sources` field records the targets it saw). Its reply changes no answer.
- `revise`: every active agent sees the critiques it received (none: it re-checks its own answer) and
  answers again, ACCEPTing or REJECTing each critique.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from actors.base import Message
from actors.frozen import quick_init
from data.types import Sample
from debate import prompts
from debate.decision import Decision
from debate.prompt_views import MAX_PEER_REASONING_CHARS
from debate.state import DebateState, Turn, View


@quick_init
@dataclass(frozen=True)
class Call:
    """One pending agent call of a round."""

    agent: int
    phase: str
    messages: tuple[Message, ...]
    sources: tuple[int, ...]  # whom the agent sees: its sources (a critique call: its targets)
    own: View | None
    peers: tuple[View, ...]


def initial_calls(sample: Sample, n: int, style: str) -> list[Call]:
    """Round 0: every agent answers on its own."""
    return [Call(i, "initial", prompts.initial_messages(sample, i, style), (), None, ()) for i in range(n)]


def update_calls(
    sample: Sample,
    state: DebateState,
    decision: Decision,
    done: Sequence[Turn],
    style: str,
    chars: int = MAX_PEER_REASONING_CHARS,
) -> list[Call]:
    latest, graph = state.latest, decision.graph
    calls = []
    for t in decision.active_agents():
        peers = [(s, latest[s]) for s in graph.sources(t)]
        own = None if t in decision.hidden_own else latest[t]
        own_text = (
            own_reply(state, t) if style == "rumad" and own is not None else None
        )  # the conversation goes on
        weights = decision.weights_for(t)
        messages = prompts.update_messages(sample, own, peers, t, style, weights, own_text, chars)
        calls.append(Call(t, "update", messages, graph.sources(t), own, tuple(v for _, v in peers)))
    return calls


def own_reply(state: DebateState, agent: int) -> str | None:
    """The reply, as generated, that `agent`'s current view comes from: its latest readable answer
    (an unreadable reply leaves the view as it was). None when it never gave one."""
    for turns in reversed(state.turns):
        for turn in reversed(turns):
            if turn.agent == agent and turn.phase != "critique" and turn.parsed and turn.answer is not None:
                return turn.text
    return None


def critique_calls(
    sample: Sample,
    state: DebateState,
    decision: Decision,
    done: Sequence[Turn],
    style: str,
    chars: int = MAX_PEER_REASONING_CHARS,
) -> list[Call]:
    latest = state.latest
    calls = []
    for s in decision.active_agents():
        targets = tuple(t for t in decision.graph.targets(s) if decision.speaks(t))
        if targets:
            shown = [(t, latest[t]) for t in targets]
            messages = prompts.critique_messages(sample, s, latest[s], shown, style, chars)
            calls.append(Call(s, "critique", messages, targets, latest[s], tuple(v for _, v in shown)))
    return calls


def revise_calls(
    sample: Sample,
    state: DebateState,
    decision: Decision,
    done: Sequence[Turn],
    style: str,
    chars: int = MAX_PEER_REASONING_CHARS,
) -> list[Call]:
    latest = state.latest
    reviews = {c.agent: c.extra.get("reviews", {}) for c in done if c.phase == "critique"}
    calls = []
    for t in decision.active_agents():
        sources = tuple(s for s in decision.graph.sources(t) if decision.speaks(s))
        received = [(s, latest[s], reviews.get(s, {}).get(t, "")) for s in sources]
        messages = prompts.revise_messages(sample, t, latest[t], received, style, chars)
        calls.append(Call(t, "revise", messages, sources, latest[t], tuple(latest[s] for s in sources)))
    return calls


# (sample, state, decision, the round's turns so far, prompt style, reasoning characters shown)
PhaseCalls = Callable[[Sample, DebateState, Decision, Sequence[Turn], str, int], list[Call]]
PHASE_CALLS: dict[str, PhaseCalls] = {
    "update": update_calls,
    "critique": critique_calls,
    "revise": revise_calls,
}
