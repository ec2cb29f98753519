"""PPO's arithmetic by hand (`sweep.train.ppo.ppo_update`): the clipped objective for both signs of
the advantage, advantages normalised over the rounds where the policy could act, the value loss over
every round, the entropy bonus over acting rounds; and, through real episodes, the `acted` flag once
the budget is spent and the rollout's log-probabilities equal to the update's (first ratio 1).

The hand-made batches go through a probe network whose log-probability, entropy and value of row i
are the parameters `logp[i]`, `ent[i]`, `value[i]`: after one update with SGD at lr 0, `.grad` of each
is the loss's derivative for that row, which the tests compare with the hand computation."""

from __future__ import annotations

import asyncio
import dataclasses
import math
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
import torch
from torch import nn

from actors.registry import build_backend
from data.grading.graders import NumericGrader
from data.types import Sample
from debate.decision import Decision
from debate.episode import Agent, run_episode
from debate.graph import Graph
from debate.methods import build_method
from debate.policies.actor_critic import ActorCritic, PolicyArch, build
from debate.policies.controller import Controller
from debate.rewards import RewardWeights
from debate.routers.rumad import PolicyRouter, RumadRouter, decide
from debate.state import DebateState, View
from debate.trajectory import EpisodeResult
from sweep.train.config import TrainSetup
from sweep.train.ppo import ppo_update
from sweep.train.ppo_config import PPOConfig
from sweep.train.rollouts import Batch, collect

CLIP = 0.2


