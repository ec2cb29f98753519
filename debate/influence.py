"""PEAR's influence rho (`papers/pear.txt` §4; `debate.routers.pear` item 5): how much each agent's
answers are taken up by the agents it reaches. The PEAR router scores candidates with it; diagnostics
report its entropy for every method, with the rule a PEAR decision record names or the default rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from debate.state import DebateState


@dataclass(frozen=True)
class InfluenceRule:
    """How rho evolves (`debate.routers.pear`, item 5). Diagnostics use it for every method."""

    beta: float = 0.6
    mode: str = "adoption"  # | "accept"
    rho_init: str = "uniform"  # | "zero"
    adopt_missing: bool = False  # the authors' code: no answer after "adopts" a source with none

    def __post_init__(self) -> None:
        if not 0.0 <= self.beta <= 1.0:
            raise ValueError(f"pear: beta must be in [0, 1], got {self.beta}")
        if self.mode not in ("adoption", "accept"):
            raise ValueError(f"pear: influence must be 'adoption' or 'accept', got '{self.mode}'")
        if self.rho_init not in ("uniform", "zero"):
            raise ValueError(f"pear: rho_init must be 'uniform' or 'zero', got '{self.rho_init}'")


def rule_of(state: DebateState) -> InfluenceRule:
    """The influence rule the state's decisions name (a PEAR router records its own), else the default."""
    for d in state.decisions:
        given = d.record.get("influence") if d is not None else None
        if isinstance(given, dict):
            return InfluenceRule(**given)
    return InfluenceRule()


def _shares(state: DebateState, r: int, rule: InfluenceRule) -> np.ndarray:
    """a_s for round r: adoption of s's previous answer, or acceptance of s's critiques."""
    graph, n = state.graphs[r], state.n
    out = np.zeros(n)
    if graph is None:
        return out
    before, after = state.views[r - 1], state.views[r]
    verdicts = {t.agent: t.extra.get("verdicts", {}) for t in state.turns[r] if t.phase == "revise"}
    for s in range(n):
        targets = graph.targets(s)
        if not targets:
            continue
        if rule.mode == "accept":
            hits = sum(verdicts.get(t, {}).get(s) == "ACCEPT" for t in targets)
        else:
            y = before[s].answer
            hits = sum((y is not None or rule.adopt_missing) and after[t].answer == y for t in targets)
        out[s] = hits / len(targets)
    return out


def influence_history(state: DebateState, rule: InfluenceRule) -> list[np.ndarray]:
    """rho after each finished round (index = round; rho^0 first)."""
    n = state.n
    rho = np.full(n, 1.0 / n) if rule.rho_init == "uniform" else np.zeros(n)
    history = [rho]
    for r in range(1, state.round):
        rho = rule.beta * rho + (1.0 - rule.beta) * _shares(state, r, rule)
        history.append(rho)
    return history
