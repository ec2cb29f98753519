"""Baseline routers: fixed topologies every round, and uniformly random in-degree-k graphs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from debate.decision import Decision, everyone
from debate.graph import Graph
from debate.registry import method
from debate.state import DebateState

TOPOLOGIES = {
    "clique": Graph.clique,
    "star": Graph.star,
    "ring": Graph.ring,
    "chain": Graph.chain,
    "zero": Graph.zero,
}


@method("fixed", summary="one graph every round: clique, star, ring, chain or zero")
@dataclass(frozen=True)
class FixedRouter:
    """The same topology every round: clique (Full-Debate), star (hub = agent 0), ring, chain, zero."""

    topology: str = "clique"
    LABEL: ClassVar[tuple[str, ...]] = ("topology",)

    def __post_init__(self) -> None:
        if self.topology not in TOPOLOGIES:
            raise ValueError(f"unknown topology '{self.topology}'; known: {', '.join(TOPOLOGIES)}")

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        return everyone(TOPOLOGIES[self.topology](state.n))


@method("random", summary="each agent sees k random peers, redrawn every round")
@dataclass(frozen=True)
class RandomRouter:
    """Each target draws `k` distinct sources uniformly from the other agents, afresh every round
    (PEAR's random baseline). `k` is capped at n-1."""

    k: int = 2
    LABEL: ClassVar[tuple[str, ...]] = ("k",)

    def __post_init__(self) -> None:
        if self.k < 0:
            raise ValueError(f"random router: k must be >= 0, got {self.k}")

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        n, k = state.n, min(self.k, state.n - 1)
        edges = []
        for t in range(n):
            others = [s for s in range(n) if s != t]
            for s in rng.choice(others, size=k, replace=False) if k else []:
                edges.append((int(s), t))
        return everyone(Graph(n, edges))