class Probe(nn.Module):
    """Row i's log-probability, entropy and value are parameters (row ids ride in `glob[:, 0]`)."""

    def __init__(self, logp: list[float], ent: list[float], value: list[float]) -> None:
        super().__init__()
        self.logp = nn.Parameter(torch.tensor(logp))
        self.ent = nn.Parameter(torch.tensor(ent))
        self.value = nn.Parameter(torch.tensor(value))

    def evaluate(
        self,
        agents: torch.Tensor,
        pairs: torch.Tensor,
        glob: torch.Tensor,
        actions: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        rows = glob[:, 0].long()
        return self.logp[rows], self.ent[rows], self.value[rows]


def setup_of(**ppo: Any) -> TrainSetup:
    """What `ppo_update` reads of a setup: one epoch, one minibatch, no gradient clipping."""
    cfg = PPOConfig(epochs=1, minibatches=1, clip=CLIP, max_grad_norm=1e6, **ppo)
    return cast(TrainSetup, SimpleNamespace(section={"ppo": cfg}.get))


def one_step_batch(rewards: list[float], values: list[float], acted: list[bool]) -> Batch:
    """Every row its own one-round episode, so each advantage is reward - value (no bootstrap)."""
    size = len(rewards)
    empty = torch.zeros(size, 1, 1)
    return Batch(
        agents=empty,
        pairs=empty,
        glob=torch.arange(size, dtype=torch.float32)[:, None],  # the probe's row ids
        actions=torch.zeros(size, 1),
        logp=torch.zeros(size),  # old log-probs 0: ratio = exp(probe.logp)
        values=torch.tensor(values),
        rewards=np.asarray(rewards),
        acted=torch.tensor(acted),
        ends=np.ones(size, dtype=bool),
    )


def update(probe: Probe, batch: Batch, **ppo: Any) -> dict[str, float]:
    # lr 0: the gradients stay readable and nothing moves
    optimizer = torch.optim.SGD(probe.parameters(), lr=0.0)
    return ppo_update(cast(ActorCritic, probe), optimizer, batch, setup_of(**ppo), np.random.default_rng(0))


def grad(p: nn.Parameter) -> np.ndarray:
    assert p.grad is not None
    return p.grad.numpy().astype(np.float64)


# Rows 0-3 acted, advantages +1, -1, +1, -1 (values 0.5); rows 4-5 did not act and carry wild
# advantages and ratios. Old log-probs are 0, so ratio = exp(probe.logp).
RATIOS = [1.5, 0.5, 0.5, 1.5, 3.0, 0.2]
REWARDS = [1.5, -0.5, 1.5, -0.5, 100.0, -300.0]
ACTED = [True, True, True, True, False, False]


def clipped_case(**ppo: Any) -> tuple[Probe, dict[str, float]]:
    entropies, values = [1.0, 2.0, 3.0, 4.0, 50.0, 60.0], [1.5, 0.5, 0.5, -0.5, 100.0, -299.0]
    probe = Probe([math.log(r) for r in RATIOS], entropies, values)
    out = update(probe, one_step_batch(REWARDS, [0.5] * 6, ACTED), norm_adv=False, **ppo)
    return probe, out


def test_a_ratio_outside_the_clip_range_gives_no_gradient_for_either_sign_of_the_advantage() -> None:
    probe, out = clipped_case(value_coef=0.0, entropy_coef=0.0)
    # per acting row: max(-A r, -A clip(r, 0.8, 1.2))
    #   A=+1 r=1.5: max(-1.5, -1.2) = -1.2 clipped   A=-1 r=0.5: max(0.5, 0.8) = 0.8 clipped
    #   A=+1 r=0.5: max(-0.5, -0.8) = -0.5           A=-1 r=1.5: max(1.5, 1.2) = 1.5
    assert out["policy_loss"] == pytest.approx((-1.2 + 0.8 - 0.5 + 1.5) / 4, rel=1e-6)
    # d/dlogp of -A r / 4 is -A r / 4 where unclipped; clipped rows and rows that did not act: 0
    np.testing.assert_allclose(grad(probe.logp), [0.0, 0.0, -0.5 / 4, 1.5 / 4, 0.0, 0.0], atol=1e-7)
    assert out["clip_frac"] == 1.0  # every acting ratio is 0.5 away from 1
    # approx-KL over acting rows: mean((r - 1) - log r) = (ln 2 - ln 1.5) / 2
    assert out["approx_kl"] == pytest.approx(math.log(4 / 3) / 2, rel=1e-6)


def test_the_value_loss_covers_every_round_and_the_entropy_bonus_the_acting_ones() -> None:
    probe, out = clipped_case(value_coef=0.5, entropy_coef=0.1)
    # returns = advantages + values = the rewards; value - return per row: 0, 1, -1, 0, 0, 1
    assert out["value_loss"] == pytest.approx(0.5 * (0 + 1 + 1 + 0 + 0 + 1) / 6, rel=1e-6)
    # d(0.5 * 0.5 * mean((v - R)^2))/dv_i = 0.5 * (v_i - R_i) / 6, a row that did not act included
    np.testing.assert_allclose(grad(probe.value), np.array([0, 1, -1, 0, 0, 1]) * 0.5 / 6, atol=1e-7)
    # -0.1 * mean(entropy over the 4 acting rows): -0.1 / 4 for each of them, 0 for the others
    np.testing.assert_allclose(grad(probe.ent), [-0.025] * 4 + [0.0, 0.0], atol=1e-7)
    # the coefficients leave the policy term alone
    np.testing.assert_allclose(grad(probe.logp), [0.0, 0.0, -0.5 / 4, 1.5 / 4, 0.0, 0.0], atol=1e-7)


def test_advantages_are_normalised_over_the_rounds_where_the_policy_could_act() -> None:
    # acting rows: advantages 1, 2, 3, 6 (values 0), ratios inside the clip range; the rows that
    # could not act carry advantages 100 and -250, which must not move the mean or the std
    ratios = [1.1, 0.9, 1.05, 0.95, 4.0, 4.0]
    probe = Probe([math.log(r) for r in ratios], [0.0] * 6, [0.0] * 6)
    out = update(probe, one_step_batch([1.0, 2.0, 3.0, 6.0, 100.0, -250.0], [0.0] * 6, ACTED), norm_adv=True)
    # mean 3, std (n - 1) sqrt((4 + 1 + 0 + 9) / 3)
    normed = np.array([-2.0, -1.0, 0.0, 3.0]) / math.sqrt(14 / 3)
    terms = -normed * np.array(ratios[:4])
    assert out["policy_loss"] == pytest.approx(terms.sum() / 4, rel=1e-5)
    np.testing.assert_allclose(grad(probe.logp), [*(terms / 4), 0.0, 0.0], rtol=1e-5, atol=1e-7)


def test_without_normalisation_the_advantages_are_the_raw_ones() -> None:
    ratios = [1.1, 0.9, 1.05, 0.95, 4.0, 4.0]
    probe = Probe([math.log(r) for r in ratios], [0.0] * 6, [0.0] * 6)
    update(probe, one_step_batch([1.0, 2.0, 3.0, 6.0, 100.0, -250.0], [0.0] * 6, ACTED), norm_adv=False)
    want = -np.array([1.0, 2.0, 3.0, 6.0]) * np.array(ratios[:4]) / 4
    np.testing.assert_allclose(grad(probe.logp), [*want, 0.0, 0.0], rtol=1e-5, atol=1e-7)


# --- through real episodes: the rollout's records as `collect` reads them ---

SAMPLE = Sample(id="q1", question="What is 6 * 7?", gold="42", kind="numeric")
BUDGET, ROUNDS = 2, 3


def team(n: int = 4) -> list[Agent]:
    skills = np.linspace(0.8, 0.3, n)
    return [
        Agent(f"s{i}", build_backend("simulated", f"s{i}", {"skill": float(s)})) for i, s in enumerate(skills)
    ]


@pytest.fixture(scope="module")
def rollouts() -> tuple[ActorCritic, RumadRouter, list[EpisodeResult]]:
    """Two sampled episodes where everyone qualifies (theta_act 0): round 1 spends the budget of 2."""
    module = build(PolicyArch(hidden=8, horizon=ROUNDS), 3)
    params = RumadRouter(budget=BUDGET, theta_act=0.0, theta_vis=0.5)
    method = build_method("rumad", {"budget": BUDGET, "theta_act": 0.0, "theta_vis": 0.5})
    method = dataclasses.replace(method, router=PolicyRouter(params, Controller(module, "t"), sample=True))
    results = [
        asyncio.run(run_episode(method, team(), SAMPLE, NumericGrader(), seed, ROUNDS, "toy"))
        for seed in (1, 2)
    ]
    return module, params, results


def collect_setup(params: RumadRouter, **ppo: Any) -> TrainSetup:
    cfg = PPOConfig(epochs=1, minibatches=1, **ppo)
    setup = SimpleNamespace(
        rewards=RewardWeights(), method=SimpleNamespace(router=params), section={"ppo": cfg}.get
    )
    return cast(TrainSetup, setup)


def test_the_acted_flag_is_false_once_the_budget_is_spent(rollouts: Any) -> None:
    _, params, results = rollouts
    for res in results:
        records = [rec.decision.record for rec in res.trajectory[1:]]
        assert [r["budget_left"] for r in records] == [2, 0, 0]
        assert [r["acted"] for r in records] == [True, False, False]
    batch = collect(collect_setup(params), results)
    assert batch.acted.tolist() == [True, False, False] * 2


class Constant:
    """A controller proposing one fixed weight matrix (the acted flag depends on the budget only)."""

    digest = "constant"

    class arch:  # noqa: N801 - mimics Controller.arch
        horizon = 6
        head = "gaussian"

    def act(self, obs: Any, rng: np.random.Generator, sample: bool) -> tuple[np.ndarray, dict[str, Any]]:
        return np.full((3, 3), 0.9), {"action": [], "logp": 0.0, "value": 0.0, "entropy": 0.0}


def state_after(spoken: list[tuple[int, ...]]) -> DebateState:
    """A 3-agent debate whose round r >= 1 had `spoken[r - 1]` speak."""
    state = DebateState(n=3)
    for r in range(len(spoken) + 1):
        views = tuple(View("1", 3, "") for _ in range(3))
        state = state.advance(views, (), Decision(Graph(3), active=frozenset(spoken[r - 1])) if r else None)
    return state


@pytest.mark.parametrize(
    ("budget", "spoken", "left", "acted"),
    [(3, [], 3, True), (3, [(0, 1)], 1, True), (3, [(0, 1), (2,)], 0, False), (2, [(0, 1), ()], 0, False)],
)
def test_the_acted_flag_follows_the_budget_left(
    budget: int, spoken: list[tuple[int, ...]], left: int, acted: bool
) -> None:
    decision = decide(
        RumadRouter(budget=budget), Constant(), state_after(spoken), np.random.default_rng(0), sample=True
    )
    assert decision.record["budget_left"] == left and decision.record["acted"] is acted
    assert decision.active is not None and len(decision.active) == min(
        3, left
    )  # 0.9 >= theta_act: everyone qualifies, the budget decides
    free = decide(
        RumadRouter(budget=budget, activation=False),
        Constant(),
        state_after(spoken),
        np.random.default_rng(0),
        True,
    )
    assert free.record["budget_left"] is None and free.record["acted"] is True  # no budget: always acts


def test_the_first_minibatch_ratio_is_exactly_one(rollouts: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The log-probabilities recorded at rollout are those the update recomputes before any step."""
    module, params, results = rollouts
    batch = collect(collect_setup(params), results)
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []
    real = module.evaluate

    def spy(
        agents: torch.Tensor, pairs: torch.Tensor, glob: torch.Tensor, actions: torch.Tensor, mask: Any = None
    ) -> Any:
        out = real(agents, pairs, glob, actions, mask)
        seen.append((actions.clone(), out[0].detach().clone()))
        return out

    monkeypatch.setattr(module, "evaluate", spy)
    before = {k: v.clone() for k, v in module.state_dict().items()}
    try:
        setup = collect_setup(params)
        losses = ppo_update(
            module, torch.optim.SGD(module.parameters(), lr=0.0), batch, setup, np.random.default_rng(0)
        )
    finally:
        module.load_state_dict(before)
    actions, logp = seen[0]
    rows = [int(torch.nonzero((batch.actions == a).all(-1))[0, 0]) for a in actions]
    assert sorted(rows) == list(range(len(batch.logp)))  # one minibatch: every step, each once
    ratio = torch.exp(logp - batch.logp[rows])
    assert torch.equal(ratio, torch.ones_like(ratio)), (ratio - 1).abs().max()
    assert losses["approx_kl"] == 0.0 and losses["clip_frac"] == 0.0
