"""RUMAD's actor-critic network (torch; `specs/methods.md` §RUMAD, Table 6: hidden 128).

One weight w[s -> t] in [0, 1] per ordered pair of agents. The network is shared across agents and
edges, so it is permutation-equivariant and runs for any team size n:

    h_i   = encoder([agent features_i, global features])                  (2 tanh layers of `hidden`)
    head  = edge([h_s, h_t, agree[s, t]])  for every ordered pair s != t   (1 tanh layer, then out)
    value = critic([mean_i h_i, global features])                          (1 tanh layer, then 1)

With `seats` > 0 each agent's features also hold its seat, one-hot (the team's members differ, and
a router that cannot tell them apart cannot prefer one); with `critic: separate` the value head has
an encoder of its own, so the value loss never pulls on the policy's features.

Heads: `gaussian` (default) — a Gaussian per edge over u, squashed by the sigmoid: w = sigmoid(u),
with a learned state-independent log-std; `beta` — a Beta(1 + softplus(a), 1 + softplus(b)) per edge
over w itself (Table 3's "β distribution" ablation). PPO's log-probabilities are of the action as drawn
(u for the Gaussian, whose squashing Jacobian cancels in the ratio; w for the Beta). The
deterministic action is the distribution's mean: w = sigmoid(mean u), or the Beta's mean.
`bernoulli` — discrete actions, one per edge (does s's response reach t?) then one per agent (does
t speak?), each a Bernoulli of its own logit; the activation logit is act([h_t, global]). The
probabilities are the weights the dual threshold reads, so at thresholds of 0.5 the deterministic
action is the distribution's mode, and what is evaluated is what was trained. Its activation bias
starts at `ACT_BIAS` (p = 0.73, away from the 0.5 threshold: an untrained policy speaks whatever its
init seed) and its visibility bias at `VIS_BIAS`.
Initialisation follows CleanRL's PPO (orthogonal; policy output gain 0.01, value output gain 1), from
a given seed, so an untrained policy is reproducible.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.distributions import Bernoulli, Beta, Distribution, Normal

from debate.policies.arch import HEADS, PolicyArch, edge_index

__all__ = [
    "HEADS",
    "ActorCritic",
    "PolicyArch",
    "build",
    "draw",
    "edge_index",
    "load_weights",
    "to_weights",
    "weights_of",
]

BETA_EPS = 1e-6  # Beta actions are kept off 0 and 1, where the log-density is infinite
ACT_BIAS, VIS_BIAS = 1.0, 1.0  # the bernoulli head's initial logits: speak and see with p = 0.73


def _layer(n_in: int, n_out: int, gain: float = float(np.sqrt(2))) -> nn.Linear:
    layer = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.constant_(layer.bias, 0.0)
    return layer


class ActorCritic(nn.Module):
    """The shared encoder, the per-edge policy head and the value head (see the module docstring)."""

    def __init__(self, arch: PolicyArch) -> None:
        super().__init__()
        h, g = arch.hidden, arch.global_features
        a = arch.agent_features + arch.seats
        self.arch = arch
        self.encoder = nn.Sequential(_layer(a + g, h), nn.Tanh(), _layer(h, h), nn.Tanh())
        out = 2 if arch.head == "beta" else 1
        self.edge = nn.Sequential(_layer(2 * h + 1, h), nn.Tanh(), _layer(h, out, gain=0.01))
        self.critic = nn.Sequential(_layer(h + g, h), nn.Tanh(), _layer(h, 1, gain=1.0))
        if arch.critic == "separate":
            self.value_encoder = nn.Sequential(_layer(a + g, h), nn.Tanh(), _layer(h, h), nn.Tanh())
        if arch.head == "gaussian":
            self.log_std = nn.Parameter(torch.tensor(float(arch.log_std_init)))
        if arch.head == "bernoulli":
            self.act = nn.Sequential(_layer(h + g, h), nn.Tanh(), _layer(h, 1, gain=0.01))
            for out_layer, bias in ((self.act[2], ACT_BIAS), (self.edge[2], VIS_BIAS)):
                assert isinstance(out_layer, nn.Linear)
                nn.init.constant_(out_layer.bias, bias)

    def forward(
        self, agents: torch.Tensor, pairs: torch.Tensor, glob: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """agents (B, n, A), pairs (B, n, n), glob (B, G) -> head (B, E [+ n], 1|2), value (B,);
        the bernoulli head's logits are the E edges' then the n agents'."""
        batch, n = agents.shape[0], agents.shape[1]
        g = glob[:, None, :].expand(batch, n, glob.shape[-1])
        x = torch.cat([agents, _seats(batch, n, self.arch.seats), g], dim=-1)
        h = self.encoder(x)
        src, tgt = (torch.from_numpy(a) for a in edge_index(n))
        edges = torch.cat([h[:, src], h[:, tgt], pairs[:, src, tgt].unsqueeze(-1)], dim=-1)
        hv = self.value_encoder(x) if self.arch.critic == "separate" else h
        value = self.critic(torch.cat([hv.mean(dim=1), glob], dim=-1)).squeeze(-1)
        head = self.edge(edges)
        if self.arch.head == "bernoulli":
            head = torch.cat([head, self.act(torch.cat([h, g], dim=-1))], dim=1)
        return head, value

    def distribution(self, head: torch.Tensor) -> Distribution:
        """Independent per-edge distributions over the action (u for the Gaussian, w for the Beta)."""
        if self.arch.head == "gaussian":
            mu = head[..., 0]
            return Normal(mu, self.log_std.exp().expand_as(mu))
        if self.arch.head == "bernoulli":
            return Bernoulli(logits=head[..., 0])
        soft = nn.functional.softplus
        return Beta(1.0 + soft(head[..., 0]), 1.0 + soft(head[..., 1]))

    def evaluate(
        self,
        agents: torch.Tensor,
        pairs: torch.Tensor,
        glob: torch.Tensor,
        actions: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(log-probability, entropy, value) of a batch of actions (B, D), summed over the action's
        parts that `mask` (B, D) keeps (all of them without one)."""
        head, value = self(agents, pairs, glob)
        dist = self.distribution(head)
        logp, entropy = dist.log_prob(actions), dist.entropy()
        if mask is not None:
            logp, entropy = logp * mask, entropy * mask
        return logp.sum(-1), entropy.sum(-1), value


def _seats(batch: int, n: int, seats: int) -> torch.Tensor:
    """(batch, n, seats): agent i's seat one-hot (nothing for seats = 0; seats past `seats` all zero)."""
    eye = torch.eye(n, max(seats, n))[:, :seats]
    return eye[None].expand(batch, n, seats)


def mean_action(dist: Distribution) -> torch.Tensor:
    """The distribution's mean, the action taken at evaluation."""
    return dist.mean


def to_weights(head: str, action: np.ndarray) -> np.ndarray:
    """Edge weights in [0, 1] from an action: the sigmoid of u (Gaussian), w itself (Beta)."""
    return 1.0 / (1.0 + np.exp(-action)) if head == "gaussian" else action


def draw(dist: Distribution, head: str, rng: np.random.Generator) -> np.ndarray:
    """One action drawn with numpy from `rng` (so every draw follows the router's seeded rng)."""
    if head == "bernoulli":
        assert isinstance(dist, Bernoulli)
        p = dist.probs.numpy().astype(np.float64)
        return (rng.random(p.shape) < p).astype(np.float32)
    if head == "gaussian":
        assert isinstance(dist, Normal)
        mu, std = dist.loc.numpy().astype(np.float64), dist.scale.numpy().astype(np.float64)
        return (mu + std * rng.standard_normal(mu.shape)).astype(np.float32)
    assert isinstance(dist, Beta)
    a, b = dist.concentration1.numpy().astype(np.float64), dist.concentration0.numpy().astype(np.float64)
    return np.clip(rng.beta(a, b), BETA_EPS, 1 - BETA_EPS).astype(np.float32)


def build(arch: PolicyArch, seed: int) -> ActorCritic:
    """A freshly initialised network; the same seed gives the same weights (global torch rng untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return ActorCritic(arch)


def weights_of(module: ActorCritic) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy().copy() for k, v in module.state_dict().items()}


def load_weights(module: ActorCritic, weights: dict[str, np.ndarray]) -> None:
    module.load_state_dict({k: torch.from_numpy(np.asarray(v).copy()) for k, v in weights.items()})
