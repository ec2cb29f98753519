"""The `Router` role: pure `route(state, rng) -> Graph`, and the router registry."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from debate.graph import Graph
from debate.spec import Registry
from debate.state import DebateState


class Router(Protocol):
    """Who sees whom in the next round. Pure: reads `state`, draws only from `rng`, never mutates."""

    def route(self, state: DebateState, rng: np.random.Generator) -> Graph: ...


ROUTERS: Registry[Router] = Registry("router")
