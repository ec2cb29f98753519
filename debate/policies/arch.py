"""What a policy network is, without torch: its architecture (sizes, head, initial log-std, the debate
length it observes rounds by) and the order of its actions (one per ordered pair of agents). Config
validation and checkpoints read these without loading torch."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from debate.policies.observation import AGENT_FEATURES, GLOBAL_FEATURES

HEADS = ("gaussian", "beta")


@dataclass(frozen=True)
class PolicyArch:
    """What a network is: sizes, head, initial log-std, and the debate length it observes rounds by."""

    hidden: int = 128
    head: str = "gaussian"
    log_std_init: float = 0.0
    horizon: int = 6
    agent_features: int = AGENT_FEATURES
    global_features: int = GLOBAL_FEATURES

    def __post_init__(self) -> None:
        if self.head not in HEADS:
            raise ValueError(f"policy head must be one of {', '.join(HEADS)}, got '{self.head}'")
        if self.hidden < 1 or self.horizon < 1:
            raise ValueError("policy hidden and horizon must be >= 1")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PolicyArch:
        return cls(**d)


def edge_index(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(sources, targets) of every ordered pair s != t, source-major: the order of a policy's actions."""
    pairs = [(s, t) for s in range(n) for t in range(n) if s != t]
    return np.array([s for s, _ in pairs], dtype=np.int64), np.array([t for _, t in pairs], dtype=np.int64)
