"""RUMAD's multi-objective reward (`specs/methods.md` §RUMAD, Table 5), a pure function of an
episode's trajectory (`debate.trajectory`), so one episode can be scored under any coefficients.

The paper names the terms and their weights but does not define them; our reading, with alpha
weighting the good case and beta the bad one (every weight configurable). Step k is debate round
k + 1 (round 0 is not the controller's); terminal terms land on the last step:

- accuracy (terminal):   +alpha_accuracy if the final vote is right, -beta_accuracy if wrong
- consensus (each round): +alpha_consensus * agree if the round's plurality answer (the vote) is right,
                          -beta_consensus * agree if wrong; agree = share of agents holding it
- progress (each round):  alpha_progress * (correct agents after - before) / n
- efficiency (each round): -alpha_efficiency * tokens of the round / token_scale;
                           terminal +beta_efficiency * unused budget / B (0 when B = 0)
- improvement (terminal): +alpha_improvement if the final vote is right and round 0's was wrong,
                          -beta_improvement if round 0's was right and the final is wrong
- sparsity (each round):  -alpha_sparsity * visible edges / (n (n - 1))

`token_scale` (ours; the paper gives none) puts a round's tokens on the scale of the other terms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields

import numpy as np

from debate.trajectory import RoundRecord
from debate.vote import plurality_share

TERMS = ("accuracy", "consensus", "progress", "efficiency", "improvement", "sparsity")


@dataclass(frozen=True)
class RewardWeights:
    """Table 5's weights (alpha: the good case, beta: the bad one) and the token scale."""

    alpha_accuracy: float = 1.0
    beta_accuracy: float = 2.0
    alpha_consensus: float = 0.3
    beta_consensus: float = 0.5
    alpha_progress: float = 0.1
    alpha_efficiency: float = 0.2
    beta_efficiency: float = 0.3
    alpha_improvement: float = 1.0
    beta_improvement: float = 0.2
    alpha_sparsity: float = 0.1
    token_scale: float = 10_000.0

    def __post_init__(self) -> None:
        for f in fields(self):  # its own fields, one check for each
            value = getattr(self, f.name)
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"reward: {f.name} must be a finite number >= 0, got {value}")
        if self.token_scale <= 0:
            raise ValueError(f"reward: token_scale must be > 0, got {self.token_scale}")

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def reward_terms(
    trajectory: Sequence[RoundRecord], weights: RewardWeights, budget: int
) -> dict[str, np.ndarray]:
    """Each term's reward per step (one step per debate round), as arrays of equal length; no debate
    rounds: empty arrays. `budget`: the B the episode ran under (for the unused-budget bonus)."""
    w = weights
    rounds = list(trajectory[1:])
    steps = len(rounds)
    terms = {name: np.zeros(steps) for name in TERMS}
    if steps == 0:
        return terms
    n = len(trajectory[0].answers_after)
    for k, rec in enumerate(rounds):
        agree = plurality_share(rec.answers_after)
        terms["consensus"][k] = w.alpha_consensus * agree if rec.vote_correct else -w.beta_consensus * agree
        terms["progress"][k] = w.alpha_progress * (sum(rec.correct_after) - sum(rec.correct_before)) / n
        terms["efficiency"][k] = -w.alpha_efficiency * rec.tokens / w.token_scale
        edges = len(rec.decision.graph.edges) if rec.decision is not None else 0
        terms["sparsity"][k] = -w.alpha_sparsity * edges / (n * (n - 1)) if n > 1 else 0.0
    first, last = trajectory[0].vote_correct, rounds[-1].vote_correct
    terms["accuracy"][-1] = w.alpha_accuracy if last else -w.beta_accuracy
    used = sum(len(rec.active) for rec in rounds)
    if budget > 0:
        terms["efficiency"][-1] += w.beta_efficiency * max(0, budget - used) / budget
    if last and not first:
        terms["improvement"][-1] = w.alpha_improvement
    elif first and not last:
        terms["improvement"][-1] = -w.beta_improvement
    return terms


def step_rewards(terms: dict[str, np.ndarray]) -> np.ndarray:
    """The reward per step: the sum of the terms."""
    return np.sum([terms[name] for name in TERMS], axis=0)
