"""CPP's training arithmetic by hand: Table 1's rewards and appendix A's returns on a 2-agent,
2-round episode, as `sweep.train.pg.collect` lays them out (slots, agents, embeddings); one step of
`pg_update` (per-slot baseline, std scaling, entropy bonus, gradient clipping) on a hand-made batch;
and App. C's truncation caps at fractional quantiles (rounded up)."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
import torch
from torch import nn

from debate.cpp_reward import CppReward, order, returns
from debate.decision import Decision
from debate.graph import Graph
from debate.policies.fuseglu import PruningNet
from debate.policies.pruning import PruningArch
from debate.routers.cpp import CppRouter, truncation
from debate.state import DebateState
from debate.trajectory import EpisodeResult, RoundRecord
from sweep.train.config import TrainSetup
from sweep.train.pg import Actions, collect, pg_update
from sweep.train.pg_config import PGConfig
from sweep.train.pg_update import advantages

# --- truncation caps ---


def test_caps_round_fractional_quantiles_up() -> None:
    arch = PruningArch(3, hidden=4, output_lengths=((100, 200), (10, 20, 40), (5, 5)))
    # 0.234-quantiles (linear): 100 + 0.234 * 100 = 123.4; 10 + 0.468 * 10 = 14.68; 5
    assert arch.caps(0.234) == {0: 124, 1: 15, 2: 5}
    assert arch.caps(0.5) == {0: 150, 1: 20, 2: 5}  # whole quantiles stay as they are
    assert PruningArch(2, hidden=4, output_lengths=((0, 0), (0, 3))).caps(0.5) == {
        0: 1,
        1: 2,
    }  # never below 1


def test_caps_take_one_quantile_per_seat_when_given_a_sequence() -> None:
    arch = PruningArch(3, hidden=4, output_lengths=((100, 200), (10, 20, 40), (5, 5)))
    assert arch.caps((0.234, 0.5, 1.0)) == {0: 124, 1: 20, 2: 5}
    assert arch.caps([1.0, 0.0, 0.5]) == {0: 200, 1: 10, 2: 5}
    with pytest.raises(ValueError, match="2 truncation quantiles for 3 seats; give one per seat"):
        arch.caps((0.5, 0.5))


def test_the_router_caps_a_round_at_the_rounded_up_quantiles() -> None:
    arch = PruningArch(3, hidden=4, output_lengths=((100, 200), (10, 20, 40), (5, 5)))
    decision = truncation(
        CppRouter(truncate=0.234), SimpleNamespace(arch=arch), DebateState(n=3, rounds=2), 0
    )
    assert decision is not None and decision.max_tokens == {0: 124, 1: 15, 2: 5}


# --- rewards and returns of one episode, as collect lays them out ---

W = CppReward(k=0.2, a=1.0, round_scale=1.5, beta=0.8, gamma=0.5, prune_flip=0.5)
N = 2


def round_record(
    t: int, keep: list[list[int]], before: tuple[bool, ...], after: tuple[bool, ...]
) -> RoundRecord:
    """Round t's record; the embeddings (dim 1) name their action: query 100 t + 10 i + k,
    candidate 10 t + the candidate's index."""
    record = {
        "keep": [[[order(i, N)[k], bool(keep[i][k]), 0.5] for k in range(N)] for i in range(N)],
        "_queries": np.array([[[100 * t + 10 * i + k] for k in range(N)] for i in range(N)], np.float32),
        "_candidates": np.array(
            [[[10 * t + order(i, N)[k]] for k in range(N)] for i in range(N)], np.float32
        ),
        "_cues": np.array([[[int(k == 0), 0, 3, t + k] for k in range(N)] for i in range(N)]),
    }
    none = (None,) * N
    return RoundRecord(
        t, Decision(Graph(N), record=record), none, none, before, after, (), None, False, 0, 0, 0, 0.0
    )


def episode() -> EpisodeResult:
    start = RoundRecord(
        0, None, (None,) * N, ("1",) * N, (False,) * N, (True, False), (), None, False, 0, 0, 0, 0.0
    )
    # round 1: agent 0 right -> right (++), agent 1 wrong -> right (-+)
    r1 = round_record(1, [[1, 0], [1, 1]], (True, False), (True, True))
    # round 2: agent 0 right -> wrong (+-), agent 1 right -> right (++)
    r2 = round_record(2, [[0, 1], [1, 0]], (True, True), (False, True))
    return EpisodeResult(
        [], [None] * 3, [False, True, True], None, True, 0.0, DebateState(n=N), [start, r1, r2]
    )


