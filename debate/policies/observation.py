"""RUMAD's content-agnostic observation (`specs/methods.md` §RUMAD): what the controller sees before
round r, computed from the finished rounds' views and decisions only. Answers are compared for
equality and never read; no reasoning text enters.

Per agent i (`AGENT_FEATURES` columns, on the state after round r-1):
  0 confidence (c - 1) / 4            1 holds an answer
  2 its answer's cluster share        3 holds the majority vote
  4 changed its answer in round r-1   5 activations so far / debate rounds so far
  6 spoke in round r-1                7 mean confidence of its cluster, scaled like 0
  8 confidence change in round r-1, / 4
Per ordered pair: agree[s, t] = 1 when s and t hold the same answer (0 on the diagonal).
Global (`GLOBAL_FEATURES`): 0 r / horizon; 1 budget left / B (1 without a budget); 2 answer entropy /
log2 n; 3 plurality share; 4 distinct answers / n; 5 mean confidence, scaled.

Everything here is equivariant: relabelling the agents permutes the rows (and the pair matrix) and
leaves the global features alone (tested).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from debate.state import DebateState
from debate.vote import majority_vote

AGENT_FEATURES = 9
GLOBAL_FEATURES = 6


@dataclass(frozen=True)
class Observation:
    """One round's observation: `agents` (n, AGENT_FEATURES), `pairs` (n, n), `glob` (GLOBAL_FEATURES,)."""

    agents: np.ndarray
    pairs: np.ndarray
    glob: np.ndarray

    @property
    def n(self) -> int:
        return int(self.agents.shape[0])

    def as_record(self) -> dict[str, Any]:
        return {"agents": self.agents, "pairs": self.pairs, "global": self.glob}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Observation:
        """The observation a decision record holds (arrays, or the lists of its stored JSON)."""
        f = np.float32
        return cls(
            np.asarray(record["agents"], f), np.asarray(record["pairs"], f), np.asarray(record["global"], f)
        )


def activations(state: DebateState) -> np.ndarray:
    """How often each agent has spoken in the debate rounds so far (round 0 not counted)."""
    counts = np.zeros(state.n, dtype=np.int64)
    for decision in state.decisions[1:]:
        if decision is not None:
            counts[list(decision.active_agents())] += 1
    return counts


def agreement(answers: tuple[str | None, ...]) -> np.ndarray:
    """agree[s, t] = 1 when s != t hold the same (non-missing) answer."""
    n = len(answers)
    out = np.zeros((n, n), dtype=np.float32)
    for s in range(n):
        for t in range(n):
            out[s, t] = float(s != t and answers[s] is not None and answers[s] == answers[t])
    return out


def entropy_bits(answers: tuple[str | None, ...]) -> float:
    """Entropy (bits) of the shares of the agents' answers; missing answers left out; none: 0."""
    votes = Counter(a for a in answers if a is not None)
    total = sum(votes.values())
    return -sum(v / total * math.log2(v / total) for v in votes.values()) if total else 0.0


def observe(state: DebateState, budget: int | None, horizon: int) -> Observation:
    """The observation before round `state.round`; `budget`: B, or None when activation is unlimited."""
    n, r = state.n, state.round
    answers, conf = state.answers(), np.asarray(state.confidences(), dtype=np.float32)
    before = state.answers(-2) if r >= 2 else answers
    conf_before = np.asarray(state.confidences(-2), dtype=np.float32) if r >= 2 else conf
    agree = agreement(answers)
    holds = np.array([a is not None for a in answers], dtype=np.float32)
    cluster = (agree.sum(axis=1) + 1) * holds  # itself included
    scaled = (conf - 1) / 4
    cluster_conf = np.where(holds > 0, (agree @ scaled + scaled) / np.maximum(cluster, 1), scaled)
    vote = majority_vote(answers, state.confidences())
    last = state.decisions[-1] if state.decisions else None
    spoke = np.ones(n, np.float32) if last is None else np.isin(np.arange(n), last.active_agents())
    used = activations(state)
    agents = np.stack(
        [
            scaled,
            holds,
            cluster / n,
            np.array([a is not None and a == vote for a in answers], dtype=np.float32),
            np.array([a != b for a, b in zip(answers, before, strict=True)], dtype=np.float32),
            used / max(1, r - 1),
            spoke.astype(np.float32),
            cluster_conf,
            (conf - conf_before) / 4,
        ],
        axis=1,
    ).astype(np.float32)
    left = 1.0 if budget is None else (max(0, budget - int(used.sum())) / budget if budget else 0.0)
    distinct = len({a for a in answers if a is not None})
    glob = np.array(
        [
            r / max(1, horizon),
            left,
            entropy_bits(answers) / math.log2(n) if n > 1 else 0.0,
            float(cluster.max()) / n if n else 0.0,
            distinct / n,
            float(scaled.mean()),
        ],
        dtype=np.float32,
    )
    return Observation(agents, agree, glob)
