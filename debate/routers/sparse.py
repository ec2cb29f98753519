"""The sparse baselines of RUMAD's Table 2, and random activation at a budget (RUMAD's control):

- `smad` — sparse MAD (Li et al. 2024, "Improving Multi-Agent Debate with Sparse Communication
  Topology"): every agent speaks every round but sees only its neighbours in a fixed sparse topology:
  `star` (the hub sees every agent and every agent sees the hub; Table 2's S-MAD*) or `ring` (agent i
  sees the `degree` nearest agents on each side, i±1 .. i±degree mod n; Table 2's S-MAD°). Unlike
  `fixed(topology=ring)`, which is directed (i sees i-1 only), the ring here is undirected, as theirs.
- `gd` — group debate (Liu et al. 2024, "GroupDebate"): agents are split into groups of `group_size`
  consecutive seats (the last may be smaller) that debate inside; every `exchange_every`-th round the
  groups exchange summaries, so each agent also sees one response per other group. Departure: the
  paper's summaries are written by an extra LLM call; the `update` protocol has no such call, so a
  group's summary here is the response of its most confident agent holding the group's majority
  answer (ties: the lower index) — the group's position, at no extra cost.
- `random_activation` — RUMAD's budget without its policy: each round min(`per_round`, budget left)
  agents drawn uniformly speak, each seeing `k` other agents drawn uniformly (k >= n - 1: everyone);
  the total never exceeds `budget` activations after round 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from debate.decision import Decision, everyone
from debate.graph import Graph
from debate.policies.observation import activations
from debate.registry import method
from debate.state import DebateState
from debate.vote import majority_vote

STRUCTURES = ("star", "ring")


def ring_edges(n: int, degree: int) -> set[tuple[int, int]]:
    """Agent i sees i±1 .. i±degree (mod n), never itself."""
    return {
        ((t + d) % n, t) for t in range(n) for k in range(1, degree + 1) for d in (k, -k) if (t + d) % n != t
    }


@method("smad", summary="sparse MAD: a fixed star or undirected ring")
@dataclass(frozen=True)
class SparseRouter:
    """Sparse MAD: a fixed star or undirected ring (see the module docstring)."""

    structure: str = "star"
    degree: int = 1
    hub: int = 0
    LABEL: ClassVar[tuple[str, ...]] = ("structure",)

    def __post_init__(self) -> None:
        if self.structure not in STRUCTURES:
            raise ValueError(
                f"smad: structure must be one of {', '.join(STRUCTURES)}, got '{self.structure}'"
            )
        if self.degree < 1 or self.hub < 0:
            raise ValueError("smad: degree must be >= 1 and hub >= 0")

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        n = state.n
        if self.structure == "star":
            return everyone(Graph.star(n, self.hub % n))
        return everyone(Graph(n, ring_edges(n, self.degree)))


def groups_of(n: int, size: int) -> list[list[int]]:
    """Consecutive seats in groups of `size` (the last may be smaller)."""
    return [list(range(i, min(n, i + size))) for i in range(0, n, size)]


def delegate(state: DebateState, group: list[int]) -> int:
    """The agent whose response stands for `group`'s summary: the most confident holder of the
    group's majority answer (ties: the lower index; no answers at all: the first seat)."""
    answers, conf = state.answers(), state.confidences()
    vote = majority_vote([answers[i] for i in group], [conf[i] for i in group])
    holders = [i for i in group if answers[i] == vote] or group
    return min(holders, key=lambda i: (-conf[i], i))


@method("gd", summary="debate in groups, summaries between groups")
@dataclass(frozen=True)
class GroupDebate:
    """Group debate: debate inside groups, summaries between groups (see the module docstring)."""

    group_size: int = 3
    exchange_every: int = 2
    LABEL: ClassVar[tuple[str, ...]] = ("group_size",)

    def __post_init__(self) -> None:
        if self.group_size < 1 or self.exchange_every < 1:
            raise ValueError("gd: group_size and exchange_every must be >= 1")

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        groups = groups_of(state.n, self.group_size)
        edges = {(s, t) for g in groups for s in g for t in g if s != t}
        if state.round % self.exchange_every == 0:
            for g in groups:
                summary = delegate(state, g)
                edges |= {(summary, t) for other in groups if other is not g for t in other}
        return everyone(Graph(state.n, edges))


@method("random_activation", summary="random speakers within a budget (RUMAD's control)")
@dataclass(frozen=True)
class RandomActivation:
    """Random speakers within an activation budget (see the module docstring)."""

    budget: int = 12
    per_round: int = 2
    k: int = 5
    LABEL: ClassVar[tuple[str, ...]] = ("budget",)

    def __post_init__(self) -> None:
        if self.budget < 0 or self.per_round < 0 or self.k < 0:
            raise ValueError("random_activation: budget, per_round and k must be >= 0")

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        n = state.n
        left = max(0, self.budget - int(activations(state).sum()))
        speakers = rng.choice(n, size=min(self.per_round, left, n), replace=False)
        k = min(self.k, n - 1)
        edges = []
        for t in sorted(int(x) for x in speakers):
            others = [s for s in range(n) if s != t]
            edges += [(int(s), t) for s in rng.choice(others, size=k, replace=False)] if k else []
        return Decision(Graph(n, edges), active=frozenset(int(x) for x in speakers))
