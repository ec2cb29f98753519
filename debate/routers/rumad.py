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

At evaluation (`sweep run`) the policy acts by its distribution's mean, so no draw is made and a
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
    weights, action = controller.act(obs, rng, sample)
    if params.activation:
        active, visible = dual_threshold(weights, params.theta_act, params.theta_vis, left)
    else:
        active, visible = dual_threshold(weights, -np.inf, params.theta_vis, None)
    record = {
        "obs": obs.as_record(),
        **action,
        "budget_left": left,
        "acted": left is None or left > 0,
        "mode": "sample" if sample else "mean",
        "policy": controller.digest,
    }
    return Decision(Graph(n, visible), weights=visible, active=active, record=record)


@dataclass(frozen=True)
class PolicyRouter:
    """RUMAD routing with a live controller (the trainer's policy between updates), sampling by default."""

    params: RumadRouter
    controller: Any
    sample: bool = True

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        return decide(self.params, self.controller, state, rng, self.sample)
