"""The one episode loop every method runs, top to bottom:

round 0 (independent answers) -> for each debate round: the router picks the graph, then each phase of
the method's protocol runs (its calls concurrently), the last phase's replies become the agents' new
answers, the state advances -> majority vote after every round -> graded final answer.

Phases (`debate.methods.PROTOCOLS` says which a round has, in order):
- `update`: every agent sees its own previous view and its sources' views, and answers again.
- `critique`: every agent with targets writes ONE call reviewing all of them (its `sources` field
  records the targets it saw); an agent with no targets makes no call. Its reply changes no answer.
- `revise`: every agent sees the critiques it received (none: it re-checks its own answer) and answers
  again, ACCEPTing or REJECTing each critique; the verdicts are read into `Turn.extra["verdicts"]`.
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
from debate.critique import read_reviews, read_verdicts, structured_schema
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
    def cache_hits(self) -> int:
        return sum(t.cache_hit for t in self.turns)

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
    sources: tuple[int, ...]  # whom the agent sees: its sources (a critique call: its targets)
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
    # Per-episode draws (PEAR's base graph) do not depend on the method: paired across methods.
    state = DebateState(n=n, routing_seed=derive_seed(seed, dataset, sample.id, "routing"))
    call_seed = lambda r, i, phase: derive_seed(seed, dataset, sample.id, r, i, phase)  # noqa: E731
    style = method.prompt_style

    initial = [prompts.initial_messages(sample, i, style) for i in range(n)]
    calls = [_Call(i, "initial", initial[i], (), None, ()) for i in range(n)]
    turns = await _respond(calls, seats, sample, grader, 0, call_seed, style)
    state = state.advance(tuple(next_view(None, t) for t in turns), tuple(turns), None)

    for r in range(1, method.num_rounds(rounds) + 1):
        if method.router is None:
            break
        graph = method.router.route(state, rng)
        done: list[Turn] = []
        for phase in method.phases:
            calls = PHASE_CALLS[phase](sample, state, graph, done, style)
            done += await _respond(calls, seats, sample, grader, r, call_seed, style)
        answered = {t.agent: t for t in done if t.phase == method.phases[-1]}
        views = tuple(next_view(v, answered[i]) if i in answered else v for i, v in enumerate(state.latest))
        state = state.advance(views, tuple(done), graph)

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


def _update_calls(
    sample: Sample, state: DebateState, graph: Graph, done: Sequence[Turn], style: str
) -> list[_Call]:
    """`update`: each agent sees its own previous view and its sources' views."""
    latest = state.latest
    calls = []
    for t in range(state.n):
        peers = [(s, latest[s]) for s in graph.sources(t)]
        messages = prompts.update_messages(sample, latest[t], peers, t, style)
        calls.append(_Call(t, "update", messages, graph.sources(t), latest[t], tuple(v for _, v in peers)))
    return calls


def _critique_calls(
    sample: Sample, state: DebateState, graph: Graph, done: Sequence[Turn], style: str
) -> list[_Call]:
    """`critique`: one call per agent with targets, reviewing all of them (PEAR E.5)."""
    latest = state.latest
    calls = []
    for s in range(state.n):
        targets = graph.targets(s)
        if targets:
            shown = [(t, latest[t]) for t in targets]
            messages = prompts.critique_messages(sample, s, latest[s], shown, style)
            calls.append(_Call(s, "critique", messages, targets, latest[s], tuple(v for _, v in shown)))
    return calls


def _revise_calls(
    sample: Sample, state: DebateState, graph: Graph, done: Sequence[Turn], style: str
) -> list[_Call]:
    """`revise`: each agent revises with the critiques its sources wrote about it (PEAR E.4)."""
    latest = state.latest
    reviews = {c.agent: c.extra.get("reviews", {}) for c in done if c.phase == "critique"}
    calls = []
    for t in range(state.n):
        sources = graph.sources(t)
        received = [(s, latest[s], reviews.get(s, {}).get(t, "")) for s in sources]
        messages = prompts.revise_messages(sample, t, latest[t], received, style)
        calls.append(_Call(t, "revise", messages, sources, latest[t], tuple(latest[s] for s in sources)))
    return calls


PHASE_CALLS = {"update": _update_calls, "critique": _critique_calls, "revise": _revise_calls}


async def _respond(
    calls: Sequence[_Call],
    seats: Sequence[Agent],
    sample: Sample,
    grader: Grader,
    r: int,
    call_seed: Any,
    style: str,
) -> list[Turn]:
    """Send a round's calls concurrently, one batch per distinct backend, and parse the replies."""
    requests = [_request(c, seats[c.agent], sample, r, call_seed(r, c.agent, c.phase), style) for c in calls]
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


def _request(call: _Call, seat: Agent, sample: Sample, r: int, seed: int, style: str) -> ChatRequest:
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
        "sources": list(call.sources),  # whose views `peers` are (a critique call: its targets)
    }
    return ChatRequest(
        messages=call.messages,
        max_tokens=seat.max_tokens,
        temperature=seat.temperature,
        top_p=seat.top_p,
        seed=seed,
        json_schema=structured_schema(call.phase, call.sources, seat.json_schema, style),
        hints=hints,
    )


def _turn(call: _Call, seat: Agent, out: Completion | None, grader: Grader, r: int, seed: int | None) -> Turn:
    assert out is not None
    extra: dict[str, Any]
    if call.phase == "critique":  # reviews, not an answer: `parsed` says whether they were structured
        reviews, parsed = read_reviews(out.text, call.sources)
        answer, confidence, extra = None, None, {"reviews": reviews}
        reasoning = "\n".join(f"Agent {t + 1}: {text}" for t, text in reviews.items())
    else:
        reply = parse_reply(out.text)
        answer = grader.canonical(reply.answer) if reply.answer is not None else None
        confidence, reasoning, extra = reply.confidence, reply.reasoning, dict(reply.extra)
        parsed = answer is not None
        if call.phase == "revise":
            extra["verdicts"] = read_verdicts(out.text, call.sources)
    return Turn(
        agent=call.agent,
        round=r,
        phase=call.phase,
        model=out.model or seat.model,
        text=out.text,
        answer=answer,
        confidence=confidence,
        reasoning=reasoning,
        parsed=parsed,
        prompt_tokens=out.prompt_tokens,
        completion_tokens=out.completion_tokens,
        cached_tokens=out.cached_tokens,
        latency_s=out.latency_s,
        seed=seed,
        cache_hit=out.cache_hit,
        sources=call.sources,
        extra=extra,
    )
