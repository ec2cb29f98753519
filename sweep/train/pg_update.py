"""CPP's policy-gradient step (step 4 of `sweep.train.pg`), on one update's actions.

The returns become advantages once per update: with `norm_returns`, each return less the batch's mean
return of the same (round, position) — a baseline, ours: an early action gathers more dependents'
rewards than a late one — over the batch's std. With `pg.group_size` > 1 each item runs that many
times per update and the baseline is the mean return of the same item's episodes at the same decision
(round, reader, position; ours, as RUMAD-G's group baseline: which item it is moves a return more
than any one decision does). A group's mean counts the return itself, which only scales the
difference from the other episodes' mean by (size - 1) / size: unbiased up to that factor, which the
std removes. `collect` (step 3) lays an update's actions out as the step reads them. Then:

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

from debate.cpp_reward import CppReward, kept_matrix, returns
from debate.policies.fuseglu import PruningNet
from debate.trajectory import EpisodeResult
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
    items: torch.Tensor | None = None  # each action's episode's item group (with `pg.group_size`)

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
    if len(g) < 2 or not (cfg.norm_returns or batch.items is not None):
        return g
    if batch.items is not None:  # a baseline per item and decision: its group's mean return there
        n = int(batch.agents.max()) + 1
        cell = (batch.items * (int(batch.slots.max()) + 1) + batch.slots) * n + batch.agents
        _, key = torch.unique(cell, return_inverse=True)
    else:  # a baseline per (round, position): later slots gather fewer rewards
        key = batch.slots
    sums = torch.zeros(int(key.max()) + 1).index_add_(0, key, g)
    counts = torch.bincount(key, minlength=len(sums)).clamp(min=1)
    g = g - (sums / counts)[key]
    return g / (g.std() + 1e-8) if cfg.norm_returns else g


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


def collect(
    results: list[EpisodeResult],
    reward: CppReward,
    states: list[np.ndarray] | None = None,
    items: np.ndarray | None = None,
) -> Actions:
    """Every action of finished episodes with its return, and the rollout's metrics (`states`: each
    episode's states after every action, `action_states`; `items`: each episode's item group, for
    `pg.group_size`)."""
    per_episode: list[int] = []  # each episode's actions
    agents, queries, cands, kept, rets, probs, slots, authors, cues = [], [], [], [], [], [], [], [], []
    totals, own, owners, edges = [], 0, 0, 0
    for e, res in enumerate(results):
        rewards, g = returns(res.trajectory, reward, None if states is None else states[e])
        totals.append(float(rewards.sum()))
        rets.append(g)
        per_episode.append(len(g))
        for t, rec in enumerate(res.trajectory[1:]):
            assert rec.decision is not None
            record, flags = rec.decision.record, kept_matrix(rec)
            n = flags.shape[0]
            agents.append(np.repeat(np.arange(n), n))
            slots.append(t * n + np.tile(np.arange(n), n))
            queries.append(np.asarray(record["_queries"]).reshape(n * n, -1))
            cands.append(np.asarray(record["_candidates"]).reshape(n * n, -1))
            cues.append(np.asarray(record["_cues"]).reshape(n * n, 4))
            kept.append(flags.reshape(-1))
            probs += [entry[2] for row in record["keep"] for entry in row]
            authors += [entry[0] for row in record["keep"] for entry in row]
            own, owners = own + int(flags[:, 0].sum()), owners + n
            edges += int(flags.sum())
    n_ep, p = max(1, len(results)), np.clip(np.asarray(probs, dtype=np.float64), 1e-9, 1 - 1e-9)
    decisions = max(1, len(probs))
    metrics = {
        "episodes": float(len(results)),
        "return": float(np.mean(totals)) if totals else 0.0,
        "accuracy": sum(r.correct for r in results) / n_ep,
        "accuracy_round0": sum(r.round_correct[0] for r in results) / n_ep,
        "cost_per_task": sum(r.cost for r in results) / n_ep,
        "tokens_per_task": sum(r.prompt_tokens + r.completion_tokens for r in results) / n_ep,
        "kept_edges": edges / n_ep,  # the paper's "Edge": decisions kept per episode, own included
        "keep_rate": edges / decisions,
        "own_keep_rate": own / max(1, owners),
        "entropy": float(np.mean(-(p * np.log(p) + (1 - p) * np.log(1 - p)))) if probs else 0.0,
    }
    tn = torch.from_numpy
    return Actions(
        tn(np.concatenate(agents)).long(),
        tn(np.concatenate(queries)).float(),
        tn(np.concatenate(cands)).float(),
        tn(np.concatenate(kept).astype(np.float32)),
        tn(np.concatenate(rets)).float(),
        tn(np.concatenate(slots)).long(),
        metrics,
        torch.as_tensor(authors, dtype=torch.long),
        tn(np.concatenate(cues)).long() if cues else None,
        None if items is None else torch.from_numpy(np.repeat(np.asarray(items, np.int64), per_episode)),
    )
