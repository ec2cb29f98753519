"""CPP's policy-gradient step (step 4 of `sweep.train.pg`), on one update's actions.

The returns become advantages once per update: with `norm_returns`, each return less the batch's mean
return of the same (round, position) — a baseline, ours: an early action gathers more dependents'
rewards than a late one — over the batch's std. Then:

- `pg.clip` 0 (the default): one gradient step on  -mean(A * log p(a)) - c * mean(H(p))  — plain
  REINFORCE, on-policy, as every CPP training before the option (`epochs` and `minibatches` must be 1);
- `pg.clip` > 0: `epochs` passes over the batch, each in `minibatches` shuffled minibatches (the
  shuffle drawn from (pg.seed, update): a resumed training reshuffles alike), one step per minibatch
  on PPO's clipped surrogate  -mean(min(rho * A, clip(rho, 1 - clip, 1 + clip) * A)) - c * mean(H),
  rho = p_now(a) / p_rollout(a). Reusing samples after the first step is off-policy; the ratio and
  its clip keep the steps near the policy that drew them (Schulman et al. 2017). With one epoch and
  one minibatch its gradient is REINFORCE's (rho = 1, d rho = d log p).

Gradients are clipped at `max_grad_norm` before every step.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from debate.policies.fuseglu import PruningNet
from sweep.train.config import TrainSetup
from sweep.train.pg_config import PGConfig


@dataclasses.dataclass
class Actions:
    """One update's actions, episode after episode, in `debate.cpp_reward.index` order."""

    agents: torch.Tensor
    queries: torch.Tensor
    candidates: torch.Tensor
    kept: torch.Tensor
    returns: torch.Tensor
    slots: torch.Tensor  # each action's (round, position) as one index: its baseline's group
    metrics: dict[str, float]
    # each candidate's author seat (read with `author_seat`, `seat_trust` or `author_bias`)
    authors: torch.Tensor | None = None
    cues: torch.Tensor | None = None  # each decision's confidence cues (read with `confidence_cues`)

    def logits(self, net: PruningNet, idx: torch.Tensor | None = None) -> torch.Tensor:
        """The network's keep logits on these actions (those at `idx`, when given)."""
        authors, cues = self.authors, self.cues
        if idx is None:
            return net(self.agents, self.queries, self.candidates, authors, cues)
        return net(
            self.agents[idx],
            self.queries[idx],
            self.candidates[idx],
            None if authors is None else authors[idx],
            None if cues is None else cues[idx],
        )


def advantages(batch: Actions, cfg: PGConfig) -> torch.Tensor:
    """The returns as the step weighs them (see the module docstring)."""
    g = batch.returns
    if cfg.norm_returns and len(g) > 1:  # a baseline per (round, position): later slots gather fewer rewards
        sums = torch.zeros(int(batch.slots.max()) + 1).index_add_(0, batch.slots, g)
        counts = torch.bincount(batch.slots, minlength=len(sums)).clamp(min=1)
        g = g - (sums / counts)[batch.slots]
        g = g / (g.std() + 1e-8)
    return g


def _step(net: PruningNet, optimizer: torch.optim.Optimizer, loss: torch.Tensor, cfg: PGConfig) -> float:
    optimizer.zero_grad()
    loss.backward()
    grad = torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
    optimizer.step()
    return float(grad)


def pg_update(
    net: PruningNet,
    optimizer: torch.optim.Optimizer,
    batch: Actions,
    setup: TrainSetup,
    ent_coef: float,
    update: int = 0,
) -> dict[str, float]:
    """The update's steps on the batch (see the module docstring); the losses' metrics."""
    cfg = setup.section("pg", PGConfig)
    g = advantages(batch, cfg)
    if cfg.clip == 0:  # plain REINFORCE: one step, exactly as before the option
        dist = torch.distributions.Bernoulli(logits=batch.logits(net))
        pg_loss = -(g * dist.log_prob(batch.kept)).mean()
        grad = _step(net, optimizer, pg_loss - ent_coef * dist.entropy().mean(), cfg)
        return {"policy_loss": float(pg_loss.detach()), "entropy_coef": ent_coef, "grad_norm": grad}
    with torch.no_grad():
        old = torch.distributions.Bernoulli(logits=batch.logits(net))
        old_logp = old.log_prob(batch.kept)
    shuffle = np.random.default_rng([cfg.seed, update, 0x5EED])
    size = len(g)
    losses, grads, clipped = [], [], []
    for _ in range(cfg.epochs):
        for part in np.array_split(shuffle.permutation(size), min(cfg.minibatches, size)):
            idx = torch.from_numpy(part)
            logits = batch.logits(net, idx)
            dist = torch.distributions.Bernoulli(logits=logits)
            ratio = torch.exp(dist.log_prob(batch.kept[idx]) - old_logp[idx])
            a = g[idx]
            surrogate = torch.min(ratio * a, torch.clamp(ratio, 1 - cfg.clip, 1 + cfg.clip) * a)
            pg_loss = -surrogate.mean()
            grads.append(_step(net, optimizer, pg_loss - ent_coef * dist.entropy().mean(), cfg))
            losses.append(float(pg_loss.detach()))
            clipped.append(float(((ratio - 1).abs() > cfg.clip).float().mean()))
    with torch.no_grad():
        new_logp = torch.distributions.Bernoulli(logits=batch.logits(net)).log_prob(batch.kept)
        ratio = torch.exp(new_logp - old_logp)
        approx_kl = float(((ratio - 1) - (new_logp - old_logp)).mean())  # CleanRL's low-variance estimator
    return {
        "policy_loss": float(np.mean(losses)),
        "entropy_coef": ent_coef,
        "grad_norm": float(np.mean(grads)),
        "approx_kl": approx_kl,
        "clip_fraction": float(np.mean(clipped)),
        "steps": float(len(losses)),
    }
