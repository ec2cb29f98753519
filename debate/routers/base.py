"""The `Router` role: pure `route(state, rng) -> Decision` (routers register as methods:
`debate.registry.method`)."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from debate.decision import Decision
from debate.state import DebateState


class Router(Protocol):
    """Who speaks and who sees whom in the next round. Pure: reads `state`, draws only from `rng`,
    never mutates it. Routers are frozen dataclasses: their fields are the method's arguments."""

    def route(self, state: DebateState, rng: np.random.Generator) -> Decision: ...
