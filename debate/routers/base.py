"""The `Router` role: pure `async route(state, rng) -> Decision` (routers register as methods:
`debate.registry.method`). Every router's `route` is a coroutine, so the episode loop awaits one kind:
a learned router awaits its sentence encoder (an engine call), a rule awaits nothing."""

from __future__ import annotations

import asyncio
from typing import Protocol

import numpy as np

from debate.decision import Decision
from debate.state import DebateState


class Router(Protocol):
    """Who speaks and who sees whom in the next round. Pure: reads `state`, draws only from `rng`,
    never mutates it. Routers are frozen dataclasses: their fields are the method's arguments."""

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision: ...


def route_now(router: Router, state: DebateState, rng: np.random.Generator) -> Decision:
    """`router`'s decision outside an event loop (a notebook, a test): runs its `route` to the end."""
    return asyncio.run(router.route(state, rng))
