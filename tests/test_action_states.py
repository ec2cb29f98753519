"""CPP's states after each action (`debate.action_states`, `pg.action_states`): asking an agent again
with what it had kept by its k-th decision reproduces the episode's own call at the last decision and
leaves the answer where it was after a prune, each action's reward reads its own pair, and the
trainer scores its batch with them only when asked."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from data.benchmarks.registry import load_benchmark
from data.grading.graders import grader_for
from debate.action_states import Spend, action_answers, action_correctness, prefix_decision
from debate.cpp_reward import CppReward, action_rewards, index, kept_matrix, order, returns
from debate.episode import EpisodeResult, run_episode
from debate.methods import build_method
from sweep.config.sweep import load_config
from sweep.engines.pool import local_agents

ROOT = Path(__file__).resolve().parents[1]


def episodes(adversary: bool = False) -> list[tuple[EpisodeResult, object, object, int]]:
    """Random-pruning episodes on CPP's calibrated team (whole replies, both prompt families)."""
    cfg = load_config(str(ROOT / "examples" / "cpp_calibrated.yaml"))
    agents = local_agents(cfg)
    team = [agents[m] for m in cfg.team()]
    if adversary:
        team[1] = dataclasses.replace(team[1], adversarial=True)
    out = []
    for style in ("pear", "rumad"):
        method = build_method(
            "random_prune", {"protocol": "update", "p": 0.5, "prompt_style": style, "reasoning_chars": 0}
        )
        for seed, sample in enumerate(load_benchmark("arith", "train", limit=6, seed=0)):
            grader = grader_for(sample)
            res = asyncio.run(run_episode(method, team, sample, grader, seed, cfg.rounds, "arith"))
            out.append((res, method, team, seed))
    return out


@pytest.mark.parametrize("adversary", [False, True])
def test_asking_again_after_every_decision_reproduces_the_episodes_call(adversary: bool) -> None:
    moved = 0
    for res, method, team, seed in episodes(adversary):
        sample = load_benchmark("arith", "train", limit=6, seed=0)[seed]
        grader = grader_for(sample)
        got = asyncio.run(action_answers(method, team, sample, seed, "arith", res, grader, last=True))  # type: ignore[arg-type]
        n = res.state.n
        for t, rec in enumerate(res.trajectory[1:], start=1):
            kept = kept_matrix(rec)
            for i in range(n):
                row = got[t - 1][i]
                assert row[n - 1] == rec.answers_after[i]  # every decision made: the episode's own call
                for k in range(1, n):
                    if not kept[i, k]:  # a prune shows nothing new: the answer stays
                        assert row[k] == row[k - 1]
                moved += row[0] != rec.answers_after[i]
    assert moved > 0  # some answers move within a round: the pairs differ from the round's


def test_a_prefix_shows_only_what_was_kept_by_then() -> None:
    from debate.decision import Decision
    from debate.graph import Graph

    keep = [
        [[0, True, 0.9], [1, False, 0.2], [2, True, 0.8]],
        [[1, False, 0.1], [0, True, 0.7], [2, True, 0.6]],
    ]
    keep.append([[2, True, 0.5], [0, True, 0.5], [1, True, 0.5]])
    made = Decision(
        Graph(3, [(2, 0), (0, 1), (2, 1), (0, 2), (1, 2)]), hidden_own=frozenset({1}), record={"keep": keep}
    )
    assert prefix_decision(made, 0, 0).graph.sources(0) == () and not prefix_decision(made, 0, 0).hidden_own
    assert prefix_decision(made, 0, 2).graph.sources(0) == (2,)
    assert prefix_decision(made, 1, 0).hidden_own == {1} and prefix_decision(made, 1, 1).graph.sources(1) == (
        0,
    )
    assert prefix_decision(made, 1, 1).active == {1}


def test_each_action_reads_its_own_pair() -> None:
    res, method, team, seed = episodes()[0]
    n, w = res.state.n, CppReward(k=0.5, prune_flip=0.0)
    states = np.zeros((len(res.trajectory) - 1, n, n), dtype=bool)
    states[0, 0] = [True, False, False]  # agent 0, round 1: right after its first decision, then broken
    got = action_rewards(res.trajectory, w, states)
    rec, kept = res.trajectory[1], kept_matrix(res.trajectory[1])
    first = (0.5 if kept[0, 0] else 1.0) if rec.correct_before[0] else (2.0 if kept[0, 0] else 0.0)
    assert got[index(1, 0, 0, n)] == pytest.approx(first)
    assert got[index(1, 0, 1, n)] == pytest.approx(-2.0 if kept[0, 1] else 0.0)  # +-
    assert got[index(1, 0, 2, n)] == pytest.approx(-0.5)  # --
    assert not np.allclose(returns(res.trajectory, w, states)[1], returns(res.trajectory, w)[1])
    with pytest.raises(ValueError, match="states must be"):
        action_rewards(res.trajectory, w, states[:, :2])
    assert order(0, n) == (0, 1, 2)


def test_correctness_after_each_action_grades_the_answers() -> None:
    res, method, team, seed = episodes(adversary=True)[3]
    sample = load_benchmark("arith", "train", limit=6, seed=0)[seed]
    grader = grader_for(sample)
    spend = Spend()
    got = asyncio.run(action_correctness(method, team, sample, grader, seed, "arith", res, spend))  # type: ignore[arg-type]
    answers = asyncio.run(action_answers(method, team, sample, seed, "arith", res, grader))  # type: ignore[arg-type]
    n = res.state.n
    for t in range(len(res.trajectory) - 1):
        assert list(got[t, :, n - 1]) == list(res.trajectory[t + 1].correct_after)
        for i in range(n):
            want = [a is not None and grader.grade(a, sample.gold) == "correct" for a in answers[t][i]]
            assert list(got[t, i, : n - 1]) == want
    # the probes' own cost, as the engine counted it: n - 1 calls per agent and debate round
    assert spend.calls == (len(res.trajectory) - 1) * n * (n - 1)
    assert spend.prompt_tokens > 0 and spend.completion_tokens > 0 and spend.cost > 0
    again = Spend()
    asyncio.run(action_answers(method, team, sample, seed, "arith", res, grader, spend=again))  # type: ignore[arg-type]
    assert again == spend