# Table 1, a_1 = 1, a_2 = 1.5; order: (t, i, k) round-major, then agent, then position
#   t1 i0 ++: keep k a_1 = 0.2, prune a_1 = 1      t1 i1 -+: keep 2 a_1 = 2, keep 2
#   t2 i0 +-: prune -2 a_2 prune_flip = -1.5, keep -2 a_2 = -3
#   t2 i1 ++: keep k a_2 = 0.3, prune a_2 = 1.5
R = [0.2, 1.0, 2.0, 2.0, -1.5, -3.0, 0.3, 1.5]
g, b = W.gamma, W.beta
# appendix A: own later decisions this round (gamma**(k2 - k)); in round 2, every decision of each
# agent from round-1 author i's place in its order on (beta * gamma**k2):
#   author 0: agent 0 (order 0, 1) at k2 = 0, 1; agent 1 (order 1, 0) at k2 = 1
#   author 1: agent 0 at k2 = 1; agent 1 at k2 = 0, 1
FROM_0 = b * R[4] + b * g * R[5] + b * g * R[7]
FROM_1 = b * g * R[5] + b * R[6] + b * g * R[7]
G = [
    R[0] + g * R[1] + FROM_0,  # -1.1
    R[1] + FROM_0,  # -0.8
    R[2] + g * R[3] + FROM_1,  # 2.64
    R[3] + FROM_1,  # 1.64
    R[4] + g * R[5],  # -3
    R[5],
    R[6] + g * R[7],  # 1.05
    R[7],
]


def test_rewards_and_returns_by_hand() -> None:
    rewards, got = returns(episode().trajectory, W)
    np.testing.assert_allclose(rewards, R, atol=1e-12)
    np.testing.assert_allclose(got, G, atol=1e-12)
    np.testing.assert_allclose(G, [-1.1, -0.8, 2.64, 1.64, -3.0, -3.0, 1.05, 1.5], atol=1e-12)


def test_collect_lays_out_each_action_with_its_return_slot_and_embeddings() -> None:
    batch = collect([episode(), episode()], W)
    np.testing.assert_allclose(batch.returns.numpy(), G * 2, rtol=1e-6)
    assert batch.agents.tolist() == [0, 0, 1, 1, 0, 0, 1, 1] * 2
    assert batch.slots.tolist() == [0, 1, 0, 1, 2, 3, 2, 3] * 2  # (round, position): the baseline's group
    assert batch.kept.tolist() == [1, 0, 1, 1, 0, 1, 1, 0] * 2
    assert batch.queries[:8, 0].tolist() == [100, 101, 110, 111, 200, 201, 210, 211]
    assert batch.candidates[:8, 0].tolist() == [10, 11, 11, 10, 20, 21, 21, 20]
    assert batch.cues is not None and batch.cues[:8, 3].tolist() == [1, 2, 1, 2, 2, 3, 2, 3]
    m = batch.metrics
    assert m["kept_edges"] == 5 and m["keep_rate"] == 5 / 8 and m["own_keep_rate"] == 3 / 4
    assert m["return"] == pytest.approx(sum(R)) and m["accuracy"] == 1.0 and m["accuracy_round0"] == 0.0


# --- one policy-gradient step ---


class Logits(nn.Module):
    """Row i's keep logit is the parameter `logit[i]` (row ids ride in `agents`)."""

    def __init__(self, logits: list[float]) -> None:
        super().__init__()
        self.logit = nn.Parameter(torch.tensor(logits))

    def forward(
        self,
        agents: torch.Tensor,
        q: torch.Tensor,
        r: torch.Tensor,
        authors: torch.Tensor | None = None,
        cues: torch.Tensor | None = None,
    ) -> torch.Tensor:
        return self.logit[agents]


LN3 = math.log(3)
LOGITS = [0.0, LN3, -LN3, 0.0, LN3, 0.0]  # p = 0.5, 0.75, 0.25, 0.5, 0.75, 0.5
P = np.array([0.5, 0.75, 0.25, 0.5, 0.75, 0.5])
KEPT = np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.0])


