"""CPP's reward (Table 1) and returns (appendix A): the dependency structure reproduces the paper's
3 x 3 table (Table 8) entry by entry, generalises to N agents x T rounds, and the reward table is read
off a trajectory."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from debate.cpp_reward import CppReward, action_reward, action_rewards, dependencies, index, order, returns
from debate.decision import Decision
from debate.graph import Graph
from debate.trajectory import RoundRecord

# Table 8 of the paper, as printed: A_t[i][j] = agent i's decision on agent j's response in round t.
TABLE_8 = """
A1[0][0] (A1[0][0],1) (A1[0][1],g) (A1[0][2],g2) (A2[0][0],b) (A2[0][1],bg) (A2[0][2],bg2) (A2[1][0],bg) (A2[1][2],bg2) (A2[2][0],bg) (A2[2][1],bg2)
A1[0][1] (A1[0][1],1) (A1[0][2],g) (A2[0][0],b) (A2[0][1],bg) (A2[0][2],bg2) (A2[1][0],bg) (A2[1][2],bg2) (A2[2][0],bg) (A2[2][1],bg2)
A1[0][2] (A1[0][2],1) (A2[0][0],b) (A2[0][1],bg) (A2[0][2],bg2) (A2[1][0],bg) (A2[1][2],bg2) (A2[2][0],bg) (A2[2][1],bg2)
A1[1][0] (A1[1][0],1) (A1[1][2],g) (A2[0][1],bg) (A2[0][2],bg2) (A2[1][1],b) (A2[1][0],bg) (A2[1][2],bg2) (A2[2][1],bg2)
A1[1][1] (A1[1][1],1) (A1[1][0],g) (A1[1][2],g2) (A2[0][1],bg) (A2[0][2],bg2) (A2[1][1],b) (A2[1][0],bg) (A2[1][2],bg2) (A2[2][1],bg2)
A1[1][2] (A1[1][2],1) (A2[0][1],bg) (A2[0][2],bg2) (A2[1][1],b) (A2[1][0],bg) (A2[1][2],bg2) (A2[2][1],bg2)
A1[2][0] (A1[2][0],1) (A1[2][1],g) (A2[0][2],bg2) (A2[1][2],bg2) (A2[2][2],b) (A2[2][0],bg) (A2[2][1],bg2)
A1[2][1] (A1[2][1],1) (A2[0][2],bg2) (A2[1][2],bg2) (A2[2][2],b) (A2[2][0],bg) (A2[2][1],bg2)
A1[2][2] (A1[2][2],1) (A1[2][0],g) (A1[2][1],g2) (A2[0][2],bg2) (A2[1][2],bg2) (A2[2][2],b) (A2[2][0],bg) (A2[2][1],bg2)
A2[0][0] (A2[0][0],1) (A2[0][1],g) (A2[0][2],g2)
A2[0][1] (A2[0][1],1) (A2[0][2],g)
A2[0][2] (A2[0][2],1)
A2[1][0] (A2[1][0],1) (A2[1][2],g)
A2[1][1] (A2[1][1],1) (A2[1][0],g) (A2[1][2],g2)
A2[1][2] (A2[1][2],1)
A2[2][0] (A2[2][0],1) (A2[2][1],g)
A2[2][1] (A2[2][1],1)
A2[2][2] (A2[2][2],1) (A2[2][0],g) (A2[2][1],g2)
"""
B, G = 0.7, 0.3  # distinct powers: 1, .3, .09, .7, .21, .063
WEIGHT = {"1": 1.0, "g": G, "g2": G**2, "b": B, "bg": B * G, "bg2": B * G**2}
ACTION = re.compile(r"A(\d)\[(\d)\]\[(\d)\]")


def flat(t: int, i: int, j: int, n: int = 3) -> int:
    """Table 8 names a decision by its candidate j; ours index it by position in the agent's order."""
    return index(t, i, order(i, n).index(j), n)


def table_8() -> np.ndarray:
    d = np.zeros((18, 18))
    for line in TABLE_8.strip().splitlines():
        head, *deps = line.split(" ")
        row = flat(*map(int, ACTION.fullmatch(head).groups()))  # type: ignore[union-attr]
        for dep in deps:
            name, weight = dep.strip("()").split(",")
            d[row, flat(*map(int, ACTION.fullmatch(name).groups()))] = WEIGHT[weight]  # type: ignore[union-attr]
    return d


def test_the_dependency_structure_is_the_papers_table_8() -> None:
    want = table_8()
    assert np.count_nonzero(want) == 10 + 9 + 8 + 8 + 9 + 7 + 7 + 6 + 8 + 3 + 2 + 1 + 2 + 3 + 1 + 2 + 1 + 3
    np.testing.assert_allclose(dependencies(3, 2, B, G), want)


def test_the_decision_order_starts_with_the_agent_itself() -> None:
    assert order(0, 3) == (0, 1, 2) and order(1, 3) == (1, 0, 2) and order(2, 3) == (2, 0, 1)


def test_longer_debates_reach_every_later_decision_discounted_by_rounds() -> None:
    d = dependencies(4, 3, B, G)
    a = index(1, 2, 1, 4)  # agent 2's second decision in round 1
    for i in range(4):
        for k in range(4):
            assert d[a, index(3, i, k, 4)] == pytest.approx(B**2 * G**k)  # round 3: everything
    # round 2: from candidate 2's place in each agent's order on; agent 3's order is (3, 0, 1, 2)
    assert d[a, index(2, 3, 2, 4)] == 0 and d[a, index(2, 3, 3, 4)] == pytest.approx(B * G**3)
    assert np.all(np.diag(d) == 1)  # an action's own reward counts once, undiscounted
    assert np.all(np.tril(d, -1) == 0)  # no action depends on one taken before it


