"""PEAR is agent-equivariant (Theorem 1): relabel the agents by sigma, relabel the router's draws the same
way, and the chosen graph is the relabeled graph, every agent's trajectory moves with it, and the final
answer is unchanged. A seat-biased router fails the same check, so the check can fail."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.base import ChatRequest, Completion
from data.grading.graders import NumericGrader
from data.types import Sample
from debate.decision import Decision
from debate.episode import Agent, EpisodeResult, run_episode
from debate.methods import build_method
from debate.routers.pear import PearRouter, Pool
from debate.state import DebateState, Turn, View

N = 6
SAMPLE = Sample(id="eq", question="What is 6 * 7?", gold="42", kind="numeric")
# Per identity: round-0 answer and confidence, and the confidence a critic needs to sway it.
START = [("7", 2), ("42", 5), ("7", 3), ("9", 1), ("42", 4), ("9", 4)]
SWAY = [4, 6, 3, 4, 5, 4]
_CRITIC = re.compile(r"Critique from Agent (\d+) \(its answer: ([^,]+), confidence (\d)\)")


class Population:
    """A deterministic team whose behaviour depends on each seat's identity, never on the seat index:
    `identity[seat]` names who sits there. Order-free: only multisets of what it sees matter."""

    def __init__(self, identity: Sequence[int]) -> None:
        self.identity = list(identity)

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return [Completion(self._reply(r), 50, 10, model="pop") for r in requests]

    def _reply(self, req: ChatRequest) -> str:
        h, u = req.hints, self.identity[req.hints["agent"]]
        if h["phase"] == "initial":
            answer, conf = START[u]
            return json.dumps({"reasoning": "r", "answer": answer, "confidence": conf})
        if h["phase"] == "critique":
            return json.dumps({"critiques": [f"you answer {a}" for a, _ in h["peers"]]})
        (own, own_conf), peers = h["own"], [tuple(p) for p in h["peers"]]
        best = max(peers, key=lambda p: (p[1], p[0]), default=None)
        answer, conf = own, own_conf
        if best is not None and best[0] != own and best[1] >= SWAY[u] and best[1] > own_conf:
            answer, conf = best[0], best[1] - 1
        elif any(a == own for a, _ in peers):
            conf = min(5, own_conf + 1)
        critics = _CRITIC.findall(req.messages[-1].content)
        response = {
            i: {"decision": "ACCEPT" if a == answer else "REJECT", "reason": "r"} for i, a, _ in critics
        }
        return json.dumps(
            {"reasoning": "r", "answer": answer, "confidence": conf, "critique_response": response}
        )


@dataclass(frozen=True)
class Conjugated:
    """Runs `inner` with its random draws relabeled by sigma: the pool PEAR would draw, every candidate
    renamed, then `inner`'s own choice among them on the (relabeled) state."""

    inner: PearRouter | SeatBiased
    sigma: tuple[int, ...]

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        pool = self.inner.pool(state, rng).relabel(self.sigma)
        return Decision(pool.graph(self.inner.choose(state, pool, rng)))


@dataclass(frozen=True)
class SeatBiased:
    """Not equivariant: PEAR's score plus a bonus for candidates where seat 0 critiques a lot."""

    inner: PearRouter

    def pool(self, state: DebateState, rng: np.random.Generator) -> Pool:
        return self.inner.pool(state, rng)

    def choose(self, state: DebateState, pool: Pool, rng: np.random.Generator) -> int:
        rng.random()  # the same draws as PEAR's choice, so only the bias differs
        return int(np.argmax(self.inner.scores(state, pool) + (pool.src == 0).sum(axis=1)))

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        pool = self.pool(state, rng)
        return Decision(pool.graph(self.choose(state, pool, rng)))


def episode(router: object, identity: Sequence[int], args: dict, seed: int) -> EpisodeResult:
    method = replace(build_method("pear", args), router=router)  # same spec: same seeds for both runs
    team = [Agent("pop", Population(identity))]
    return asyncio.run(run_episode(method, team * N, SAMPLE, NumericGrader(), seed, 3, "eq"))


def relabeled(a: EpisodeResult, b: EpisodeResult, sigma: Sequence[int]) -> bool:
    """Whether run b is run a with agent i renamed sigma[i]: graphs, views and the final answer."""
    for r in range(1, a.state.round):
        graph = a.state.graphs[r]
        if graph is None or b.state.graphs[r] != graph.relabel(sigma):
            return False
    views_match = all(
        b.state.views[r][sigma[i]] == a.state.views[r][i] for r in range(a.state.round) for i in range(N)
    )
    return views_match and a.final_answer == b.final_answer


