"""RUMAD's gated policy (the `bernoulli` head, `debate.routers.rumad.gated`): evaluation acts by the
mode of the distribution training samples, the recorded action is the one applied and its
log-probability is the network's own, the budget keeps the likeliest speakers, an untrained policy
does not sit on a threshold, seat features and a separate critic, the group baseline, and the
architecture and training keys that came later leave old checkpoints and fingerprints alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from debate.policies.actor_critic import ACT_BIAS, PolicyArch, build
from debate.policies.arch import edge_index
from debate.policies.controller import Controller
from debate.policies.observation import observe
from debate.routers.rumad import RumadRouter, gated
from debate.state import DebateState, View
from sweep.train.ppo import group_advantages, returns_to_go


def state(answers: tuple[str, ...], conf: tuple[int, ...]) -> DebateState:
    views = tuple(View(a, c, "") for a, c in zip(answers, conf, strict=True))
    return DebateState(n=len(answers)).advance(views, (), None)


STATE = state(("1", "2", "1", "3", "1", "2"), (4, 2, 3, 1, 5, 2))


def net(seed: int = 0, **kw: object) -> Controller:
    arch = PolicyArch(hidden=8, head="bernoulli", seats=6, critic="separate", **kw)  # type: ignore[arg-type]
    return Controller(build(arch, seed), "test")


def test_evaluation_is_the_mode_of_the_sampled_distribution() -> None:
    c = net(3)
    obs = observe(STATE, 12, 6)
    w, p_act, _, _ = c.gates(obs)
    active, visible, rec = gated(RumadRouter(budget=100), c, obs, np.random.default_rng(0), False, 100)
    assert active == frozenset(t for t in range(6) if p_act[t] >= 0.5)
    assert set(visible) == {(s, t) for s in range(6) for t in active if s != t and w[s, t] >= 0.5}
    # the mode is each gate's likelier outcome: no other action is more probable
    dist = c.module.distribution(
        c.module(*(torch.from_numpy(x)[None] for x in (obs.agents, obs.pairs, obs.glob)))[0][0]
    )
    mode = (dist.probs >= 0.5).float().numpy()
    assert np.array_equal(rec["action"][-6:], mode[-6:])


def test_the_recorded_log_probability_is_the_networks_for_the_applied_action() -> None:
    c = net(1)
    obs = observe(STATE, 12, 6)
    for seed in range(5):
        active, visible, rec = gated(RumadRouter(budget=12), c, obs, np.random.default_rng(seed), True, 2)
        assert len(active) <= 2
        speak = rec["action"][-6:]
        assert set(np.flatnonzero(speak)) == set(active)  # a speaker the budget dropped is recorded silent
        src, tgt = edge_index(6)
        assert np.array_equal(rec["mask"][: len(src)], np.isin(tgt, sorted(active)).astype(np.float32))
        x = [torch.from_numpy(a)[None] for a in (obs.agents, obs.pairs, obs.glob)]
        logp, _, _ = c.module.evaluate(
            *x, torch.from_numpy(rec["action"])[None], torch.from_numpy(rec["mask"])[None]
        )
        assert float(logp.detach()) == pytest.approx(rec["logp"], abs=1e-5)
        assert all(t in active for _, t in visible)


def test_the_budget_keeps_the_likeliest_speakers() -> None:
    c = net(2)
    obs = observe(STATE, 12, 6)
    _, p_act, _, _ = c.gates(obs)
    with torch.no_grad():  # make every gate open, with distinct probabilities
        c.module.act[2].bias.fill_(3.0)
    _, p_act, _, _ = c.gates(obs)
    active, _, _ = gated(RumadRouter(budget=12), c, obs, np.random.default_rng(0), False, 3)
    assert active == frozenset(np.argsort(-p_act, kind="stable")[:3].tolist())


def test_an_untrained_gated_policy_speaks_whatever_its_init_seed() -> None:
    obs = observe(STATE, 12, 6)
    for seed in range(6):
        _, p_act, _, _ = net(seed).gates(obs)
        assert np.all(np.abs(p_act - 1 / (1 + np.exp(-ACT_BIAS))) < 0.05)  # far from 0.5


def test_seats_tell_agents_apart_and_default_arch_keeps_old_digests() -> None:
    c = net(0)
    obs = observe(state(("1",) * 6, (3,) * 6), 12, 6)  # six agents the observation cannot tell apart
    _, p_act, _, _ = c.gates(obs)
    assert len(set(np.round(p_act, 7))) > 1
    plain = Controller(build(PolicyArch(hidden=8, head="bernoulli"), 0), "t")
    _, p_plain, _, _ = plain.gates(obs)
    assert len(set(np.round(p_plain, 7))) == 1
    assert "seats" not in PolicyArch().to_dict() and "critic" not in PolicyArch().to_dict()
    assert PolicyArch(seats=6, critic="separate").to_dict()["seats"] == 6


def test_a_separate_critic_shares_nothing_with_the_policy() -> None:
    module = net(0).module
    obs = observe(STATE, 12, 6)
    x = [torch.from_numpy(a)[None] for a in (obs.agents, obs.pairs, obs.glob)]
    _, value = module(*x)
    value.sum().backward()
    assert all(p.grad is None or not p.grad.any() for p in module.encoder.parameters())
    assert any(p.grad is not None and p.grad.any() for p in module.value_encoder.parameters())


def test_group_advantages_subtract_the_items_mean_at_each_step() -> None:
    rewards = np.array([0.0, 1.0, 0.0, -2.0, 0.5, 0.5])
    ends = np.array([False, True, False, True, False, True])
    episode = np.array([0, 0, 1, 1, 2, 2])
    g = returns_to_go(rewards, ends, 1.0)
    assert g.tolist() == [1.0, 1.0, -2.0, -2.0, 1.0, 0.5]
    adv = group_advantages(g, episode, np.array([0, 0, 1]))
    assert adv.tolist() == [1.5, 1.5, -1.5, -1.5, 0.0, 0.0]
    assert returns_to_go(rewards, ends, 0.5).tolist() == [0.5, 1.0, -1.0, -2.0, 0.75, 0.5]


def gated_training(tmp: Path, **ppo: Any) -> Path:
    from tests import test_train

    policy = {"hidden": 16, "head": "bernoulli", "seats": 3, "critic": "separate"}
    base_ppo = {"updates": 2, "episodes_per_update": 8, "epochs": 2, "minibatches": 2, "seed": 0}
    return test_train.write(tmp, policy=policy, ppo={**base_ppo, **ppo}, eval_every=0)


def test_the_new_training_keys_enter_the_fingerprint_only_off_their_old_value(tmp_path: Path) -> None:
    from sweep.train.config import load_train

    path = gated_training(tmp_path)
    plain = load_train(path).fingerprint()
    assert load_train(path, ["ppo.advantage=gae", "ppo.group_size=1"]).fingerprint() == plain
    assert load_train(path, ["ppo.advantage=group", "ppo.group_size=4"]).fingerprint() != plain
    assert load_train(path, ["policy.critic=shared"]).fingerprint() != plain


def test_a_group_size_that_does_not_fill_the_update_is_one_line(tmp_path: Path) -> None:
    from sweep.config.sweep import ConfigError
    from sweep.train.config import load_train

    with pytest.raises(
        ConfigError, match=r"ppo\.group_size: 3 with advantage 'group' must be >= 2 and divide"
    ):
        load_train(gated_training(tmp_path, advantage="group", group_size=3))


def test_a_gated_training_with_the_group_baseline_runs_and_moves_the_policy(tmp_path: Path) -> None:
    from debate.policies import checkpoint as ckpt
    from sweep.cli import main

    path = gated_training(tmp_path, advantage="group", group_size=4, updates=2)
    assert main(["train", str(path), "--no-tracking"]) == 0
    out = tmp_path / "out"
    first, final = (
        ckpt.load(str(out / "checkpoints" / "policy-u000002.npz")),
        ckpt.load(str(out / "policy.npz")),
    )
    assert final.arch["head"] == "bernoulli" and final.arch["seats"] == 3
    init = build(PolicyArch.from_dict(final.arch), 0).state_dict()
    moved = [k for k, v in final.weights.items() if not np.allclose(v, init[k].numpy())]
    assert "act.2.bias" in moved and any(k.startswith("value_encoder") for k in moved)
    assert first.digest == final.digest