def step(net: Logits, returns_: list[float], ent_coef: float, **pg: Any) -> dict[str, float]:
    size = len(returns_)
    batch = Actions(
        agents=torch.arange(size),
        queries=torch.zeros(size, 1),
        candidates=torch.zeros(size, 1),
        kept=torch.tensor(KEPT, dtype=torch.float32),
        returns=torch.tensor(returns_),
        slots=torch.tensor([0, 0, 1, 1, 2, 2]),
        metrics={},
    )
    setup = cast(TrainSetup, SimpleNamespace(section={"pg": PGConfig(**pg)}.get))
    # lr 0: the gradients (clipped in place, as the step saw them) stay readable and nothing moves
    optimizer = torch.optim.SGD(net.parameters(), lr=0.0)
    return pg_update(cast(PruningNet, net), optimizer, batch, setup, ent_coef)


def logit_grad(net: Logits) -> np.ndarray:
    assert net.logit.grad is not None
    return net.logit.grad.numpy().astype(np.float64)


# returns 3, 1 | 10, 4 | -2, -2 by slot: less their slot's mean, 1 -1 3 -3 0 0; std (n - 1) 2
NORMED = np.array([0.5, -0.5, 1.5, -1.5, 0.0, 0.0])


def test_a_step_uses_returns_less_their_slots_mean_over_the_std() -> None:
    net = Logits(LOGITS)
    out = step(net, [3.0, 1.0, 10.0, 4.0, -2.0, -2.0], 0.0, max_grad_norm=1e6)
    # log p(kept): ln .5, ln .25, ln .25, ln .5, ln .75, ln .5; -mean(G log p) = ln 2 / 6
    assert out["policy_loss"] == pytest.approx(math.log(2) / 6, rel=1e-6)
    # d(-G log p)/dlogit = -G (kept - p), over the batch of 6
    want = -NORMED * (KEPT - P) / 6
    np.testing.assert_allclose(logit_grad(net), want, atol=1e-7)
    assert out["grad_norm"] == pytest.approx(float(np.linalg.norm(want)), rel=1e-6)


def test_without_normalisation_the_raw_returns_weigh_the_log_probabilities() -> None:
    net = Logits(LOGITS)
    step(net, [3.0, 1.0, 10.0, 4.0, -2.0, -2.0], 0.0, max_grad_norm=1e6, norm_returns=False)
    np.testing.assert_allclose(logit_grad(net), -np.array([3, 1, 10, 4, -2, -2]) * (KEPT - P) / 6, rtol=1e-6)


def test_the_entropy_bonus_pushes_each_logit_toward_zero() -> None:
    net = Logits(LOGITS)
    step(net, [0.0] * 6, 0.1, max_grad_norm=1e6, norm_returns=False)  # returns 0: the bonus alone
    # -c dH/dlogit / 6, with dH/dlogit = -p (1 - p) logit
    np.testing.assert_allclose(logit_grad(net), 0.1 * P * (1 - P) * np.array(LOGITS) / 6, atol=1e-8)


def test_gradients_are_clipped_at_max_grad_norm() -> None:
    net = Logits(LOGITS)
    out = step(net, [3.0, 1.0, 10.0, 4.0, -2.0, -2.0], 0.0, max_grad_norm=0.01)
    full = -NORMED * (KEPT - P) / 6
    assert out["grad_norm"] == pytest.approx(float(np.linalg.norm(full)), rel=1e-6)  # before clipping
    np.testing.assert_allclose(logit_grad(net), full * 0.01 / np.linalg.norm(full), rtol=1e-4)


# --- several steps per update: PPO's clipped surrogate (pg.clip > 0) ---


def test_one_clipped_step_has_reinforces_gradient() -> None:
    """rho = 1 at the first step and d rho = d log p: one epoch of one minibatch is REINFORCE."""
    net = Logits(LOGITS)
    out = step(net, [3.0, 1.0, 10.0, 4.0, -2.0, -2.0], 0.0, max_grad_norm=1e6, clip=0.2)
    np.testing.assert_allclose(logit_grad(net), -NORMED * (KEPT - P) / 6, atol=1e-7)
    assert out["steps"] == 1 and out["approx_kl"] == pytest.approx(0.0, abs=1e-12)


