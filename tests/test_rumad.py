"""RUMAD's router: the content-agnostic observation (hand-computed, equivariant), the dual threshold
and the budget (hand-computed, and never exceeded: property tests over weights and whole episodes),
the actor-critic's heads, checkpoints (round trip, corruption, content hashes in episode ids), and
evaluation that repeats itself exactly."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.registry import build_backend
from data.grading.graders import NumericGrader
from data.types import Sample
from debate.decision import Decision
from debate.episode import Agent, run_episode
from debate.graph import Graph
from debate.methods import build_method
from debate.policies import checkpoint as ckpt
from debate.policies.observation import Observation, observe
from debate.routers.rumad import PolicyRouter, RumadRouter, dual_threshold
from debate.state import DebateState, View

SAMPLE = Sample(id="q1", question="What is 6 * 7?", gold="42", kind="numeric")


def state_of(*rounds: tuple[tuple[str | None, ...], tuple[int, ...]], active=()) -> DebateState:
    """A state from (answers, confidences) per round; active[r-1]: who spoke in round r >= 1."""
    state = DebateState(n=len(rounds[0][0]))
    for r, (answers, conf) in enumerate(rounds):
        views = tuple(View(a, c, "") for a, c in zip(answers, conf, strict=True))
        decision = Decision(Graph(state.n), active=frozenset(active[r - 1])) if r else None
        state = state.advance(views, (), decision)
    return state


def team(n: int = 6) -> list[Agent]:
    skills = np.linspace(0.8, 0.3, n)
    return [
        Agent(f"s{i}", build_backend("simulated", f"s{i}", {"skill": float(s)})) for i, s in enumerate(skills)
    ]


class FixedWeights:
    """A controller that always proposes the same weight matrix."""

    digest = "fixed"

    class arch:  # noqa: N801 - mimics Controller.arch
        horizon = 6
        head = "gaussian"

    def __init__(self, w: np.ndarray) -> None:
        self.w = w

    def act(self, obs: Observation, rng: np.random.Generator, sample: bool) -> tuple[np.ndarray, dict]:
        return self.w, {"action": [], "logp": 0.0, "value": 0.0, "entropy": 0.0}


def test_observation_hand_computed() -> None:
    state = state_of(
        (("A", "A", "B", None), (5, 3, 2, 1)), (("A", "B", "B", None), (4, 3, 3, 1)), active=[{0, 2}]
    )
    obs = observe(state, budget=5, horizon=4)
    expect = np.array(
        [  # conf, holds, cluster, vote, changed, act rate, spoke, cluster conf, conf change
            [0.75, 1, 0.25, 0, 0, 1, 1, 0.75, -0.25],
            [0.50, 1, 0.50, 1, 1, 0, 0, 0.50, 0.0],
            [0.50, 1, 0.50, 1, 0, 1, 1, 0.50, 0.25],
            [0.00, 0, 0.00, 0, 0, 0, 0, 0.00, 0.0],
        ]
    )
    np.testing.assert_allclose(obs.agents, expect, atol=1e-6)
    assert obs.pairs[1, 2] == obs.pairs[2, 1] == 1 and obs.pairs.sum() == 2
    h = -(1 / 3 * np.log2(1 / 3) + 2 / 3 * np.log2(2 / 3)) / 2
    np.testing.assert_allclose(obs.glob, [2 / 4, 3 / 5, h, 0.5, 0.5, 0.4375], atol=1e-6)
    assert observe(state, budget=None, horizon=4).glob[1] == 1.0  # no budget: nothing is used up


def test_observation_is_equivariant() -> None:
    rounds = ((("3", "4", "3", "5", None), (5, 2, 4, 1, 1)), (("3", "3", "3", "5", "4"), (5, 3, 4, 2, 2)))
    state = state_of(*rounds, active=[{1, 4}])
    perm = [2, 0, 4, 1, 3]  # agent i becomes perm[i]
    inv = np.argsort(perm)
    moved = state_of(
        *[(tuple(a[j] for j in inv), tuple(c[j] for j in inv)) for a, c in rounds],
        active=[{perm[1], perm[4]}],
    )
    a, b = observe(state, 6, 6), observe(moved, 6, 6)
    np.testing.assert_allclose(b.agents, a.agents[inv], atol=1e-6)
    np.testing.assert_allclose(b.pairs, a.pairs[np.ix_(inv, inv)], atol=1e-6)
    np.testing.assert_allclose(b.glob, a.glob, atol=1e-6)


W = np.array([[0.0, 0.9, 0.2], [0.6, 0.0, 0.3], [0.1, 0.7, 0.0]])  # w[s, t]: t sees s


def test_dual_threshold_hand_computed() -> None:
    active, visible = dual_threshold(W, 0.5, 0.5, None)  # strongest incoming: 0.6, 0.9, 0.3
    assert active == {0, 1} and visible == {(1, 0): 0.6, (0, 1): 0.9, (2, 1): 0.7}
    active, visible = dual_threshold(W, 0.5, 0.8, 1)  # one activation left: the strongest wins
    assert active == {1} and visible == {(0, 1): 0.9}
    assert dual_threshold(W, 0.5, 0.5, 0) == (frozenset(), {})
    tie = np.array([[0.0, 0.8, 0.8], [0.8, 0.0, 0.8], [0.8, 0.8, 0.0]])
    assert dual_threshold(tie, 0.5, 0.5, 2)[0] == {0, 1}  # ties: the lower index


@settings(max_examples=200, deadline=None)
@given(
    st.integers(2, 7).flatmap(
        lambda n: st.tuples(
            st.lists(st.floats(0, 1), min_size=n * n, max_size=n * n).map(lambda v: np.array(v).reshape(n, n)),
            st.floats(0, 1), st.floats(0, 1), st.one_of(st.none(), st.integers(0, 2 * n)),
        )
    )
)  # fmt: skip
def test_dual_threshold_invariants(case: tuple[np.ndarray, float, float, int | None]) -> None:
    w, theta_act, theta_vis, left = case
    np.fill_diagonal(w, 0.0)
    active, visible = dual_threshold(w, theta_act, theta_vis, left)
    n = w.shape[0]
    strongest = [max(w[s, t] for s in range(n) if s != t) for t in range(n)]
    qualified = {t for t in range(n) if strongest[t] >= theta_act}
    assert active <= qualified
    assert len(active) == (len(qualified) if left is None else min(left, len(qualified)))
    if active and left is not None:  # nobody left out is stronger than someone let in
        assert min(strongest[t] for t in active) >= max([strongest[t] for t in qualified - active] or [-1])
    assert all(
        t in active and s != t and w[s, t] >= theta_vis and v == w[s, t] for (s, t), v in visible.items()
    )
    assert len(visible) == sum(1 for t in active for s in range(n) if s != t and w[s, t] >= theta_vis)


@settings(max_examples=10, deadline=None)
@given(
    st.integers(0, 14),
    st.integers(0, 10_000),
    st.floats(0.2, 0.8),
    st.sampled_from(["gaussian", "beta", "bernoulli"]),
)
def test_the_budget_is_never_exceeded_in_an_episode(budget: int, seed: int, theta: float, head: str) -> None:
    from debate.policies.actor_critic import PolicyArch, build
    from debate.policies.controller import Controller

    params = RumadRouter(budget=budget, theta_act=theta, theta_vis=theta)
    net = Controller(build(PolicyArch(hidden=8, head=head), seed % 7), "test")
    method = build_method("rumad", {"budget": budget, "theta_act": theta, "theta_vis": theta})
    method = dataclasses.replace(method, router=PolicyRouter(params, net, sample=True))
    res = asyncio.run(run_episode(method, team(), SAMPLE, NumericGrader(), seed, 6, "toy"))
    used = sum(len(rec.active) for rec in res.trajectory[1:])
    assert used <= budget
    assert sum(1 for t in res.turns if t.round > 0) == used  # exactly the active agents made calls
    lefts = [rec.decision.record["budget_left"] for rec in res.trajectory[1:]]
    assert lefts[0] == budget and all(
        a - len(r.active) == b for a, b, r in zip(lefts, lefts[1:], res.trajectory[1:], strict=False)
    )


def test_without_activation_everyone_speaks_and_visibility_still_filters() -> None:
    w = np.full((4, 4), 0.3)
    w[0, 1] = w[2, 3] = 0.9
    params = RumadRouter(activation=False, theta_vis=0.5, budget=1)
    method = build_method("rumad", {"activation": False, "theta_vis": 0.5, "budget": 1})
    method = dataclasses.replace(method, router=PolicyRouter(params, FixedWeights(w), sample=False))
    res = asyncio.run(run_episode(method, team(4), SAMPLE, NumericGrader(), 0, 3, "toy"))
    for rec in res.trajectory[1:]:
        assert rec.active == (0, 1, 2, 3)  # the budget of 1 does not apply
        assert rec.decision.graph.edges == {(0, 1), (2, 3)} and rec.decision.record["budget_left"] is None


def test_untrained_policy_is_seeded_and_the_mean_draws_nothing() -> None:
    from debate.policies.controller import controller_for

    state = state_of((("1", "2", "1", "3"), (4, 2, 3, 1)))
    obs = observe(state, 12, 6)
    a0, _ = controller_for("", 0).act(obs, np.random.default_rng(1), sample=False)
    b0, _ = controller_for("", 0).act(obs, np.random.default_rng(2), sample=False)
    c0, _ = controller_for("", 1).act(obs, np.random.default_rng(1), sample=False)
    assert np.array_equal(a0, b0) and not np.array_equal(a0, c0)
    rng = np.random.default_rng(5)
    s1, rec = controller_for("", 0).act(obs, rng, sample=True)
    s2, _ = controller_for("", 0).act(obs, np.random.default_rng(5), sample=True)
    assert np.array_equal(s1, s2) and not np.array_equal(s1, a0)
    assert np.all(np.diag(s1) == 0) and np.all((s1 >= 0) & (s1 <= 1)) and np.isfinite(rec["logp"])


def save_policy(path: Path, seed: int, head: str = "gaussian") -> str:
    from debate.policies.actor_critic import PolicyArch, build, weights_of

    module = build(PolicyArch(hidden=16, head=head), seed)
    return ckpt.save_checkpoint(
        path, module.arch.to_dict(), weights_of(module), {"note": "test", "seed": seed}
    )


def test_checkpoint_round_trip_and_corruption(tmp_path: Path) -> None:
    from debate.policies.actor_critic import PolicyArch, build
    from debate.policies.controller import Controller, controller_for

    digest = save_policy(tmp_path / "p.npz", 3, "beta")
    loaded = ckpt.load(str(tmp_path / "p.npz"))
    assert loaded.digest == digest and loaded.arch["head"] == "beta" and loaded.provenance["seed"] == 3
    obs = observe(state_of((("1", "2", "1"), (4, 2, 3))), 12, 6)
    fresh = Controller(build(PolicyArch(hidden=16, head="beta"), 3), "x")
    assert np.array_equal(
        controller_for(str(tmp_path / "p.npz")).act(obs, None, False)[0], fresh.act(obs, None, False)[0]
    )  # type: ignore[arg-type]
    with np.load(tmp_path / "p.npz") as z:  # one weight changed, the stored hash kept
        arrays = {k: z[k].copy() for k in z.files}
    key = next(k for k in arrays if k.startswith("w."))
    arrays[key].flat[0] += 1.0
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ckpt.CheckpointError, match="corrupt"):
        ckpt.load(str(tmp_path / "bad.npz"))
    with pytest.raises(ValueError, match="not found"):
        build_method("rumad", {"checkpoint": str(tmp_path / "missing.npz")})
    with pytest.raises(ckpt.CheckpointError, match="no resolver"):
        ckpt.resolve("nosuchscheme:/x")


def test_episode_ids_hash_the_checkpoint_content_not_its_path(tmp_path: Path) -> None:
    save_policy(tmp_path / "a.npz", 1)
    save_policy(tmp_path / "b.npz", 2)
    shutil.copyfile(tmp_path / "a.npz", tmp_path / "a_copy.npz")
    ident = {
        p: build_method("rumad", {"checkpoint": str(tmp_path / p)}).spec.identity()
        for p in ("a.npz", "b.npz", "a_copy.npz")
    }
    assert ident["a.npz"] != ident["b.npz"]
    assert ident["a.npz"] == ident["a_copy.npz"] and ident["a.npz"]["args"]["checkpoint"].startswith("sha:")
    assert build_method("rumad").spec.identity()["args"]["checkpoint"] == ""


def test_a_checkpoint_evaluated_twice_gives_the_same_episodes(tmp_path: Path) -> None:
    save_policy(tmp_path / "p.npz", 4)
    method = build_method(
        "rumad", {"checkpoint": str(tmp_path / "p.npz"), "theta_act": 0.5, "prompt_style": "rumad"}
    )

    def run(seed: int) -> list[tuple]:
        res = asyncio.run(run_episode(method, team(), SAMPLE, NumericGrader(), seed, 4, "toy"))
        return [(t.round, t.agent, t.text, t.prompt_tokens) for t in res.turns] + [
            (rec.decision.graph.sorted_edges(), sorted(rec.active)) for rec in res.trajectory[1:]
        ]

    first = run(7)
    assert first == run(7)
    res = asyncio.run(run_episode(method, team(), SAMPLE, NumericGrader(), 7, 4, "toy"))
    assert {r.decision.record["mode"] for r in res.trajectory[1:]} == {"mean"}
