"""What a policy network is, without torch: its architecture (sizes, head, initial log-std, the debate
length it observes rounds by, seat features, critic) and the order of its actions (one per ordered
pair of agents, then, for the `bernoulli` head, one per agent). Config validation and checkpoints read
these without loading torch.

`seats` and `critic` came after the first checkpoints: at their defaults (0, "shared") a network is
exactly the one those checkpoints hold."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from common.added import without_added
from debate.policies.observation import AGENT_FEATURES, GLOBAL_FEATURES

HEADS = ("gaussian", "beta", "bernoulli")
CRITICS = ("shared", "separate")


@dataclass(frozen=True)
class PolicyArch:
    """What a network is: sizes, head, initial log-std, and the debate length it observes rounds by."""

    hidden: int = 128
    head: str = "gaussian"
    log_std_init: float = 0.0
    horizon: int = 6
    agent_features: int = AGENT_FEATURES
    global_features: int = GLOBAL_FEATURES
    seats: int = 0  # > 0: each agent also sees its seat, one-hot over this many seats
    critic: str = "shared"  # "separate": the value head has an encoder of its own
    ADDED: ClassVar[dict[str, Any]] = {"seats": 0, "critic": "shared"}  # came after the first checkpoints

    def __post_init__(self) -> None:
        if self.head not in HEADS:
            raise ValueError(f"policy head must be one of {', '.join(HEADS)}, got '{self.head}'")
        if self.critic not in CRITICS:
            raise ValueError(f"policy critic must be one of {', '.join(CRITICS)}, got '{self.critic}'")
        if self.hidden < 1 or self.horizon < 1:
            raise ValueError("policy hidden and horizon must be >= 1")
        if self.seats < 0:
            raise ValueError(f"policy seats must be >= 0 (0: no seat feature), got {self.seats}")

    def to_dict(self) -> dict[str, Any]:
        """The fields; `seats` and `critic` only where they differ from their defaults, so the
        checkpoints written before they existed keep their content hashes."""
        return without_added(asdict(self), self.ADDED)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PolicyArch:
        return cls(**d)


def edge_index(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(sources, targets) of every ordered pair s != t, source-major: the order of a policy's actions."""
    pairs = [(s, t) for s in range(n) for t in range(n) if s != t]
    return np.array([s for s, _ in pairs], dtype=np.int64), np.array([t for _, t in pairs], dtype=np.int64)
