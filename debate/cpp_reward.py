"""CPP's keep/prune reward and its returns (`specs/methods.md` §CPP; the paper's Table 1 and
appendix A), pure functions of an episode's trajectory (`debate.trajectory`): one episode can be
scored under any coefficients, which is what lets a study tune them.

Actions. In debate round t (1..T) agent i decides, in its fixed order `order(i, n)` (itself first,
then the others by index), whether to keep each previous-round response; action (t, i, k) is its
k-th decision, on candidate `order(i, n)[k]`. The router's decision record holds them
(`record["keep"][i][k] = [candidate, kept, p]`).

Reward (Table 1), with +/- = agent i correct before (end of round t-1) / after (end of round t) and
the round's scale a_t = a * round_scale**(t - 1) (the paper: a = 1.0 in round 1, 1.5 in round 2):

    keep:  ++ -> k * a_t    +- -> -2 a_t                 -+ -> 2 a_t                 -- -> -a_t / (N - 1)
    prune: ++ -> a_t        +- -> -2 a_t * prune_flip    -+ -> 2 a_t * prune_flip    -- -> -a_t / (N - 1)

Our reading where the paper is silent: an agent writes one reply per round, after all its decisions,
so every decision of (t, i) shares that round's before/after pair — unless `states` gives the agent's
answer after each decision (`debate.action_states`, the paper's "before and after an action"). Table 1 leaves prune on a flip
blank; `prune_flip` fills it: 1 (default) credits or blames a flip to whatever the agent decided —
pruning its own right answer can break it as surely as keeping a wrong one — so keep and prune differ
only where the answer stayed right (k * a_t against a_t: k is the sparsity knob, as in the paper's
ablation); 0 credits flips to kept responses only.

Return (appendix A, Table 8). Action (t, i, k) influences its own later decisions in round t
(weight gamma**(k' - k) for k' >= k) and, through agent i's reply in round t, every decision of round
t + 1 that comes at or after candidate i in its agent's order (weight beta * gamma**k', k' the
dependent decision's own position); those change every agent's round-(t + 1) reply, so every
decision of each later round t' depends on it (beta**(t' - t) * gamma**k'). This reproduces the
paper's 3 x 3 table exactly (tests/test_cpp_reward.py) and generalises it to N agents x T rounds.
G = D r, with D the dependency matrix of `dependencies`.

Two terms of ours, off by default (0: the paper's return exactly, and a config without them has the
fingerprint it had): `final` adds final * a to every action's return when the debate's final vote is
right — the team's accuracy, which Table 1 reaches only through each agent's own before and after;
`keep_cost` subtracts keep_cost * a_t from the return of every response kept in round t — the prompt
tokens it costs its reader, which Table 1 prices only through k. Both enter the return directly, not
through D (a later action's keep is not an earlier one's cost), and the episode's total reward.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from common.added import without_added
from debate.trajectory import RoundRecord


@dataclass(frozen=True)
class CppReward:
    """Table 1's coefficients, the round scale's growth, and the return's discounts (ours: the paper
    gives no beta, gamma values)."""

    k: float = 1.0
    a: float = 1.0
    round_scale: float = 1.5
    beta: float = 0.9
    gamma: float = 0.9
    prune_flip: float = 1.0
    final: float = 0.0  # ours: the final vote's correctness in every action's return (module docstring)
    keep_cost: float = 0.0  # ours: a kept response's cost in its own return
    # came after the first protocols and checkpoints: out of `to_dict` at these values
    ADDED: ClassVar[dict[str, Any]] = {"final": 0.0, "keep_cost": 0.0}

    def __post_init__(self) -> None:
        for f in fields(self):  # getattr below: the dataclass's own fields, one check for each
            if not np.isfinite(getattr(self, f.name)):
                raise ValueError(f"reward: {f.name} must be a finite number, got {getattr(self, f.name)}")
        if not -1.0 <= self.k <= 1.0:
            raise ValueError(f"reward: k must be in [-1, 1], got {self.k}")
        if self.a <= 0 or self.round_scale <= 0:
            raise ValueError("reward: a and round_scale must be > 0")
        for name in ("beta", "gamma"):  # own fields, by name
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"reward: {name} must be in [0, 1], got {getattr(self, name)}")
        for name in ("final", "keep_cost"):
            if getattr(self, name) < 0:
                raise ValueError(f"reward: {name} must be >= 0, got {getattr(self, name)}")

    def scale(self, t: int) -> float:
        """a_t, the reward scale of debate round t >= 1."""
        return self.a * self.round_scale ** (t - 1)

    def to_dict(self) -> dict[str, float]:
        """Every coefficient, less the ADDED ones at their defaults."""
        return without_added(asdict(self), self.ADDED)


def order(i: int, n: int) -> tuple[int, ...]:
    """Agent i's decision order: itself first, then the others by index (Table 8's A[1][.]: 1, 0, 2)."""
    return (i, *(j for j in range(n) if j != i))


def action_reward(kept: bool, before: bool, after: bool, scale: float, n: int, w: CppReward) -> float:
    """Table 1 for one action (see the module docstring)."""
    if before and after:
        return w.k * scale if kept else scale
    if not before and not after:
        return -scale / max(1, n - 1)
    flip = 2 * scale if after else -2 * scale
    return flip if kept else w.prune_flip * flip


def index(t: int, i: int, k: int, n: int) -> int:
    """The flat index of action (t, i, k), t from 1: round-major, then agent, then position."""
    return ((t - 1) * n + i) * n + k


@lru_cache(maxsize=64)
def _dependencies(n: int, rounds: int, beta: float, gamma: float) -> np.ndarray:
    size = rounds * n * n
    d = np.zeros((size, size))
    for t in range(1, rounds + 1):
        for i in range(n):
            for k in range(n):
                row = index(t, i, k, n)
                for k2 in range(k, n):  # its own later decisions this round
                    d[row, index(t, i, k2, n)] = gamma ** (k2 - k)
                for t2 in range(t + 1, rounds + 1):
                    for i2 in range(n):
                        # round t + 1: from candidate i's place on; later rounds: every decision
                        first = order(i2, n).index(i) if t2 == t + 1 else 0
                        for k2 in range(first, n):
                            d[row, index(t2, i2, k2, n)] = beta ** (t2 - t) * gamma**k2
    d.setflags(write=False)
    return d


def dependencies(n: int, rounds: int, beta: float, gamma: float) -> np.ndarray:
    """D[a, b]: the weight with which action b's reward counts in action a's return (0: unrelated)."""
    return _dependencies(int(n), int(rounds), float(beta), float(gamma))


def kept_matrix(rec: RoundRecord) -> np.ndarray:
    """(n, n) keep flags of one debate round, by agent and position in its order."""
    assert rec.decision is not None
    keep = rec.decision.record["keep"]
    return np.array([[bool(entry[1]) for entry in row] for row in keep], dtype=bool)


def action_rewards(
    trajectory: Sequence[RoundRecord], w: CppReward, states: np.ndarray | None = None
) -> np.ndarray:
    """Every action's reward, flat in `index` order; no debate rounds: empty. `states` (debate
    rounds, n, n), from `debate.action_states`: agent i's correctness after its k-th decision, so
    action k's pair is (after k - 1, after k) — the round's start for k = 0; without it every
    decision of (t, i) shares its round's pair (the module docstring)."""
    rounds = list(trajectory[1:])
    if not rounds:
        return np.zeros(0)
    n = len(trajectory[0].answers_after)
    if states is not None and states.shape != (len(rounds), n, n):
        raise ValueError(f"reward: states must be ({len(rounds)}, {n}, {n}), got {states.shape}")
    out = np.zeros(len(rounds) * n * n)
    for t, rec in enumerate(rounds, start=1):
        kept = kept_matrix(rec)
        for i in range(n):
            for k in range(n):
                if states is None:
                    before, after = rec.correct_before[i], rec.correct_after[i]
                else:
                    before = rec.correct_before[i] if k == 0 else bool(states[t - 1, i, k - 1])
                    after = bool(states[t - 1, i, k])
                out[index(t, i, k, n)] = action_reward(bool(kept[i, k]), before, after, w.scale(t), n, w)
    return out


def returns(
    trajectory: Sequence[RoundRecord], w: CppReward, states: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(rewards, returns) of every action of the episode, flat in `index` order (`states`: as
    `action_rewards`)."""
    r = action_rewards(trajectory, w, states)
    if r.size == 0:
        return r, r
    n = len(trajectory[0].answers_after)
    g = dependencies(n, len(trajectory) - 1, w.beta, w.gamma) @ r
    if not (w.final or w.keep_cost):
        return r, g
    final, cost = own_terms(trajectory, w)
    # the final term whole in every return, and once in the episode's total (spread over its actions)
    return r - cost + final / r.size, g - cost + final


def own_terms(trajectory: Sequence[RoundRecord], w: CppReward) -> tuple[float, np.ndarray]:
    """`final`'s term (final * a when the final vote is right, else 0) and `keep_cost`'s per action
    (keep_cost * a_t where the response was kept), flat in `index` order (the module docstring)."""
    kept = [kept_matrix(rec).reshape(-1) * w.scale(t) for t, rec in enumerate(trajectory[1:], start=1)]
    return w.final * w.a * float(trajectory[-1].vote_correct), w.keep_cost * np.concatenate(kept)
