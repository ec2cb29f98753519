"""CPP's states before and after each action (the paper's §3.2.1, read literally): "the sign pair
indicates whether the answer of the current agent is correct before and after an action", and "even
if the answer stays wrong in all earlier actions of a round and only becomes correct at the last
action, the accumulated reward of these actions is still positive" — so an agent has an answer after
each of its decisions, not only after its round.

An episode's agents write one reply per round, after all their decisions. The answer after agent i's
k-th decision of round t is measured by asking i again, with the round's own call seed, to update on
what it had kept by then: its decisions 0..k as made, every later candidate pruned (its own response
hidden unless its first decision kept it). The answer after its last decision is the episode's own.
Under a seeded engine (the simulated population draws from the call seed and what the prompt shows) a
prune then leaves the answer where it was and a keep moves it only by what the kept response says:
each flip is charged to the decision that caused it, not to every decision of the agent's round.

These calls are training instrumentation: they are not part of the episode, its tokens or its cost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from data.types import Grader, Sample
from debate.decision import Decision
from debate.episode import Agent, correctness, respond
from debate.graph import Graph
from debate.methods import Method
from debate.phases import update_calls
from debate.spec import SeedStream
from debate.state import DebateState, Turn, next_view
from debate.trajectory import EpisodeResult


@dataclass
class Spend:
    """What the probes cost (they are not part of any episode): calls, prompt and completion tokens as
    the engine counted them, and price-weighted cost; one object may add up many episodes' probes."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    def add(self, turns: Sequence[Turn]) -> None:
        for t in turns:
            self.calls += 1
            self.prompt_tokens += t.prompt_tokens
            self.completion_tokens += t.completion_tokens
            self.cost += t.cost


def prefix_decision(decision: Decision, agent: int, k: int) -> Decision:
    """`decision` as it stood for `agent` after its first k + 1 keep decisions (`record["keep"]`,
    CPP's): only `agent` speaks; it sees the peers it had kept by then and its own response only if
    it had kept it; caps as decided."""
    n = decision.graph.n
    kept = [int(entry[0]) for entry in decision.record["keep"][agent][: k + 1] if entry[1]]
    return Decision(
        Graph(n, [(j, agent) for j in kept if j != agent]),
        active=frozenset({agent}),
        max_tokens=decision.max_tokens,
        hidden_own=frozenset() if agent in kept else frozenset({agent}),
    )


def before_round(state: DebateState, t: int) -> DebateState:
    """The state as round t found it (rounds 0..t-1 done)."""
    return replace(state, views=state.views[:t], turns=state.turns[:t], decisions=state.decisions[:t])


async def action_answers(
    method: Method,
    team: Sequence[Agent],
    sample: Sample,
    seed: int,
    dataset: str,
    result: EpisodeResult,
    grader: Grader,
    last: bool = False,
    spend: Spend | None = None,
) -> list[list[list[str | None]]]:
    """answers[t - 1][i][k]: agent i's answer after its k-th keep decision of debate round t, for
    k < n - 1 (every k with `last`: the last one asks again what the episode's own call answered);
    the calls' cost is added to `spend`."""
    if tuple(method.phases) != ("update",):
        raise ValueError(f"action states: the method must run the update protocol, not {method.phases}")
    seats = [team[j] for j in method.seat_indices([a.key for a in team])]
    state, n = result.state, result.state.n
    rounds = len(result.trajectory) - 1
    positions = n if last else n - 1
    out: list[list[list[str | None]]] = [[[None] * positions for _ in range(n)] for _ in range(rounds)]
    seeds = SeedStream(seed, dataset, sample.id)

    async def probe(t: int, prior: DebateState, made: Decision, agent: int, k: int) -> None:
        decision = prefix_decision(made, agent, k)
        calls = update_calls(sample, prior, decision, [], method.prompt_style, method.reasoning_chars)
        turns = await respond(calls, seats, decision, sample, grader, t, seeds, method.prompt_style, dataset)
        out[t - 1][agent][k] = next_view(prior.latest[agent], turns[0]).answer
        if spend is not None:
            spend.add(turns)

    jobs = []
    for t in range(1, rounds + 1):
        made = result.trajectory[t].decision
        if made is None or "keep" not in made.record:
            raise ValueError("action states: every debate round needs CPP's keep decisions")
        prior = before_round(state, t)  # one per round: every probe of the round starts from it
        jobs += [probe(t, prior, made, i, k) for i in range(n) for k in range(positions)]
    await asyncio.gather(*jobs)
    return out


async def action_correctness(
    method: Method,
    team: Sequence[Agent],
    sample: Sample,
    grader: Grader,
    seed: int,
    dataset: str,
    result: EpisodeResult,
    spend: Spend | None = None,
) -> np.ndarray:
    """(debate rounds, n, n) booleans: whether agent i's answer after its k-th keep decision of
    debate round t (index t - 1) is correct. The last position is the episode's own outcome. The
    probes' cost is added to `spend`."""
    answers = await action_answers(method, team, sample, seed, dataset, result, grader, spend=spend)
    correct = correctness(grader, sample.gold)
    n = result.state.n
    out = np.zeros((len(answers), n, n), dtype=bool)
    for t, rows in enumerate(answers):
        out[t, :, n - 1] = result.trajectory[t + 1].correct_after
        for i, row in enumerate(rows):
            out[t, i, : n - 1] = [correct(a) for a in row]
    return out
