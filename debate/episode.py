"""The one episode loop every method runs, top to bottom:

round 0 (independent answers; a router with an `opening(state)` may cap their length) -> for each
debate round: the router decides (`route` may be a coroutine: a router that embeds text awaits its
encoder) (who speaks, who sees whom,
with what weight, how long each may write), then each phase of the method's protocol runs (its calls
concurrently, `debate.phases`), the last phase's replies become the speakers' new answers (the others
keep theirs), the state advances -> majority vote after every round -> graded final answer and the
per-round trajectory (`debate.trajectory`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from actors.base import Backend, ChatRequest, Completion
from actors.pop_text import complete_argument
from data.grading.outcome import AMBIGUOUS
from data.types import Grader, Sample
from debate.adversary import adversarial_messages
from debate.critique import answer_property, read_reviews, read_verdicts, structured_schema
from debate.decision import Decision
from debate.hooks import hook
from debate.methods import Method
from debate.parsing import parse_reply
from debate.phases import PHASE_CALLS, Call, initial_calls
from debate.prompt_views import question_block
from debate.spec import SeedStream
from debate.state import DebateState, Turn, next_view
from debate.trajectory import EpisodeResult, build_trajectory
from debate.vote import majority_vote

__all__ = ["Agent", "EpisodeResult", "correctness", "respond", "run_episode"]


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
    adversarial: bool = False  # shown the gold answer and told to argue for a wrong one

    @property
    def key(self) -> tuple[str, bool]:
        """What tells seats apart for methods that pick seats (`Method.seat_indices`)."""
        return (self.model, self.adversarial)


async def run_episode(
    method: Method,
    team: Sequence[Agent],
    sample: Sample,
    grader: Grader,
    seed: int,
    rounds: int,
    dataset: str = "",
) -> EpisodeResult:
    """Run one debate episode. Seat i runs on `team[i % len(team)]`, or on the team member the
    method picks for it (`Method.seat_indices`: consistency and vote pick by model).

    Call seeds derive from (seed, dataset, item, round, agent, phase) — not from the method — so every
    method shares round 0 under the same seed: comparisons are paired, and a call cache pays once."""
    seats = [team[j] for j in method.seat_indices([a.key for a in team])]
    n = len(seats)
    seeds = SeedStream(seed, dataset, sample.id)  # the episode's part of every seed, canonicalised once
    rng = np.random.default_rng(seeds("router", method.spec.identity()))
    total = method.num_rounds(rounds) if method.router is not None else 0
    # Per-episode draws (PEAR's base graph) do not depend on the method: paired across methods.
    state = DebateState(n=n, routing_seed=seeds("routing"), rounds=total, question=question_block(sample))
    style = method.prompt_style

    router = method.router
    bind = hook(router, "for_item")
    if bind is not None:  # a router that reads its item in the driver (the oracle: the gold, never shown)
        router = bind(sample, grader)
    opening = hook(router, "opening")
    first: Decision | None = opening(state) if opening is not None else None
    turns = await respond(
        initial_calls(sample, n, style), seats, first, sample, grader, 0, seeds, style, dataset
    )
    state = state.advance(tuple(next_view(None, t) for t in turns), tuple(turns), first)

    for r in range(1, total + 1):
        assert router is not None
        decision = await router.route(state, rng)
        done: list[Turn] = []
        for phase in method.phases:
            calls = PHASE_CALLS[phase](sample, state, decision, done, style, method.reasoning_chars)
            done += await respond(calls, seats, decision, sample, grader, r, seeds, style, dataset)
        answered = {t.agent: t for t in done if t.phase == method.phases[-1]}
        views = tuple(next_view(v, answered[i]) if i in answered else v for i, v in enumerate(state.latest))
        state = state.advance(views, tuple(done), decision)

    is_correct = correctness(grader, sample.gold)
    all_turns = [t for rnd in state.turns for t in rnd]
    votes = [majority_vote(state.answers(r), state.confidences(r)) for r in range(state.round)]
    round_correct = [is_correct(a) for a in votes]
    return EpisodeResult(
        turns=all_turns,
        round_answers=votes,
        round_correct=round_correct,
        final_answer=votes[-1],
        correct=round_correct[-1],
        cost=sum(t.cost for t in all_turns),
        state=state,
        trajectory=build_trajectory(state, votes, is_correct),
    )


def correctness(grader: Grader, gold: str) -> Callable[[str | None], bool]:
    """answer -> whether `grader` finds it correct against `gold` (no answer: wrong), each distinct
    answer graded once."""
    graded: dict[str, bool] = {}

    def is_correct(answer: str | None) -> bool:
        if answer is None:
            return False
        if answer not in graded:
            graded[answer] = grader.grade(answer, gold) == "correct"
        return graded[answer]

    return is_correct


async def respond(
    calls: Sequence[Call],
    seats: Sequence[Agent],
    decision: Decision | None,
    sample: Sample,
    grader: Grader,
    r: int,
    call_seed: SeedStream,  # (round, agent, phase) -> the call's seed
    style: str,
    dataset: str = "",
) -> list[Turn]:
    """Send a round's calls concurrently, one batch per distinct backend, and parse the replies."""
    requests = [
        _request(c, seats[c.agent], decision, sample, r, call_seed(r, c.agent, c.phase), style, dataset)
        for c in calls
    ]
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

    if len(groups) == 1:  # one engine (the usual team): no task to make, no gather to wait on
        await run_group(next(iter(groups.values())))
    else:
        await asyncio.gather(*(run_group(idxs) for idxs in groups.values()))
    return [
        _turn(c, seats[c.agent], out, grader, r, req.seed)
        for c, out, req in zip(calls, outputs, requests, strict=True)
    ]


