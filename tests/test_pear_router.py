"""PEAR's router: T, I, L and the influence update on hand-computed states (the appendix F round-1 state
among them), score bounds, graph invariants, the once-per-episode base graph, selection and ablations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from debate.graph import Graph
from debate.influence import InfluenceRule, influence_history
from debate.methods import build_method
from debate.routers.base import route_now
from debate.routers.pear import PearRouter, Pool, score_terms
from debate.state import DebateState, Turn, View

# Appendix F, round-1 state (methods.md item 10); agents are 1-based in the paper, 0-based here.
CASE_ANSWERS = ("C", "E", "D", "D", "C")
CASE_CONF = (3, 3, 4, 3, 2)
CASE_EDGES = [(3, 1), (4, 1), (3, 2), (5, 2), (1, 3), (2, 3), (2, 4), (3, 4), (1, 5), (3, 5)]
CASE_GRAPH = Graph(5, [(s - 1, t - 1) for s, t in CASE_EDGES])


def state_of(
    *rounds: tuple[tuple[str | None, ...], tuple[int, ...]], graphs=(), turns=(), seed=0
) -> DebateState:
    """A state from (answers, confidences) per round; graphs[r-1] and turns[r-1] for rounds r >= 1."""
    state = DebateState(n=len(rounds[0][0]), routing_seed=seed)
    for r, (answers, conf) in enumerate(rounds):
        views = tuple(View(a, c, "") for a, c in zip(answers, conf, strict=True))
        graph = graphs[r - 1] if r else None
        state = state.advance(views, tuple(turns[r - 1]) if r and turns else (), graph)
    return state


def edge_arrays(graph: Graph) -> tuple[np.ndarray, np.ndarray]:
    edges = graph.sorted_edges()
    return np.array([[s for s, _ in edges]]), np.array([[t for _, t in edges]])


def test_case_study_round_one_terms() -> None:
    src, tgt = edge_arrays(CASE_GRAPH)
    t, i, low = score_terms(CASE_ANSWERS, CASE_CONF, np.full(5, 0.2), src, tgt)
    assert t[0] == pytest.approx(0.30)  # 3->1, 3->2, 3->5: confident D toward unsure C/E targets
    assert i[0] == pytest.approx(0.20)  # rho = 1/5 everywhere, sum of out-degrees = m
    assert low[0] == pytest.approx(7 / 30)
    t, i, low = score_terms(CASE_ANSWERS, CASE_CONF, np.full(5, 0.2), src, tgt, normalize=False)
    assert (t[0], i[0], low[0]) == (3.0, pytest.approx(2.0), 7.0)
    # The same through the router, on a state whose round 0 is the case study's state.
    state = state_of((CASE_ANSWERS, CASE_CONF))
    expected = 0.2 * 0.30 - 0.7 * 0.20 - 0.7 * 7 / 30
    assert PearRouter().scores(state, Pool(5, src, tgt))[0] == pytest.approx(expected)


def test_thresholds_move_the_targeted_term() -> None:
    src, tgt = edge_arrays(CASE_GRAPH)
    rho = np.full(5, 0.2)
    # tau_src = 3 adds the confidence-3 sources 4->1 (D vs C) and 2->4 (E vs D); 1->3 and 2->3 still
    # miss because target 3 is confident (4 > tau_tgt).
    assert score_terms(CASE_ANSWERS, CASE_CONF, rho, src, tgt, tau_src=3)[0][0] == pytest.approx(0.5)
    # tau_tgt = 2 keeps only the unsure target 5: edge 3->5.
    assert score_terms(CASE_ANSWERS, CASE_CONF, rho, src, tgt, tau_tgt=2)[0][0] == pytest.approx(0.1)
    # tau_low = 1 penalizes only confidence-1 sources: none here.
    assert score_terms(CASE_ANSWERS, CASE_CONF, rho, src, tgt, tau_low=1)[2][0] == 0.0


def test_missing_answers_are_never_a_targeted_disagreement() -> None:
    src, tgt = np.array([[0]]), np.array([[1]])  # a confident source toward an unsure target
    assert score_terms(("4", "5"), (5, 1), np.zeros(2), src, tgt)[0][0] == 1.0
    assert score_terms(("4", None), (5, 1), np.zeros(2), src, tgt)[0][0] == 0.0  # as the authors' scorer
    assert score_terms((None, "5"), (5, 1), np.zeros(2), src, tgt)[0][0] == 0.0


def case_round_one(verdicts: dict[int, dict[int, str]]) -> DebateState:
    """The case study's round 1: everybody ends on D; revise turns carry the given verdicts."""
    turns = [
        Turn(agent=t, round=1, phase="revise", model="m", text="", answer="D", confidence=4, reasoning="",
             parsed=True, prompt_tokens=0, completion_tokens=0, sources=CASE_GRAPH.sources(t),
             extra={"verdicts": verdicts.get(t, {})})
        for t in range(5)
    ]  # fmt: skip
    return state_of((CASE_ANSWERS, CASE_CONF), (("D",) * 5, (4,) * 5), graphs=[CASE_GRAPH], turns=[turns])


