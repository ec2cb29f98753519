"""RUMAD's PPO topology controller as a router (`specs/methods.md` §RUMAD; the design within the
paper's public abstract, tables and prompts is ours).

Before each debate round r >= 1 the controller observes the debate content-agnostically
(`debate.policies.observation`), and its policy gives a weight w[s -> t] in [0, 1] for every ordered
pair (`debate.policies.actor_critic`). The dual threshold turns weights into the round's decision:

- activation: agent t speaks when its strongest incoming weight max_s w[s -> t] reaches `theta_act`
  and the budget allows; when more agents qualify than the budget has left, those with the strongest
  incoming weight speak (ties: the lower index). The budget `B` counts activations after round 0;
  it is never exceeded. `activation: false` is the "w/o agent activation" ablation: every agent
  speaks every round, no budget, weights and visibility only.
- visibility: a speaker t sees source s when w[s -> t] >= `theta_vis`; the `rumad` prompt family shows
  each visible response with its weight as its importance. Agents that do not speak keep their answer
  and cost nothing.

A policy with the `bernoulli` head (`debate.policies.actor_critic`) gives, besides w[s -> t] (the
probability that s's response reaches t), a probability p[t] that t speaks. Trained, it samples both
(`gated`); evaluated, t speaks when p[t] >= `theta_act` and sees s when w[s -> t] >= `theta_vis`: at
0.5 each, the mode of the very distribution it trained. The budget keeps the likeliest speakers.

At evaluation (`sweep run`) the policy acts by its distribution's mean (its mode, for `bernoulli`), so no draw is made and a
checkpoint gives the same episodes under the same seed; the trainer routes with `PolicyRouter`, which
samples with the episode's router rng (every draw seeded). `checkpoint` names a policy file (a path, or
`runs:/<run id>/<artifact path>` of an MLflow run when run through `sweep`); ids hash its content, not
its path. `checkpoint: ""` is the untrained policy, initialised from `init_seed`. Each round's
decision record holds the observation, the action as drawn, its log-probability, the value estimate,
the entropy, the budget left and whether the policy could act (budget left, or no budget).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from debate.decision import Decision
from debate.graph import Graph
from debate.policies import checkpoint as ckpt
from debate.policies.arch import edge_index
from debate.policies.observation import activations, observe
from debate.registry import method
from debate.state import DebateState


def dual_threshold(
    weights: np.ndarray, theta_act: float, theta_vis: float, budget_left: int | None
) -> tuple[frozenset[int], dict[tuple[int, int], float]]:
    """(who speaks, the visible edges with their weights) from an (n, n) weight matrix w[s, t]."""
    n = weights.shape[0]
    masked = np.where(np.eye(n, dtype=bool), -np.inf, weights)
    strongest = masked.max(axis=0) if n > 1 else np.full(n, -np.inf)
    qualified = [t for t in range(n) if strongest[t] >= theta_act]
    if budget_left is not None and len(qualified) > budget_left:
        qualified = sorted(qualified, key=lambda t: (-strongest[t], t))[: max(0, budget_left)]
    active = frozenset(qualified)
    visible = {
        (s, t): float(weights[s, t])
        for t in sorted(active)
        for s in range(n)
        if s != t and weights[s, t] >= theta_vis
    }
    return active, visible


@method("rumad", summary="RUMAD: a trained policy picks who speaks and sees whom")
@dataclass(frozen=True)
class RumadRouter:
    """RUMAD (see the module docstring for each argument's role)."""

    checkpoint: str = ""
    init_seed: int = 0
    theta_act: float = 0.5
    theta_vis: float = 0.5
    budget: int = 12
    activation: bool = True
    LABEL: ClassVar[tuple[str, ...]] = ("budget",)

    def __post_init__(self) -> None:
        for name in ("theta_act", "theta_vis"):  # own fields, by name
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"rumad: {name} must be in [0, 1], got {getattr(self, name)}")
        if self.budget < 0:
            raise ValueError(f"rumad: budget must be >= 0 activations, got {self.budget}")

    @staticmethod
    def identity_of(args: dict[str, Any]) -> dict[str, Any]:
        """Episode ids hash the checkpoint's content, never its path: two checkpoints never share ids,
        and a checkpoint moved elsewhere keeps them."""
        ref = args.get("checkpoint", "")
        return {**args, "checkpoint": f"sha:{ckpt.load(ref, 'rumad').digest}"} if ref else args

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        from debate.policies.controller import controller_for  # torch: only once a policy is built

        return decide(self, controller_for(self.checkpoint, self.init_seed), state, rng, sample=False)