def _request(
    call: Call,
    seat: Agent,
    decision: Decision | None,
    sample: Sample,
    r: int,
    seed: int,
    style: str,
    dataset: str = "",
) -> ChatRequest:
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
        # What population models past v1 read (v1 ignores them): the benchmark, how each argument
        # reads (its length, whether a cap cut it off) and the importance the prompt shows beside it.
        "dataset": dataset,
        "peer_chars": [len(v.reasoning) for v in call.peers],
        "peer_complete": [complete_argument(v.reasoning) for v in call.peers],
    }
    shown = decision.weights_for(call.agent) if decision is not None and style == "rumad" else None
    if shown:  # the rumad prompts print a source's importance beside its response
        hints["weights"] = [shown.get(j) for j in call.sources]
    messages = call.messages
    if seat.adversarial:
        messages = adversarial_messages(messages, sample)
        hints["adversary"] = True
    return ChatRequest(
        messages=messages,
        max_tokens=seat.max_tokens if decision is None else decision.cap(call.agent, seat.max_tokens),
        temperature=seat.temperature,
        top_p=seat.top_p,
        seed=seed,
        json_schema=structured_schema(
            call.phase,
            call.sources,
            seat.json_schema,
            style,
            answer_property(sample.kind, len(sample.choices)),
        ),
        hints=hints,
    )


def _hedges(grader: Grader, text: str) -> bool:
    """Whether the item's grader reads the whole reply as a hedge between answers ('B or C', two
    `Answer:` lines or boxes that disagree): such a reply is credited with neither."""
    read = getattr(grader, "read", None)  # every packaged grader has it; a user's may not
    return read is not None and read(text)[1] == AMBIGUOUS


def _turn(call: Call, seat: Agent, out: Completion | None, grader: Grader, r: int, seed: int | None) -> Turn:
    assert out is not None
    extra: dict[str, Any]
    if call.phase == "critique":  # reviews, not an answer: `parsed` says whether they were structured
        reviews, parsed = read_reviews(out.text, call.sources)
        answer, confidence, extra = None, None, {"reviews": reviews}
        reasoning = "\n".join(f"Agent {t + 1}: {text}" for t, text in reviews.items())
    else:
        reply = parse_reply(out.text)
        answer = grader.canonical(reply.answer) if reply.answer is not None else None
        if answer is not None and reply.source != "json" and _hedges(grader, out.text):
            answer = None  # the parser picked one box or `Answer:` line of a reply that gives two
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
        cost=(seat.price_in * out.prompt_tokens + seat.price_out * out.completion_tokens) / 1e6,
        extra=extra,
    )