def test_influence_update_by_adoption() -> None:
    state = case_round_one({})
    rho0, rho1 = influence_history(state, InfluenceRule())
    assert rho0 == pytest.approx([0.2] * 5)
    # Agent 3 (D) reached targets 1, 2, 4, 5 who all now answer D; agent 4 (D) reached 1 (D);
    # agents 1, 2, 5 held C or E and none of their targets ends there.
    assert rho1 == pytest.approx([0.12, 0.12, 0.52, 0.52, 0.12])
    assert influence_history(state, InfluenceRule(beta=1.0))[1] == pytest.approx([0.2] * 5)
    zero = influence_history(state, InfluenceRule(rho_init="zero"))
    assert zero[0].sum() == 0 and zero[1] == pytest.approx([0.0, 0.0, 0.4, 0.4, 0.0])


def test_influence_update_by_acceptance() -> None:
    # 0-based: target -> {critic: verdict}. Agent 2 (paper's 3) has 4 targets, 3 accept it.
    verdicts = {
        0: {2: "ACCEPT", 3: "REJECT"},
        1: {2: "ACCEPT", 4: "ACCEPT"},
        2: {0: "REJECT"},
        3: {2: "ACCEPT"},
    }
    rho1 = influence_history(case_round_one(verdicts), InfluenceRule(mode="accept"))[1]
    # a = (0/2, 0/2, 3/4, 0/1, 1/1): agent 1's verdict on critic 1 is missing (unknown, not accepted).
    assert rho1 == pytest.approx([0.12, 0.12, 0.12 + 0.4 * 0.75, 0.12, 0.12 + 0.4])


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 7),
    data=st.data(),
)
def test_scores_stay_in_unit_interval(n: int, data: st.DataObject) -> None:
    answers = data.draw(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=n, max_size=n))
    conf = data.draw(st.lists(st.integers(1, 5), min_size=n, max_size=n))
    rho = np.array(data.draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    k = data.draw(st.integers(1, n - 1))
    taus = data.draw(st.tuples(st.integers(1, 5), st.integers(1, 5), st.integers(1, 5)))
    router = PearRouter(k=k, mc_permutations=16, candidates=data.draw(st.sampled_from(["relabel", "fresh"])))
    state = state_of((tuple(answers), tuple(conf)), seed=data.draw(st.integers(0, 2**31 - 1)))
    pool = router.pool(state, np.random.default_rng(data.draw(st.integers(0, 1000))))
    for term in score_terms(answers, conf, rho, pool.src, pool.tgt, *taus):
        assert np.all((term >= 0) & (term <= 1))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 8), k=st.integers(1, 9), seed=st.integers(0, 10_000), fresh=st.booleans())
def test_routed_graphs_have_in_degree_k_and_no_self_loops(n: int, k: int, seed: int, fresh: bool) -> None:
    router = PearRouter(
        k=k, mc_permutations=12, candidates="fresh" if fresh else "relabel", selection_temperature=0.3
    )
    rng = np.random.default_rng(seed)
    answers = tuple(str(x) for x in rng.integers(0, 3, n))
    state = state_of((answers, tuple(int(c) for c in rng.integers(1, 6, n))), seed=seed)
    graph = route_now(router, state, rng).graph  # Graph itself rejects self-loops and out-of-range ends
    assert all(graph.in_degree(t) == min(k, n - 1) for t in range(n))
    assert len(graph.edges) == n * min(k, n - 1)


def test_influence_stays_in_unit_interval_over_many_rounds() -> None:
    rng = np.random.default_rng(5)
    rounds = [(tuple(str(x) for x in rng.integers(0, 2, 6)), (3,) * 6) for _ in range(8)]
    graphs = [Graph(6, [(int(s), t) for t in range(6) for s in rng.choice([o for o in range(6) if o != t], 2, replace=False)]) for _ in range(7)]  # fmt: skip
    for rho in influence_history(state_of(*rounds, graphs=graphs), InfluenceRule(beta=0.2)):
        assert np.all((rho >= 0) & (rho <= 1))


def test_base_graph_is_drawn_once_per_episode() -> None:
    router = PearRouter(mc_permutations=5)
    first = state_of((("a", "b", "c", "d", "e"), (1, 2, 3, 4, 5)), seed=77)
    later = state_of((("a",) * 5, (3,) * 5), (("b",) * 5, (5,) * 5), graphs=[CASE_GRAPH], seed=77)
    base = [router.pool(s, np.random.default_rng(r)).graph(0) for s, r in ((first, 1), (later, 2))]
    assert base[0] == base[1]  # candidate 0 is the base: the same whatever the round and round rng
    episodes = [state_of((("a",) * 5, (3,) * 5), seed=s) for s in range(20)]
    assert len({router.pool(s, np.random.default_rng(0)).graph(0) for s in episodes}) > 1  # per episode
    # Every relabel candidate has the base's out-degree multiset.
    pool = router.pool(first, np.random.default_rng(3))
    degrees = lambda g: sorted(g.out_degree(i) for i in range(5))  # noqa: E731
    assert all(degrees(pool.graph(j)) == degrees(base[0]) for j in range(len(pool)))


