"""RUMAD Table 2's sparse baselines and its random-activation control: S-MAD's star and undirected ring,
group debate's groups and summary exchanges, random activation's budget — hand-computed graphs,
invariants, and episodes through the loop."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.registry import build_backend
from data.grading.graders import NumericGrader
from data.types import Sample
from debate.episode import Agent, run_episode
from debate.methods import build_method
from debate.routers.base import route_now
from debate.routers.sparse import GroupDebate, RandomActivation, SparseRouter, delegate, groups_of, ring_edges
from debate.state import DebateState, View

SAMPLE = Sample(id="q3", question="What is 2 + 2?", gold="4", kind="numeric")
RNG = np.random.default_rng(0)


def state_with(answers: tuple[str | None, ...], conf: tuple[int, ...], rounds: int = 1) -> DebateState:
    state = DebateState(n=len(answers))
    for _ in range(rounds):
        state = state.advance(tuple(View(a, c, "") for a, c in zip(answers, conf, strict=True)), (), None)
    return state


def team(n: int) -> list[Agent]:
    return [Agent(f"s{i}", build_backend("simulated", f"s{i}", {"skill": 0.3 + 0.1 * i})) for i in range(n)]


def test_smad_star_and_undirected_ring() -> None:
    s = state_with(("1",) * 6, (3,) * 6)
    star = route_now(SparseRouter("star"), s, RNG).graph
    assert star.edges == {(0, i) for i in range(1, 6)} | {(i, 0) for i in range(1, 6)}
    ring = route_now(SparseRouter("ring"), s, RNG).graph
    assert ring.edges == {((t + 1) % 6, t) for t in range(6)} | {((t - 1) % 6, t) for t in range(6)}
    assert all(ring.in_degree(t) == 2 for t in range(6))
    assert ring_edges(6, 2) == {((t + d) % 6, t) for t in range(6) for d in (1, 2, -1, -2)}
    assert ring_edges(3, 2) == {(s, t) for s in range(3) for t in range(3) if s != t}  # wraps, no self-loops
    assert route_now(SparseRouter("star", hub=2), s, RNG).graph.in_degree(2) == 5
    with pytest.raises(ValueError, match="structure"):
        build_method("smad", {"structure": "mesh"})


def test_gd_debates_inside_groups_and_exchanges_summaries() -> None:
    assert groups_of(7, 3) == [[0, 1, 2], [3, 4, 5], [6]]
    answers, conf = ("1", "2", "2", "5", "5", "4"), (5, 2, 4, 3, 1, 5)
    inside = route_now(GroupDebate(3, 2), state_with(answers, conf, rounds=1), RNG)  # round 1: inside only
    assert inside.graph.edges == {(s, t) for g in ([0, 1, 2], [3, 4, 5]) for s in g for t in g if s != t}
    # Group 0's majority is "2" (agents 1, 2), its most confident holder agent 2; group 1's is "5",
    # held by 3 (conf 3) and 4 (conf 1): agent 3 stands for it.
    s2 = state_with(answers, conf, rounds=2)
    assert delegate(s2, [0, 1, 2]) == 2 and delegate(s2, [3, 4, 5]) == 3
    exchange = route_now(GroupDebate(3, 2), s2, RNG)  # round 2: the summaries cross over
    assert exchange.graph.edges - inside.graph.edges == {(2, t) for t in (3, 4, 5)} | {
        (3, t) for t in (0, 1, 2)
    }
    assert delegate(state_with((None, None), (1, 1)), [0, 1]) == 0


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 8), st.integers(0, 20), st.integers(0, 5), st.integers(0, 8), st.integers(0, 1000))
def test_random_activation_stays_within_its_budget(
    n: int, budget: int, per_round: int, k: int, seed: int
) -> None:
    from debate.decision import Decision

    router = RandomActivation(budget, per_round, k)
    rng = np.random.default_rng(seed)
    state = state_with(tuple(str(i % 3) for i in range(n)), (3,) * n)
    total = 0
    for _ in range(6):
        d = route_now(router, state, rng)
        assert len(d.active_agents()) == min(per_round, n, budget - total)
        assert all(t in d.active_agents() for _, t in d.graph.edges)
        assert all(d.graph.in_degree(t) == min(k, n - 1) for t in d.active_agents())
        total += len(d.active_agents())
        state = state.advance(state.latest, (), Decision(d.graph, active=d.active))
    assert total <= budget


@pytest.mark.parametrize(
    "name, args",
    [
        ("smad", {"structure": "star"}),
        ("smad", {"structure": "ring"}),
        ("gd", {}),
        ("random_activation", {"budget": 5}),
    ],
)
def test_baselines_run_through_the_loop(name: str, args: dict) -> None:
    method = build_method(name, {**args, "prompt_style": "rumad"})
    res = asyncio.run(run_episode(method, team(6), SAMPLE, NumericGrader(), 1, 4, "toy"))
    calls = sum(1 for t in res.turns if t.round > 0)
    assert calls == (5 if name == "random_activation" else 24)
    for rec in res.trajectory[1:]:
        assert all(t in rec.active for _, t in rec.decision.graph.edges)