def budget_left(params: RumadRouter, state: DebateState) -> int | None:
    """Activations the budget still allows before this round; None without activation control."""
    return max(0, params.budget - int(activations(state).sum())) if params.activation else None


def decide(
    params: RumadRouter, controller: Any, state: DebateState, rng: np.random.Generator, sample: bool
) -> Decision:
    """One round of RUMAD routing with `controller` (a `debate.policies.controller.Controller`)."""
    n = state.n
    left = budget_left(params, state)
    if n < 2:
        return Decision(Graph(n), active=frozenset(), record={"budget_left": left, "acted": False})
    obs = observe(state, params.budget if params.activation else None, controller.arch.horizon)
    if controller.arch.head == "bernoulli":
        active, visible, action = gated(params, controller, obs, rng, sample, left)
        return _decision(params, controller, n, obs, active, visible, action, left, sample)
    weights, action = controller.act(obs, rng, sample)
    if params.activation:
        active, visible = dual_threshold(weights, params.theta_act, params.theta_vis, left)
    else:
        active, visible = dual_threshold(weights, -np.inf, params.theta_vis, None)
    return _decision(params, controller, n, obs, active, visible, action, left, sample)


def _decision(
    params: RumadRouter,
    controller: Any,
    n: int,
    obs: Any,
    active: frozenset[int],
    visible: dict[tuple[int, int], float],
    action: dict[str, Any],
    left: int | None,
    sample: bool,
) -> Decision:
    """The round's decision, with the record a trainer reads back (observation, action, budget)."""
    deterministic = "mode" if controller.arch.head == "bernoulli" else "mean"
    record = {
        "obs": obs.as_record(),
        **action,
        "budget_left": left,
        "acted": left is None or left > 0,
        "mode": "sample" if sample else deterministic,
        "policy": controller.digest,
    }
    return Decision(Graph(n, visible), weights=visible, active=active, record=record)


def gated(
    params: RumadRouter,
    controller: Any,
    obs: Any,
    rng: np.random.Generator,
    sample: bool,
    left: int | None,
) -> tuple[frozenset[int], dict[tuple[int, int], float], dict[str, Any]]:
    """A `bernoulli` policy's round: (who speaks, the visible edges with w as their weight, the
    action record). The action recorded is the one applied (a speaker the budget dropped is silent),
    and its log-probability counts every agent's gate and the edges into speakers only: the edges
    into silent agents changed nothing, so no credit reaches them."""
    weights, p_act, value, dist = controller.gates(obs)
    n = obs.n
    src, tgt = edge_index(n)
    p_vis = weights[src, tgt]
    if sample:
        vis = (rng.random(p_vis.shape) < p_vis).astype(np.float32)
        speak = (rng.random(n) < p_act).astype(np.float32)
    else:
        vis = (p_vis >= params.theta_vis).astype(np.float32)
        speak = (p_act >= params.theta_act).astype(np.float32)
    if not params.activation:
        speak = np.ones(n, np.float32)
    chosen = [t for t in range(n) if speak[t]]
    if left is not None and len(chosen) > left:  # the budget keeps the likeliest speakers
        chosen = sorted(chosen, key=lambda t: (-p_act[t], t))[: max(0, left)]
    active = frozenset(chosen)
    speak = np.isin(np.arange(n), chosen).astype(np.float32)
    visible = {
        (int(s), int(t)): float(weights[s, t])
        for s, t, v in zip(src, tgt, vis, strict=True)
        if v and t in active
    }
    gate_mask = np.full(n, 1.0 if params.activation else 0.0, np.float32)
    mask = np.concatenate([np.isin(tgt, chosen).astype(np.float32), gate_mask])
    action = np.concatenate([vis, speak]).astype(np.float32)
    logp, entropy = controller.score(dist, action, mask)
    record = {"action": action, "mask": mask, "logp": logp, "value": value, "entropy": entropy}
    return active, visible, record


@dataclass(frozen=True)
class PolicyRouter:
    """RUMAD routing with a live controller (the trainer's policy between updates), sampling by default."""

    params: RumadRouter
    controller: Any
    sample: bool = True

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        return decide(self.params, self.controller, state, rng, self.sample)