def test_zero_temperature_takes_the_best_candidate_and_breaks_ties_by_rng() -> None:
    router = PearRouter(selection_temperature=0.0, mc_permutations=50)
    state = state_of((CASE_ANSWERS, CASE_CONF), seed=3)
    pool = router.pool(state, np.random.default_rng(1))
    scores = router.scores(state, pool)
    for seed in range(5):
        assert scores[router.choose(state, pool, np.random.default_rng(seed))] == scores.max()
    flat = state_of((("x",) * 5, (3,) * 5), seed=3)  # T = L = I-differences = 0: every candidate ties
    picks = {router.choose(flat, pool, np.random.default_rng(s)) for s in range(30)}
    assert len(picks) > 1


def test_softmax_prefers_high_scores_and_uniform_control_ignores_the_state() -> None:
    state = state_of((CASE_ANSWERS, CASE_CONF), seed=3)
    sharp, router = PearRouter(selection_temperature=0.01), PearRouter(selection_temperature=0.7)
    pool = router.pool(state, np.random.default_rng(1))
    scores = router.scores(state, pool)
    picks = [sharp.choose(state, pool, np.random.default_rng(s)) for s in range(40)]
    assert np.mean([scores[p] for p in picks]) > np.mean(scores) + 0.5 * (scores.max() - np.mean(scores))
    uniform = PearRouter(alpha_t=0, alpha_i=0, alpha_l=0)
    other = state_of((("q",) * 5, (1,) * 5), seed=3)
    assert [uniform.choose(state, pool, np.random.default_rng(s)) for s in range(10)] == [
        uniform.choose(other, pool, np.random.default_rng(s)) for s in range(10)
    ]


def test_ablation_switches_equal_zero_alphas() -> None:
    state = state_of((CASE_ANSWERS, CASE_CONF), seed=9)
    for switch, alpha in (("use_t", "alpha_t"), ("use_i", "alpha_i"), ("use_l", "alpha_l")):
        off, zero = PearRouter(**{switch: False}), PearRouter(**{alpha: 0.0})
        pool = off.pool(state, np.random.default_rng(4))
        assert np.array_equal(off.scores(state, pool), zero.scores(state, pool))
        assert (
            route_now(off, state, np.random.default_rng(4)).graph
            == route_now(zero, state, np.random.default_rng(4)).graph
        )


def test_method_args_and_validation() -> None:
    method = build_method("pear", {"k": 3, "use_i": False})
    assert method.protocol == "critique_revise" and method.phases == ("critique", "revise")
    assert isinstance(method.router, PearRouter) and method.router.alphas == (0.2, 0.0, 0.7)
    assert build_method("pear", {"protocol": "update"}).phases == ("update",)
    for bad in (
        {"influence": "vibes"},
        {"beta": 1.5},
        {"candidates": "all"},
        {"k": 0},
        {"selection_temperature": -1},
    ):
        with pytest.raises(ValueError):
            build_method("pear", bad)
    with pytest.raises(ValueError, match="critique_revise"):
        build_method("pear", {"influence": "accept", "protocol": "update"})
    with pytest.raises(ValueError, match="did you mean"):
        build_method("pear", {"alpha_T": 0.1})


def test_adopt_missing_counts_a_missing_answer_kept_as_adoption_only_when_asked() -> None:
    # round 0: agent 0 has no answer, agent 1 says "7"; round 1 (0 -> 1): agent 1 loses its answer too
    state = state_of(((None, "7"), (1, 3)), ((None, None), (1, 1)), graphs=[Graph(2, [(0, 1)])])
    ours = influence_history(state, InfluenceRule(beta=0.5))[-1]
    code = influence_history(state, InfluenceRule(beta=0.5, adopt_missing=True))[-1]
    assert ours.tolist() == [0.25, 0.25]  # beta * 1/2: no adoption
    assert code.tolist() == [0.75, 0.25]  # beta * 1/2 + (1 - beta) * 1: "None adopted None"


def test_pear_decisions_record_the_choice_and_the_rule() -> None:
    router = PearRouter(mc_permutations=6, beta=0.4, adopt_missing=True)
    state = state_of((CASE_ANSWERS, CASE_CONF), seed=3)
    decision = route_now(router, state, np.random.default_rng(1))
    rec = decision.record
    assert rec["influence"] == {"beta": 0.4, "mode": "adoption", "rho_init": "uniform", "adopt_missing": True}
    pool = router.pool(state, np.random.default_rng(1))
    assert pool.graph(rec["candidate"]) == decision.graph and decision.active is None
    assert rec["S"] == pytest.approx(0.2 * rec["T"] - 0.7 * rec["I"] - 0.7 * rec["L"])
