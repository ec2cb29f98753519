"""A round's communication graph: directed edges `source -> target` meaning "target sees source"."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Graph:
    """Who sees whom in one round. Invariants (checked at construction): every endpoint is an agent
    index in `[0, n)`, and there are no self-loops — an agent always sees its own previous answer, so
    a self-edge would only double-count it."""

    n: int
    edges: frozenset[tuple[int, int]]

    def __init__(self, n: int, edges: Iterable[tuple[int, int]] = ()) -> None:
        if n < 1:
            raise ValueError(f"a graph needs at least one agent, got n={n}")
        frozen = frozenset((int(s), int(t)) for s, t in edges)
        for s, t in frozen:
            if not (0 <= s < n and 0 <= t < n):
                raise ValueError(f"edge {s}->{t} names an agent outside 0..{n - 1}")
            if s == t:
                raise ValueError(f"self-loop {s}->{t}: an agent always sees its own previous answer")
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "edges", frozen)

    def sources(self, target: int) -> tuple[int, ...]:
        """The agents `target` sees, in index order (a stable prompt order)."""
        return tuple(sorted(s for s, t in self.edges if t == target))

    def targets(self, source: int) -> tuple[int, ...]:
        return tuple(sorted(t for s, t in self.edges if s == source))

    def in_degree(self, agent: int) -> int:
        return sum(1 for _, t in self.edges if t == agent)

    def out_degree(self, agent: int) -> int:
        return sum(1 for s, _ in self.edges if s == agent)

    def relabel(self, perm: Iterable[int]) -> Graph:
        """The same graph with agent `i` renamed `perm[i]`."""
        p = list(perm)
        if sorted(p) != list(range(self.n)):
            raise ValueError(f"{p} is not a permutation of 0..{self.n - 1}")
        return Graph(self.n, ((p[s], p[t]) for s, t in self.edges))

    def sorted_edges(self) -> list[tuple[int, int]]:
        return sorted(self.edges)

    # -- the fixed topologies ------------------------------------------------------------------
    @classmethod
    def clique(cls, n: int) -> Graph:
        """Everyone sees everyone (Full-Debate, Du et al.)."""
        return cls(n, ((s, t) for s in range(n) for t in range(n) if s != t))

    @classmethod
    def star(cls, n: int, hub: int = 0) -> Graph:
        """The hub sees every leaf and every leaf sees the hub."""
        return cls(n, [e for i in range(n) if i != hub for e in ((hub, i), (i, hub))])

    @classmethod
    def ring(cls, n: int) -> Graph:
        """A directed cycle: agent i sees agent i-1 (mod n). Needs n >= 2 to have edges."""
        return cls(n, (((i - 1) % n, i) for i in range(n) if n > 1))

    @classmethod
    def chain(cls, n: int) -> Graph:
        """A directed path: agent i sees agent i-1; agent 0 sees nobody."""
        return cls(n, ((i - 1, i) for i in range(1, n)))

    @classmethod
    def zero(cls, n: int) -> Graph:
        """No edges: each agent only refines its own answer."""
        return cls(n, ())