def _climb(clip: float, epochs: int = 40) -> float:
    """p(keep) of one kept action with advantage +1 after `epochs` SGD steps (lr 1) from p = 0.5."""
    net = Logits([0.0])
    batch = Actions(torch.zeros(1, dtype=torch.long), torch.zeros(1, 1), torch.zeros(1, 1),
                    torch.ones(1), torch.ones(1), torch.zeros(1, dtype=torch.long), {})  # fmt: skip
    setup = cast(TrainSetup, SimpleNamespace(section={"pg": PGConfig(
        norm_returns=False, epochs=epochs, clip=clip, max_grad_norm=1e6)}.get))  # fmt: skip
    out = pg_update(cast(PruningNet, net), torch.optim.SGD(net.parameters(), lr=1.0), batch, setup, 0.0)
    assert out["steps"] == epochs
    return float(torch.sigmoid(net.logit.detach())[0])


def test_the_clip_stops_a_reused_sample_from_pulling_the_policy_far() -> None:
    # the ratio p / 0.5 stops earning gradient past 1 + clip: p ends just past 0.6 (one step's overshoot)
    assert 0.6 < _climb(0.2) < 0.7
    assert _climb(10.0) > 0.95  # a clip that never binds: the same steps run on, far off-policy


def test_minibatches_split_the_batch_and_the_shuffle_is_the_updates() -> None:
    def run(update: int) -> tuple[dict[str, float], np.ndarray]:
        net = Logits(LOGITS)
        size = len(LOGITS)
        batch = Actions(torch.arange(size), torch.zeros(size, 1), torch.zeros(size, 1),
                        torch.tensor(KEPT, dtype=torch.float32), torch.tensor([3.0, 1, 10, 4, -2, -2]),
                        torch.tensor([0, 0, 1, 1, 2, 2]), {})  # fmt: skip
        setup = cast(
            TrainSetup, SimpleNamespace(section={"pg": PGConfig(epochs=2, minibatches=3, clip=0.2)}.get)
        )
        out = pg_update(
            cast(PruningNet, net), torch.optim.Adam(net.parameters(), lr=0.1), batch, setup, 0.0, update
        )
        return out, net.logit.detach().numpy().copy()

    (out, a), (_, b), (_, c) = run(1), run(1), run(2)
    assert out["steps"] == 6 and 0 <= out["clip_fraction"] <= 1 and out["approx_kl"] > 0
    np.testing.assert_array_equal(a, b)  # a resumed update reshuffles alike
    assert not np.array_equal(a, c)  # another update, another shuffle (Adam's steps see other parts)


def test_reusing_samples_without_the_clip_is_refused() -> None:
    for keys in ({"epochs": 2}, {"minibatches": 4}):
        with pytest.raises(ValueError, match="pg.clip: epochs or minibatches > 1 reuse samples off-policy"):
            PGConfig(**keys)
    assert PGConfig(epochs=4, minibatches=4, clip=0.2).clip == 0.2


def test_a_group_baseline_is_the_mean_of_the_same_items_episodes_at_the_same_decision() -> None:
    def batch(returns_: list[float], items: list[int], slots: list[int], agents: list[int]) -> Actions:
        size = len(returns_)
        return Actions(
            agents=torch.tensor(agents),
            queries=torch.zeros(size, 1),
            candidates=torch.zeros(size, 1),
            kept=torch.zeros(size),
            returns=torch.tensor(returns_, dtype=torch.float32),
            slots=torch.tensor(slots),
            metrics={},
            items=torch.tensor(items),
        )

    raw = PGConfig(norm_returns=False)
    # two items, each run twice, two decisions an episode: (3, 1), (5, 1) | (10, 0), (0, 0)
    b = batch([3, 1, 5, 1, 10, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1, 1], [0, 1] * 4, [0] * 8)
    np.testing.assert_allclose(advantages(b, raw).numpy(), [-1, 0, 1, 0, 5, 0, -5, 0])
    # the slot baseline pools the items: slot 0's mean is 4.5
    b.items = None
    assert advantages(b, PGConfig()).numpy()[0] != advantages(b, raw).numpy()[0]
    np.testing.assert_allclose(advantages(b, PGConfig(norm_returns=False)).numpy(), [3, 1, 5, 1, 10, 0, 0, 0])
    # readers are their own decisions: agent 0's mean 2, agent 1's 7
    b = batch([1, 5, 3, 9], [0] * 4, [0] * 4, [0, 1, 0, 1])
    np.testing.assert_allclose(advantages(b, raw).numpy(), [-1, -2, 1, 2])
    normed = advantages(b, PGConfig()).numpy()
    np.testing.assert_allclose(normed, np.array([-1, -2, 1, 2]) / np.std([-1, -2, 1, 2], ddof=1), rtol=1e-6)
