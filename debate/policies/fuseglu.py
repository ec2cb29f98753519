"""CPP's pruning network (torch; `specs/methods.md` §CPP, the paper's eq. 1-2), exactly as written:

    Fuse(x, y) = Norm(x + SiLU(W_d [SiLU(W_g (x + y)) * W_u y]))      x, y layer-normed first
    p(keep j -> i) = sigmoid(w_s . Fuse(Fuse(e_i, q_ij), r_j))

e_i is agent i's behaviour embedding (a trained parameter, one row per seat, initialised from the
encoded validation responses of that seat when training starts), q_ij the encoded query (the question
and the responses i already kept this round), r_j the encoded candidate response. The encoder itself
is frozen (not part of the network). W_g, W_u, W_d and w_s have no bias (the paper writes none); w_s
starts near zero, so the untrained policy keeps each response with probability about 1/2.

With `arch.author_seat` (ours, off by default) the candidate's encoding also carries a trained
embedding of its author's seat, r_j + a_seat(j), before it is fused: the policy can learn whom to
keep, as a rule told the seats can. The embeddings start at zero, so an untrained network keeps as
the one without them does. With `arch.seat_trust` (ours, off by default) the keep logit also carries
a trained bias per (reader, author) pair of seats, sqrt(dim) * T[i, j]: a trust matrix, learned
directly rather than through the fusion blocks, so each reader's trust in each author moves with that
pair's own gradient. It too starts at zero. With `arch.confidence_cues` (ours, off by default) the
logit carries a trained bias per cell of the cues `confidence_keep` reads, sqrt(dim) * C[own, same,
c_i, c_j] (own response or a peer's, same answer as the reader's or not, the reader's and the
author's stated confidence): every such rule is one setting of the table. It starts at zero. With
`arch.author_bias` (ours, off by default) the logit carries a trained bias per author seat,
sqrt(dim) * b[j], the same for every reader: what one reader learns of an author moves every reader's
keep of it, where the trust matrix moves one pair and a reader whose keep has saturated there cannot
learn (its gradient vanishes with 1 - p). It starts at zero.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from debate.policies import checkpoint
from debate.policies.pruning import CUES, PruningArch


class Fuse(nn.Module):
    """One FuseGLU block (eq. 1): main input x, fused input y."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.norm_x, self.norm_y, self.norm_out = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.w_g = nn.Linear(dim, hidden, bias=False)
        self.w_u = nn.Linear(dim, hidden, bias=False)
        self.w_d = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x, y = self.norm_x(x), self.norm_y(y)
        act = nn.functional.silu
        return self.norm_out(x + act(self.w_d(act(self.w_g(x + y)) * self.w_u(y))))


