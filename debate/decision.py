"""A router's decision for one debate round, kept by the state for every round.

A decision says who sees whom (the graph), how much each visible source matters (optional per-edge
weights, shown by the `rumad` prompt family as importance), who speaks (the active set: only active
agents make calls; the others keep their answer at zero cost), how long each speaker may write
(optional per-agent output caps, taken as `min(cap, seat max_tokens)`), whose own previous response
is left out of their `update` prompt (`hidden_own`: CPP prunes an agent's own response too), and,
for learned policies, a free-form record (observation, action, log-probability, value, entropy, ...)
that trainers read back. Record keys starting with `_` stay in memory (a trainer's tensors) and are
not stored.

An edge into an agent outside the active set delivers nothing (that agent makes no call); under
`critique_revise` an inactive source writes no critique either. Routers that want the stored graph to
show only what was delivered emit only those edges.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from actors.frozen import quick_init
from debate.graph import Graph

MAX_RECORD_JSON_CHARS = 200_000  # a record stored in Parquet is cut off here (a policy's observation)


@quick_init
@dataclass(frozen=True)
class Decision:
    """One round's routing decision. `active=None` means every agent speaks."""

    graph: Graph
    weights: Mapping[tuple[int, int], float] | None = None  # (source, target) -> weight in [0, 1]
    active: frozenset[int] | None = None
    max_tokens: Mapping[int, int] | None = None  # agent -> output cap for this round
    record: Mapping[str, Any] = field(default_factory=dict)
    hidden_own: frozenset[int] = frozenset()  # agents whose own previous response they do not see

    def __post_init__(self) -> None:
        n = self.graph.n
        if self.active is not None:
            object.__setattr__(self, "active", frozenset(int(a) for a in self.active))
            bad = [a for a in self.active if not 0 <= a < n]
            if bad:
                raise ValueError(f"decision: active agents {sorted(bad)} outside 0..{n - 1}")
        if self.weights is not None:
            stray = set(self.weights) - self.graph.edges
            if stray:
                raise ValueError(f"decision: weights for edges not in the graph: {sorted(stray)[:4]}")
            if any(not math.isfinite(w) for w in self.weights.values()):
                raise ValueError("decision: edge weights must be finite")
        object.__setattr__(self, "hidden_own", frozenset(int(a) for a in self.hidden_own))
        if any(not 0 <= a < n for a in self.hidden_own):
            raise ValueError(f"decision: hidden_own agents outside 0..{n - 1}: {sorted(self.hidden_own)}")
        if self.max_tokens is not None:
            bad_caps = {a: c for a, c in self.max_tokens.items() if not 0 <= a < n or int(c) < 1}
            if bad_caps:
                raise ValueError(f"decision: output caps must be >= 1 for agents 0..{n - 1}: {bad_caps}")

    @property
    def n(self) -> int:
        return self.graph.n

    def speaks(self, agent: int) -> bool:
        """Whether `agent` makes a call this round."""
        return self.active is None or agent in self.active

    def active_agents(self) -> tuple[int, ...]:
        return tuple(range(self.n)) if self.active is None else tuple(sorted(self.active))

    def weights_for(self, target: int) -> dict[int, float] | None:
        """source -> weight of the edges into `target`, or None when the router gave no weights."""
        if self.weights is None:
            return None
        return {s: float(w) for (s, t), w in self.weights.items() if t == target}

    def cap(self, agent: int, seat_max_tokens: int) -> int:
        """The output limit of `agent`'s calls this round."""
        if self.max_tokens is None or agent not in self.max_tokens:
            return seat_max_tokens
        return min(int(self.max_tokens[agent]), seat_max_tokens)

    def row(self) -> dict[str, Any]:
        """The decision as columns of the `rounds/` table (edges in sorted order)."""
        edges = self.graph.sorted_edges()
        return {
            "active": list(self.active_agents()),
            "edge_src": [s for s, _ in edges],
            "edge_tgt": [t for _, t in edges],
            "edge_weight": None if self.weights is None else [float(self.weights.get(e, 0.0)) for e in edges],
            "max_tokens": None
            if self.max_tokens is None
            else [int(self.max_tokens[a]) if a in self.max_tokens else None for a in range(self.n)],
            "decision": record_json(self.record) if self.record else None,
        }


def everyone(graph: Graph) -> Decision:
    """The decision of a router that only picks a graph: everyone speaks, no weights, no caps."""
    return Decision(graph)


def _plain(value: Any) -> Any:
    """numpy scalars/arrays and tuples as JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Iterable) and not isinstance(value, str | bytes):
        return [_plain(v) for v in value]
    return value


def record_json(record: Mapping[str, Any]) -> str:
    """A learned policy's record as compact JSON, cut at `MAX_RECORD_JSON_CHARS`; keys starting with
    `_` (in-memory only) are left out."""
    kept = {k: v for k, v in record.items() if not str(k).startswith("_")}
    text = json.dumps(_plain(kept), sort_keys=True, separators=(",", ":"), default=str)
    return text[:MAX_RECORD_JSON_CHARS]