def check(
    make: Callable[[PearRouter], PearRouter | SeatBiased], args: dict, sigma: tuple[int, ...], seed: int
) -> bool:
    """Run a with `make`'s router, run b with the agents relabeled and the router's draws conjugated."""
    router = make(PearRouter(**{k: v for k, v in args.items() if k != "protocol"}))
    identity_b = [0] * N
    for i, s in enumerate(sigma):
        identity_b[s] = i  # in run b, seat sigma(i) holds identity i
    a = episode(router, range(N), args, seed)
    b = episode(Conjugated(router, sigma), identity_b, args, seed)
    return relabeled(a, b, sigma)


def plain(router: PearRouter) -> PearRouter:
    return router


ARGS = [
    {"mc_permutations": 24},
    {"mc_permutations": 24, "selection_temperature": 0.0, "influence": "accept"},
    {"mc_permutations": 16, "candidates": "fresh", "k": 3},
    {"mc_permutations": 24, "protocol": "update", "alpha_t": 1.0},
]


@pytest.mark.parametrize("args", ARGS)
@settings(max_examples=6, deadline=None)
@given(perm=st.permutations(list(range(N))), seed=st.integers(0, 10_000))
def test_relabeling_agents_relabels_graphs_and_keeps_the_answer(
    args: dict, perm: list[int], seed: int
) -> None:
    assert check(plain, args, tuple(perm), seed)


def test_the_check_catches_a_seat_biased_router() -> None:
    sigma = (1, 2, 3, 4, 5, 0)  # seat 0's identity moves: a bias toward seat 0 now favours someone else
    caught = [not check(SeatBiased, {"mc_permutations": 24}, sigma, seed) for seed in range(4)]
    assert all(caught)
    assert check(plain, {"mc_permutations": 24}, sigma, 0)  # same setting, equivariant router: passes


def test_the_population_is_sensitive_to_routing() -> None:
    """Routing changes outcomes here, so an unchanged final answer is evidence, not a given."""
    finals = set()
    for seed in range(12):
        res = episode(
            PearRouter(mc_permutations=24, selection_temperature=5.0), range(N), {"mc_permutations": 24}, seed
        )
        finals.add(tuple(v.answer for v in res.state.views[-1]))
    assert len(finals) > 1


def test_population_verdicts_are_read() -> None:
    res = episode(PearRouter(mc_permutations=8), range(N), {"mc_permutations": 8}, 1)
    revisions: list[Turn] = [t for t in res.state.turns[1] if t.phase == "revise"]
    assert all(set(t.extra["verdicts"]) == set(t.sources) for t in revisions)
    assert isinstance(res.state.views[1][0], View)


# -- the score itself, exactly: S(sigma E | sigma s) = S(E | s) for every candidate ------------------
def relabel_state(state: DebateState, sigma: Sequence[int]) -> DebateState:
    """The state with agent i renamed sigma[i]: views, graphs, turns, sources and verdicts."""
    inverse = np.argsort(sigma)

    def turn(t: Turn) -> Turn:
        extra = dict(t.extra)
        if "verdicts" in extra:
            extra["verdicts"] = {sigma[s]: v for s, v in extra["verdicts"].items()}
        return replace(
            t, agent=sigma[t.agent], sources=tuple(sorted(sigma[s] for s in t.sources)), extra=extra
        )

    out = DebateState(n=state.n, routing_seed=state.routing_seed)
    for r in range(state.round):
        views = tuple(state.views[r][int(inverse[j])] for j in range(state.n))
        graph = state.graphs[r]
        out = out.advance(views, tuple(turn(t) for t in state.turns[r]), graph and graph.relabel(sigma))
    return out


@settings(max_examples=25, deadline=None)
@given(
    perm=st.permutations(list(range(N))),
    seed=st.integers(0, 10_000),
    mode=st.sampled_from(["adoption", "accept"]),
)
def test_scores_are_invariant_under_relabeling(perm: list[int], seed: int, mode: str) -> None:
    router = PearRouter(mc_permutations=32, influence=mode)
    state = episode(router, range(N), {"mc_permutations": 32, "influence": mode}, seed).state
    moved = relabel_state(state, perm)
    pool = router.pool(state, np.random.default_rng(seed))
    assert np.array_equal(router.scores(moved, pool.relabel(perm)), router.scores(state, pool))


def test_the_score_check_catches_a_label_dependent_term(monkeypatch: pytest.MonkeyPatch) -> None:
    import debate.routers.pear as pear

    honest = pear.score_terms

    def labelled(*args, **kwargs):  # type: ignore[no-untyped-def]
        t, i, low = honest(*args, **kwargs)
        return t + 0.01 * (np.atleast_2d(args[3]) == 1).sum(axis=1), i, low  # favours agent 1 as a source

    monkeypatch.setattr(pear, "score_terms", labelled)
    router = PearRouter(mc_permutations=32)
    state = episode(router, range(N), {"mc_permutations": 32}, 3).state
    pool, sigma = router.pool(state, np.random.default_rng(3)), (1, 2, 3, 4, 5, 0)
    moved = relabel_state(state, sigma)
    assert not np.array_equal(router.scores(moved, pool.relabel(sigma)), router.scores(state, pool))