class PruningNet(nn.Module):
    """Behaviour embeddings, the two fusion blocks and the score (eq. 2)."""

    def __init__(self, arch: PruningArch) -> None:
        super().__init__()
        self.arch = arch
        self.behaviour = nn.Parameter(torch.zeros(arch.n_agents, arch.dim))
        self.fuse_query = Fuse(arch.dim, arch.hidden)
        self.fuse_response = Fuse(arch.dim, arch.hidden)
        self.w_s = nn.Linear(arch.dim, 1, bias=False)
        if arch.author_seat:  # zeros, and no draw from the seeded generator: the other weights as without
            self.author = nn.Parameter(torch.zeros(arch.n_agents, arch.dim))
        if arch.seat_trust:  # zeros, as the seat embeddings
            self.trust = nn.Parameter(torch.zeros(arch.n_agents, arch.n_agents))
        if arch.confidence_cues:  # zeros, as the seat embeddings
            self.cues = nn.Parameter(torch.zeros(*CUES))
        if arch.author_bias:  # zeros, as the seat embeddings
            self.author_bias = nn.Parameter(torch.zeros(arch.n_agents))

    def forward(
        self,
        agents: torch.Tensor,
        q: torch.Tensor,
        r: torch.Tensor,
        authors: torch.Tensor | None = None,
        cues: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Keep logits (B,) for agents (B,) int, queries (B, dim), candidates (B, dim) written by
        `authors` (B,) int (read only with `arch.author_seat`, `seat_trust` or `author_bias`, then required),
        with `cues` (B, 4) int (`pruning.cues_of`; read only with `arch.confidence_cues`, then required)."""
        seats = self.arch.author_seat or self.arch.seat_trust or self.arch.author_bias
        if seats and authors is None:
            raise ValueError(
                "cpp policy: author_seat, seat_trust and author_bias need each candidate's author seat"
            )
        if self.arch.confidence_cues and cues is None:
            raise ValueError("cpp policy: confidence_cues needs each decision's cues")
        if not self.arch.content:  # no text read: a table over the seat and cue features
            q, r = torch.zeros_like(q), torch.zeros_like(r)
        if self.arch.author_seat:
            r = r + self.author[authors]
        h = self.fuse_response(self.fuse_query(self.behaviour[agents], q), r)
        logits = self.w_s(h).squeeze(-1)
        # Biases scaled by sqrt(dim): an Adam step moves w_s by about lr * sqrt(dim) in norm, and so the
        # logit through the layer-normed h (norm sqrt(dim)) by about lr * dim; an unscaled bias moves by
        # lr and could not catch up once a shared keep-everything direction saturates
        # (tests/test_cpp_seat_features.py).
        if self.arch.seat_trust:
            logits = logits + math.sqrt(self.arch.dim) * self.trust[agents, authors]
        if self.arch.author_bias:
            logits = logits + math.sqrt(self.arch.dim) * self.author_bias[authors]
        if self.arch.confidence_cues:
            assert cues is not None
            logits = (
                logits + math.sqrt(self.arch.dim) * self.cues[cues[:, 0], cues[:, 1], cues[:, 2], cues[:, 3]]
            )
        return logits


def build(arch: PruningArch, seed: int, behaviour: np.ndarray | None = None) -> PruningNet:
    """A fresh network from `seed`; `behaviour` (n_agents, dim) initialises the embeddings (else
    seeded normal draws)."""
    gen = torch.Generator().manual_seed(int(seed))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        net = PruningNet(arch)
    with torch.no_grad():
        nn.init.normal_(net.w_s.weight, std=0.01, generator=gen)
        init = (
            torch.randn(arch.n_agents, arch.dim, generator=gen)
            if behaviour is None
            else torch.as_tensor(behaviour)
        )
        net.behaviour.copy_(init.float())
    return net


def weights_of(net: PruningNet) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy().copy() for k, v in net.state_dict().items()}


def load_weights(net: PruningNet, weights: dict[str, np.ndarray]) -> None:
    net.load_state_dict({k: torch.from_numpy(np.asarray(v).copy()) for k, v in weights.items()})


class Pruner:
    """A network ready to route: keep probabilities for a batch of (agent, query, candidate)."""

    def __init__(self, net: PruningNet, digest: str) -> None:
        self.net, self.digest = net, digest

    @property
    def arch(self) -> PruningArch:
        return self.net.arch

    def probs(
        self,
        agents: np.ndarray,
        q: np.ndarray,
        r: np.ndarray,
        authors: np.ndarray,
        cues: np.ndarray | None = None,
    ) -> np.ndarray:
        """Keep probabilities: agent `agents[b]` on candidate `r[b]`, written by seat `authors[b]`, with
        the decision's confidence cues `cues[b]` (read only with `arch.confidence_cues`)."""
        with torch.no_grad():
            logits = self.net(
                torch.as_tensor(agents, dtype=torch.long),
                torch.as_tensor(q),
                torch.as_tensor(r),
                torch.as_tensor(authors, dtype=torch.long),
                None if cues is None else torch.as_tensor(cues, dtype=torch.long),
            )
        return torch.sigmoid(logits).numpy().astype(np.float64)


_BUILT: dict[tuple[Any, ...], Pruner] = {}


def pruner_for(ref: str, init_seed: int, encoder: str, n: int, author_tag: bool = True) -> Pruner:
    """The policy of checkpoint `ref`, or (`ref == ""`) the untrained one for n seats from `init_seed`,
    reading responses with their author when `author_tag`."""
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)  # a small network beside the engines: one thread is fastest
    if ref:
        ck = checkpoint.load(ref)
        key: tuple[Any, ...] = ("checkpoint", ck.digest)
        if key not in _BUILT:
            try:
                arch = PruningArch.from_dict(ck.arch)
            except (ValueError, TypeError) as e:
                raise checkpoint.CheckpointError(f"checkpoint '{ref}': {e}") from None
            net = PruningNet(arch)
            load_weights(net, ck.weights)
            _BUILT[key] = Pruner(net.eval(), ck.digest)
        return _BUILT[key]
    key = ("init", init_seed, encoder, n, author_tag)
    if key not in _BUILT:
        arch = PruningArch(n, encoder=encoder, author_tag=author_tag)
        _BUILT[key] = Pruner(build(arch, init_seed).eval(), f"init-{init_seed}")
    return _BUILT[key]
