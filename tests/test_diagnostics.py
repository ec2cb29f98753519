"""Debate diagnostics on hand-computed states (PEAR's appendix F round 1 among them), for methods with
and without critiques, rounds, or answers; and the summary an episode row carries."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from actors.registry import build_backend
from data.grading.graders import NumericGrader
from data.types import Sample
from debate.diagnostics import answer_entropy, diagnose, diagnose_episode, influence_entropy
from debate.episode import Agent, run_episode
from debate.graph import Graph
from debate.influence import InfluenceRule, rule_of
from debate.methods import build_method
from debate.state import DebateState, Turn, View

CASE_GRAPH = Graph(5, [(s - 1, t - 1) for s, t in [(3, 1), (4, 1), (3, 2), (5, 2), (1, 3), (2, 3), (2, 4), (3, 4), (1, 5), (3, 5)]])  # fmt: skip


def turn(
    agent: int, phase: str, tokens: int, sources: tuple[int, ...] = (), verdicts: dict | None = None
) -> Turn:
    extra = {"verdicts": verdicts} if verdicts is not None else {}
    return Turn(agent=agent, round=1, phase=phase, model="m", text="", answer=None, confidence=None,
                reasoning="", parsed=True, prompt_tokens=tokens, completion_tokens=1, sources=sources,
                extra=extra)  # fmt: skip


def case_study() -> DebateState:
    """Appendix F: round 0 (C, E, D, D, C) with confidences (3, 3, 4, 3, 2); after round 1 all D (gold)."""
    state = DebateState(n=5).advance(
        tuple(View(a, c, "") for a, c in zip("CEDDC", (3, 3, 4, 3, 2), strict=True)),
        tuple(turn(i, "initial", 100) for i in range(5)),
        None,
    )
    verdicts = {0: {2: "ACCEPT", 3: "REJECT"}, 1: {2: "ACCEPT", 4: "ACCEPT"}, 2: {0: "REJECT", 1: "REJECT"},
                3: {1: "ACCEPT", 2: "ACCEPT"}, 4: {0: "ACCEPT"}}  # agent 4's verdict on critic 2: unreadable  # fmt: skip
    critiques = [turn(s, "critique", 200, CASE_GRAPH.targets(s)) for s in range(5)]
    revisions = [turn(t, "revise", 300, CASE_GRAPH.sources(t), verdicts[t]) for t in range(5)]
    return state.advance(tuple(View("D", 4, "") for _ in range(5)), (*critiques, *revisions), CASE_GRAPH)


def test_case_study_round_one() -> None:
    diag = diagnose(case_study(), lambda a: a == "D")
    r0, r1 = diag.rounds
    # The paper prints 1/5 correct and W2R 4 for this round, but its answers list agent 4 on D too.
    assert (r0.correct, r0.w2r, r0.cross_ans, r0.calls, r0.tokens) == (2, None, None, 5, 505)
    assert r0.answer_entropy == pytest.approx(-(2 * 0.4 * math.log2(0.4) + 0.2 * math.log2(0.2)))
    assert r0.agreement == 0.4 and r0.influence_entropy == pytest.approx(1.0)
    assert (r1.w2r_count, r1.wrong_before, r1.w2r, r1.r2w, r1.net) == (3, 3, 1.0, 0.0, 1.0)
    assert r1.changed == 3 and r1.correct == 5
    assert (r1.edges, r1.cross_edges, r1.cross_ans) == (10, 8, 0.8)  # only 3->4 and 1->5 agreed
    assert r1.src_conf == pytest.approx(5.75 / 10)  # sources' (c - 1) / 4, one per edge
    assert (r1.critiques, r1.verdicts, r1.accepted) == (10, 9, 6)
    assert r1.acceptance == pytest.approx(6 / 9)
    assert r1.answer_entropy == 0.0 and r1.agreement == 1.0
    assert (r1.calls, r1.tokens) == (10, 5 * 201 + 5 * 301)
    # rho after round 1 (adoption): agents 3 and 4 (0-based 2, 3) were adopted by all their targets.
    p = [0.12, 0.12, 0.52, 0.52, 0.12]
    total = sum(p)
    expected = -sum(x / total * math.log(x / total) for x in p) / math.log(5)
    assert r1.influence_entropy == pytest.approx(expected)
    s = diag.summary
    assert (s["w2r"], s["r2w"], s["net"], s["cross_ans"], s["acceptance"]) == (1.0, 0.0, 1.0, 0.8, 6 / 9)
    assert s["influence_entropy"] == r1.influence_entropy and s["agreement"] == 1.0


def test_acceptance_rule_changes_influence_entropy() -> None:
    adoption = diagnose(case_study(), lambda a: a == "D").rounds[1].influence_entropy
    accept = (
        diagnose(case_study(), lambda a: a == "D", InfluenceRule(mode="accept")).rounds[1].influence_entropy
    )
    assert adoption != accept


def test_pooled_rates_and_missing_denominators() -> None:
    views = [("1", "2"), ("1", "1"), ("2", "1")]  # gold 1: agent 0 right->right->wrong, agent 1 w->r->r
    state = DebateState(n=2)
    for r, answers in enumerate(views):
        state = state.advance(tuple(View(a, 3, "") for a in answers), (), Graph(2, [(0, 1)]) if r else None)
    diag = diagnose(state, lambda a: a == "1")
    r1, r2 = diag.rounds[1:]
    assert (r1.w2r, r1.r2w) == (1.0, 0.0)
    assert (r2.w2r, r2.r2w, r2.wrong_before) == (None, 0.5, 0)  # nobody was wrong before round 2
    assert r2.net == -0.5  # an undefined rate counts 0
    s = diag.summary
    assert (s["w2r"], s["r2w"], s["w2r_count"], s["r2w_count"]) == (1.0, 1 / 3, 1, 1)
    assert s["net"] == pytest.approx(2 / 3) and s["acceptance"] is None and s["critiques"] == 0


def test_methods_without_rounds_or_edges() -> None:
    one = DebateState(n=1).advance((View("4", 5, ""),), (), None)
    diag = diagnose(one, lambda a: a == "4")
    assert len(diag.rounds) == 1 and diag.rounds[0].influence_entropy is None  # n = 1
    s = diag.summary
    assert s["w2r"] is None and s["net"] is None and s["cross_ans"] is None and s["changed"] == 0
    sc = DebateState(n=3).advance(tuple(View(a, 3, "") for a in "445"), (), None)
    assert diagnose(sc, lambda a: a == "4").summary["influence_entropy"] == pytest.approx(1.0)
    zero = (
        DebateState(n=2)
        .advance((View("1", 3, ""),) * 2, (), None)
        .advance((View("1", 3, ""),) * 2, (), Graph(2))
    )
    r1 = diagnose(zero, lambda a: a == "1").rounds[1]
    assert r1.edges == 0 and r1.cross_ans is None and r1.src_conf is None and r1.w2r is None


def test_entropies_leave_missing_answers_out() -> None:
    assert answer_entropy(["a", "a"]) == 0.0
    assert answer_entropy([None, None]) == 0.0 and answer_entropy(["a", None, "b"]) == 1.0
    assert answer_entropy(["a", "b", "a", "b"]) == 1.0
    assert influence_entropy(np.array([0.0, 0.0])) is None
    assert influence_entropy(np.array([1.0, 0.0])) == 0.0


def test_influence_rule_comes_from_pears_decisions_only() -> None:
    sim = build_backend("simulated", "sim", {"skill": 0.5})
    sample = Sample(id="d1", question="What is 6 * 7?", gold="42", kind="numeric")
    team = [Agent("sim", sim)] * 4
    pear = build_method("pear", {"beta": 0.3, "influence": "accept", "mc_permutations": 8})
    ring = build_method("fixed", {"topology": "ring"})
    pear_res = asyncio.run(run_episode(pear, team, sample, NumericGrader(), 2, 1, "toy"))
    ring_res = asyncio.run(run_episode(ring, team, sample, NumericGrader(), 2, 1, "toy"))
    assert rule_of(pear_res.state) == InfluenceRule(0.3, "accept")
    assert rule_of(ring_res.state) == InfluenceRule() == rule_of(DebateState(n=2))
    # the episode's diagnostics use the recorded rule, as if it were given explicitly
    right = lambda a: a == "42"  # noqa: E731
    assert diagnose_episode(pear_res) == diagnose(pear_res.state, right, InfluenceRule(0.3, "accept"))


def test_every_method_gets_diagnostics_from_a_real_episode() -> None:
    sim = build_backend("simulated", "sim", {"skill": 0.5})
    sample = Sample(id="d1", question="What is 6 * 7?", gold="42", kind="numeric")
    for name, args in [("cot", {}), ("cot_sc", {"m": 3}), ("fixed", {"topology": "ring"}), ("pear", {})]:
        method = build_method(name, args)
        res = asyncio.run(run_episode(method, [Agent("sim", sim)] * 4, sample, NumericGrader(), 2, 2, "toy"))
        diag = diagnose_episode(res)
        assert diag == diagnose(res.state, lambda a: NumericGrader().grade(a, "42") == "correct")
        assert len(diag.rounds) == res.state.round
        assert sum(d.calls for d in diag.rounds) == res.calls
        assert sum(d.tokens for d in diag.rounds) == res.prompt_tokens + res.completion_tokens
        assert [d.correct for d in diag.rounds][0] == sum(v.answer == "42" for v in res.state.views[0])
        if name == "pear":
            assert diag.summary["critiques"] == 2 * 4 * 2  # k = 2 critiques per agent, 2 rounds
