"""The one episode loop every method runs, top to bottom:

round 0 (independent answers) -> for each debate round: the router picks the graph, agents respond
concurrently, the state advances -> majority vote after every round -> graded final answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from actors.base import Backend, ChatRequest, Completion, Message
from data.types import Grader, Sample
from debate import prompts
from debate.graph import Graph
from debate.methods import Method
from debate.parsing import parse_reply
from debate.spec import derive_seed
from debate.state import DebateState, Turn, View, next_view
from debate.vote import majority_vote


@dataclass(frozen=True)
class Agent:
    """One seat at the table: the model it runs on and how it samples."""

    model: str
    backend: Backend
    max_tokens: int = 512
    temperature: float = 0.7
    top_p: float = 1.0
    json_schema: dict[str, Any] | None = None
    price_in: float = 0.0  # per million prompt tokens
    price_out: float = 0.0  # per million completion tokens


@dataclass
class EpisodeResult:
    """Everything an episode produced; `turns` holds every call in order."""

    turns: list[Turn]
    round_answers: list[str | None]  # the vote after each round (round 0 included)
    round_correct: list[bool]
    final_answer: str | None
    correct: bool
    cost: float
    state: DebateState = field(repr=False)

    @property
    def calls(self) -> int:
        return len(self.turns)

    @property
    def prompt_tokens(self) -> int:
        return sum(t.prompt_tokens for t in self.turns)

    @property
    def completion_tokens(self) -> int:
        return sum(t.completion_tokens for t in self.turns)

    @property
    def cached_tokens(self) -> int:
        return sum(t.cached_tokens for t in self.turns)

    @property
    def parse_failures(self) -> int:
        return sum(not t.parsed for t in self.turns)

    @property
    def latency_s(self) -> float:
        return sum(t.latency_s for t in self.turns)


@dataclass(frozen=True)
class _Call:
    """One pending agent call of a round."""

    agent: int
    phase: str
    messages: tuple[Message, ...]
    sources: tuple[int, ...]
    own: View | None
    peers: tuple[View, ...]


async def run_episode(
    method: Method,
    team: Sequence[Agent],
    sample: Sample,
    grader: Grader,
    seed: int,
    rounds: int,
    dataset: str = "",
) -> EpisodeResult:
    """Run one debate episode. Seat i runs on `team[i % len(team)]`.

    Call seeds derive from (seed, dataset, item, round, agent, phase) — not from the method — so every
    method shares round 0 under the same seed: comparisons are paired, and a call cache pays once."""
    n = method.team_size(len(team))
    seats = [team[i % len(team)] for i in range(n)]
    rng = np.random.default_rng(derive_seed(seed, dataset, sample.id, "router", method.spec.to_dict()))
    state = DebateState(n=n)
    call_seed = lambda r, i, phase: derive_seed(seed, dataset, sample.id, r, i, phase)  # noqa: E731

    calls = [_Call(i, "initial", prompts.initial_messages(sample), (), None, ()) for i in range(n)]
    turns = await _respond(calls, seats, sample, grader, 0, call_seed)
    state = state.advance(tuple(next_view(None, t) for t in turns), tuple(turns), None)

    for r in range(1, method.num_rounds(rounds) + 1):
        if method.router is None:
            break
        graph = method.router.route(state, rng)
        turns = await _respond(_update_calls(sample, state, graph), seats, sample, grader, r, call_seed)
        views = tuple(next_view(state.latest[t.agent], t) for t in turns)
        state = state.advance(views, tuple(turns), graph)

    all_turns = [t for rnd in state.turns for t in rnd]
    round_answers = [majority_vote(state.answers(r), state.confidences(r)) for r in range(state.round)]
    round_correct = [a is not None and grader.grade(a, sample.gold) == "correct" for a in round_answers]
    cost = sum(
        (seats[t.agent].price_in * t.prompt_tokens + seats[t.agent].price_out * t.completion_tokens) / 1e6
        for t in all_turns
    )
    return EpisodeResult(
        turns=all_turns,
        round_answers=round_answers,
        round_correct=round_correct,
        final_answer=round_answers[-1],
        correct=round_correct[-1],
        cost=cost,
        state=state,
    )


def _update_calls(sample: Sample, state: DebateState, graph: Graph) -> list[_Call]:
    """The `update` protocol: each agent sees its own previous view and its sources' views."""
    latest = state.latest
    calls = []
    for t in range(state.n):
        sources = graph.sources(t)
        peers = [(s, latest[s]) for s in sources]
        messages = prompts.update_messages(sample, latest[t], peers)
        calls.append(_Call(t, "update", messages, sources, latest[t], tuple(v for _, v in peers)))
    return calls


async def _respond(
    calls: Sequence[_Call], seats: Sequence[Agent], sample: Sample, grader: Grader, r: int, call_seed: Any
) -> list[Turn]:
    """Send a round's calls concurrently, one batch per distinct backend, and parse the replies."""
    requests = [_request(c, seats[c.agent], sample, r, call_seed(r, c.agent, c.phase)) for c in calls]
    groups: dict[int, list[int]] = {}
    for idx, c in enumerate(calls):
        groups.setdefault(id(seats[c.agent].backend), []).append(idx)
    outputs: list[Completion | None] = [None] * len(calls)

    async def run_group(idxs: list[int]) -> None:
        backend = seats[calls[idxs[0]].agent].backend
        done = await backend.generate([requests[i] for i in idxs])
        if len(done) != len(idxs):
            raise RuntimeError(f"backend returned {len(done)} completions for {len(idxs)} requests")
        for i, completion in zip(idxs, done, strict=True):
            outputs[i] = completion

    await asyncio.gather(*(run_group(idxs) for idxs in groups.values()))
    return [
        _turn(c, seats[c.agent], out, grader, r, req.seed)
        for c, out, req in zip(calls, outputs, requests, strict=True)
    ]


def _request(call: _Call, seat: Agent, sample: Sample, r: int, seed: int) -> ChatRequest:
    hints = {
        "agent": call.agent,
        "round": r,
        "phase": call.phase,
        "kind": sample.kind,
        "gold": sample.gold,
        "n_choices": len(sample.choices),
        "item": sample.id,
        "own": None if call.own is None else [call.own.answer, call.own.confidence],
        "peers": [[v.answer, v.confidence] for v in call.peers],
    }
    return ChatRequest(
        messages=call.messages,
        max_tokens=seat.max_tokens,
        temperature=seat.temperature,
        top_p=seat.top_p,
        seed=seed,
        json_schema=seat.json_schema,
        hints=hints,
    )


def _turn(call: _Call, seat: Agent, out: Completion | None, grader: Grader, r: int, seed: int | None) -> Turn:
    assert out is not None
    reply = parse_reply(out.text)
    answer = grader.canonical(reply.answer) if reply.answer is not None else None
    return Turn(
        agent=call.agent,
        round=r,
        phase=call.phase,
        model=out.model or seat.model,
        text=out.text,
        answer=answer,
        confidence=reply.confidence,
        reasoning=reply.reasoning,
        parsed=answer is not None,
        prompt_tokens=out.prompt_tokens,
        completion_tokens=out.completion_tokens,
        cached_tokens=out.cached_tokens,
        latency_s=out.latency_s,
        seed=seed,
        sources=call.sources,
        extra=dict(reply.extra),
    )