@pytest.mark.parametrize(
    "kept, before, after, want",
    [(True, True, True, 0.5 * 1.5), (True, True, False, -3.0), (True, False, True, 3.0), (True, False, False, -0.75),
     (False, True, True, 1.5), (False, False, False, -0.75), (False, True, False, -3.0), (False, False, True, 3.0)],
)  # fmt: skip
def test_table_1(kept: bool, before: bool, after: bool, want: float) -> None:
    w = CppReward(k=0.5)
    assert action_reward(kept, before, after, w.scale(2), 3, w) == pytest.approx(want)  # a_2 = 1.5
    if not kept and before != after:  # the blank cells: prune_flip scales the flip's reward
        assert action_reward(kept, before, after, w.scale(2), 3, CppReward(k=0.5, prune_flip=0.0)) == 0.0


def _round(t: int, keep: list[list[int]], before: tuple[bool, ...], after: tuple[bool, ...]) -> RoundRecord:
    n = len(keep)
    record = {"keep": [[[order(i, n)[k], bool(keep[i][k]), 0.5] for k in range(n)] for i in range(n)]}
    return RoundRecord(
        t,
        Decision(Graph(n), record=record),
        (None,) * n,
        (None,) * n,
        before,
        after,
        (),
        None,
        False,
        0,
        0,
        0,
        0.0,
    )


def test_rewards_and_returns_read_the_trajectory() -> None:
    n = 3
    r0 = RoundRecord(
        0, None, (None,) * n, ("1",) * n, (False,) * n, (True, False, False), (), None, False, 0, 0, 0, 0.0
    )
    r1 = _round(1, [[1, 1, 0], [0, 1, 1], [1, 0, 0]], (True, False, False), (True, True, False))
    r2 = _round(2, [[0, 0, 0], [1, 1, 1], [1, 1, 1]], (True, True, False), (True, True, True))
    w = CppReward(k=1.0, a=1.0, round_scale=1.5, beta=B, gamma=G)
    rewards, ret = returns([r0, r1, r2], w)
    assert rewards[index(1, 0, 0, n)] == 1.0  # ++ keep, k = 1
    assert rewards[index(1, 0, 2, n)] == 1.0  # ++ prune
    assert rewards[index(1, 1, 1, n)] == 2.0  # -+ keep
    assert rewards[index(1, 1, 0, n)] == 2.0  # -+ prune: prune_flip 1 credits the flip too
    assert rewards[index(1, 2, 0, n)] == -0.5  # -- keep: -a / (N - 1)
    assert rewards[index(2, 2, 2, n)] == 3.0  # -+ keep in round 2: 2 * 1.5
    np.testing.assert_allclose(ret, table_8() @ rewards)
    assert np.array_equal(action_rewards([r0], w), np.zeros(0))


def test_bad_coefficients_are_refused() -> None:
    with pytest.raises(ValueError, match="k must be in"):
        CppReward(k=1.5)
    with pytest.raises(ValueError, match="gamma must be in"):
        CppReward(gamma=1.2)
    with pytest.raises(ValueError, match="keep_cost must be >= 0"):
        CppReward(keep_cost=-0.1)
    with pytest.raises(ValueError, match="final must be >= 0"):
        CppReward(final=-1.0)


@pytest.mark.parametrize("vote_correct", [True, False])
def test_the_final_vote_and_the_keep_cost_enter_each_return_directly(vote_correct: bool) -> None:
    n = 3
    r0 = RoundRecord(
        0, None, (None,) * n, ("1",) * n, (False,) * n, (True, False, False), (), None, False, 0, 0, 0, 0.0
    )
    r1 = _round(1, [[1, 1, 0], [0, 1, 1], [1, 0, 0]], (True, False, False), (True, True, False))
    r2 = _round(2, [[0, 0, 0], [1, 1, 1], [1, 1, 1]], (True, True, False), (True, True, True))
    r2 = dataclasses.replace(r2, vote_correct=vote_correct)
    paper = CppReward(k=1.0, a=2.0, round_scale=1.5, beta=B, gamma=G)
    ours = dataclasses.replace(paper, final=0.5, keep_cost=0.25)
    assert paper.to_dict() == {
        "k": 1.0,
        "a": 2.0,
        "round_scale": 1.5,
        "beta": B,
        "gamma": G,
        "prune_flip": 1.0,
    }
    assert ours.to_dict()["final"] == 0.5 and ours.to_dict()["keep_cost"] == 0.25
    (r, g), (r2_, g2) = returns([r0, r1, r2], paper), returns([r0, r1, r2], ours)
    kept = np.array([1, 1, 0, 0, 1, 1, 1, 0, 0] + [0, 0, 0, 1, 1, 1, 1, 1, 1], dtype=float)
    cost = 0.25 * kept * np.array([2.0] * 9 + [3.0] * 9)  # keep_cost * a_t, a_t = a * 1.5 ** (t - 1)
    final = 0.5 * 2.0 * vote_correct  # final * a, only when the final vote is right
    np.testing.assert_allclose(g2, g - cost + final)  # whole in every return, not through D
    np.testing.assert_allclose(r2_.sum(), r.sum() - cost.sum() + final)  # once in the episode's total
    assert g2[index(2, 0, 0, n)] == pytest.approx(g[index(2, 0, 0, n)] + final)  # pruned: no cost
