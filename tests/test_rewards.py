"""RUMAD's reward terms on a hand-built trajectory, each weight on its own, and on real episodes."""

from __future__ import annotations

import asyncio
import dataclasses

import numpy as np
import pytest

from actors.registry import build_backend
from data.grading.graders import NumericGrader
from data.types import Sample
from debate.decision import Decision
from debate.episode import Agent, run_episode
from debate.graph import Graph
from debate.methods import build_method
from debate.rewards import TERMS, RewardWeights, reward_terms, step_rewards
from debate.trajectory import RoundRecord

GOLD = "7"


def rec(r: int, before: tuple, after: tuple, active: tuple, edges: list, tokens: int) -> RoundRecord:
    """A round record over answers (gold "7"); the vote is the plurality (ties: smallest answer)."""
    counts = {a: after.count(a) for a in after if a is not None}
    vote = min(counts, key=lambda a: (-counts[a], a)) if counts else None
    n = len(after)
    decision = Decision(Graph(n, edges), active=frozenset(active)) if r else None
    return RoundRecord(
        r, decision, before, after, tuple(a == GOLD for a in before), tuple(a == GOLD for a in after),
        active, vote, vote == GOLD, len(active), tokens, 0, 0.0,
    )  # fmt: skip


# Round 0: 3, 3, 7, 1 (vote 3: wrong). Round 1: agents 1 and 3 speak -> 3, 7, 7, 7 (vote 7, right).
# Round 2: agent 0 speaks -> 7, 7, 7, 7.
TRAJ = [
    rec(0, (None,) * 4, ("3", "3", "7", "1"), (0, 1, 2, 3), [], 400),
    rec(1, ("3", "3", "7", "1"), ("3", "7", "7", "7"), (1, 3), [(2, 1), (2, 3), (0, 3)], 1000),
    rec(2, ("3", "7", "7", "7"), ("7", "7", "7", "7"), (0,), [(1, 0)], 500),
]


def test_every_term_hand_computed() -> None:
    w = RewardWeights()  # Table 5
    t = reward_terms(TRAJ, w, budget=5)
    np.testing.assert_allclose(t["consensus"], [0.3 * 0.75, 0.3 * 1.0])
    np.testing.assert_allclose(t["progress"], [0.1 * 2 / 4, 0.1 * 1 / 4])
    np.testing.assert_allclose(t["efficiency"], [-0.2 * 1000 / 1e4, -0.2 * 500 / 1e4 + 0.3 * (5 - 3) / 5])
    np.testing.assert_allclose(t["accuracy"], [0.0, 1.0])
    np.testing.assert_allclose(t["improvement"], [0.0, 1.0])  # wrong at round 0, right at the end
    np.testing.assert_allclose(t["sparsity"], [-0.1 * 3 / 12, -0.1 * 1 / 12])
    np.testing.assert_allclose(step_rewards(t), sum(t[k] for k in TERMS))
    assert set(t) == set(TERMS)


def test_the_bad_cases_use_the_beta_weights() -> None:
    # The same debate, run backwards in correctness: right at round 0, wrong at the end.
    flip = {"7": "3", "3": "7"}
    swap = lambda xs: tuple(flip.get(a, a) for a in xs)  # noqa: E731
    traj = [rec(r.round, swap(r.answers_before), swap(r.answers_after), r.active,
                sorted(r.decision.graph.edges) if r.decision else [], r.tokens) for r in TRAJ]  # fmt: skip
    t = reward_terms(traj, RewardWeights(), budget=0)
    np.testing.assert_allclose(t["consensus"], [-0.5 * 0.75, -0.5 * 1.0])
    np.testing.assert_allclose(t["accuracy"], [0.0, -2.0])
    np.testing.assert_allclose(t["improvement"], [0.0, -0.2])
    np.testing.assert_allclose(t["efficiency"], [-0.2 * 0.1, -0.2 * 0.05])  # B = 0: no unused-budget bonus


@pytest.mark.parametrize("term", TERMS)
def test_a_zero_weight_silences_its_term(term: str) -> None:
    zero = {f.name: 0.0 for f in dataclasses.fields(RewardWeights) if f.name != "token_scale"}
    only = {k: v for k, v in zero.items() if not k.endswith(term)}
    t = reward_terms(TRAJ, RewardWeights(**only), budget=5)
    assert any(t[term] != 0) and all(not any(t[k]) for k in TERMS if k != term)
    assert not any(reward_terms(TRAJ, RewardWeights(**zero), budget=5)[term])


def test_weights_are_checked() -> None:
    with pytest.raises(ValueError, match="alpha_sparsity"):
        RewardWeights(alpha_sparsity=-0.1)
    with pytest.raises(ValueError, match="token_scale"):
        RewardWeights(token_scale=0.0)
    assert all(len(v) == 0 for v in reward_terms(TRAJ[:1], RewardWeights(), 5).values())


def test_rewards_of_a_real_episode_are_a_function_of_its_trajectory() -> None:
    team = [Agent(f"s{i}", build_backend("simulated", f"s{i}", {"skill": 0.5})) for i in range(4)]
    sample = Sample(id="q9", question="What is 3 + 4?", gold=GOLD, kind="numeric")
    res = asyncio.run(
        run_episode(
            build_method("random_activation", {"budget": 5}), team, sample, NumericGrader(), 2, 3, "toy"
        )
    )
    t = reward_terms(res.trajectory, RewardWeights(), budget=5)
    assert all(len(v) == 3 for v in t.values())
    assert t["accuracy"][-1] == (1.0 if res.correct else -2.0)
    assert t["efficiency"][0] == pytest.approx(-0.2 * res.trajectory[1].tokens / 1e4)
    again = reward_terms(res.trajectory, RewardWeights(), budget=5)
    assert all(np.array_equal(t[k], again[k]) for k in TERMS)
