"""A policy ready to route: observation -> a matrix of edge weights, plus what a trainer needs back
(the action as drawn, its log-probability, the value estimate, the entropy). Built from a checkpoint
(cached per content hash in this process) or freshly initialised from a seed (the untrained policy)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.distributions import Bernoulli

from debate.policies import checkpoint
from debate.policies.actor_critic import (
    ActorCritic,
    PolicyArch,
    build,
    draw,
    edge_index,
    load_weights,
    to_weights,
)
from debate.policies.observation import Observation


class Controller:
    """Wraps an `ActorCritic`; `act` never changes the network (the trainer updates it in between)."""

    def __init__(self, module: ActorCritic, digest: str) -> None:
        self.module, self.digest = module, digest

    @property
    def arch(self) -> PolicyArch:
        return self.module.arch

    def act(
        self, obs: Observation, rng: np.random.Generator, sample: bool
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Edge weights w[s, t] (n, n; zero diagonal) and the record of the action: drawn from the
        policy with `rng` when `sample`, else the distribution's mean (no draw)."""
        head_kind = self.arch.head
        dist, value = self._policy(obs)
        with torch.no_grad():
            action = draw(dist, head_kind, rng) if sample else dist.mean.numpy().astype(np.float32)
            logp = float(dist.log_prob(torch.from_numpy(action)).sum())
            entropy = float(dist.entropy().sum())
        src, tgt = edge_index(obs.n)
        weights = np.zeros((obs.n, obs.n), dtype=np.float64)
        weights[src, tgt] = to_weights(head_kind, action.astype(np.float64))
        record = {"action": action, "logp": logp, "value": value, "entropy": entropy}
        return weights, record

    def _policy(self, obs: Observation) -> tuple[Any, float]:
        """The action distribution at `obs` and the value estimate (no gradient)."""
        with torch.no_grad():
            head, value = self.module(
                torch.from_numpy(obs.agents)[None],
                torch.from_numpy(obs.pairs)[None],
                torch.from_numpy(obs.glob)[None],
            )
            return self.module.distribution(head[0]), float(value[0])

    def gates(self, obs: Observation) -> tuple[np.ndarray, np.ndarray, float, Any]:
        """A `bernoulli` head's probabilities: w[s, t] that s's response reaches t (n, n; zero
        diagonal), p[t] that t speaks (n,), the value estimate, and the distribution (for `score`)."""
        dist, value = self._policy(obs)
        assert isinstance(dist, Bernoulli), "gates: a policy with the bernoulli head"
        probs = dist.probs.numpy().astype(np.float64)
        n = obs.n
        src, tgt = edge_index(n)
        weights = np.zeros((n, n), dtype=np.float64)
        weights[src, tgt] = probs[: len(src)]
        return weights, probs[len(src) :], value, dist

    @staticmethod
    def score(dist: Any, action: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
        """(log-probability, entropy) of `action` under `dist`, summed over the parts `mask` keeps."""
        with torch.no_grad():
            m = torch.from_numpy(mask)
            logp = float((dist.log_prob(torch.from_numpy(action)) * m).sum())
            entropy = float((dist.entropy() * m).sum())
        return logp, entropy


_BUILT: dict[tuple[str, Any], Controller] = {}


def one_thread() -> None:
    """A network this small runs fastest on one thread: more threads only spin against the engines
    and each other (measured on the 2-core machine under load: 20 ms per `act` with 2, 0.9 ms with 1)."""
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def controller_for(ref: str, init_seed: int = 0) -> Controller:
    """The controller of checkpoint `ref` (a path or registered URI), or, for `ref == ""`, the
    untrained policy of the default architecture initialised from `init_seed`."""
    one_thread()
    if ref:
        ck = checkpoint.load(ref)
        key: tuple[str, Any] = ("checkpoint", ck.digest)
        if key not in _BUILT:
            module = ActorCritic(PolicyArch.from_dict(ck.arch))
            load_weights(module, ck.weights)
            _BUILT[key] = Controller(module.eval(), ck.digest)
        return _BUILT[key]
    key = ("init", init_seed)
    if key not in _BUILT:
        _BUILT[key] = Controller(build(PolicyArch(), init_seed).eval(), f"init-{init_seed}")
    return _BUILT[key]
