"""`oracle` — routing that reads the gold answer: a reference, not a method.

Each debate round, while the activation budget lasts (`budget` activations after round 0, RUMAD's B),
only the agents whose current answer is wrong speak (in seat order when the budget cannot pay for all
of them), and each sees only the peers whose current answer is right (none when nobody is right: it
re-checks its own answer). Right agents never speak, so debate cannot talk them out of a right answer.
It approximates the best a budgeted router (RUMAD, `least_confident`, `random_activation`) could do if
it knew who is wrong: a ceiling to read their gains against, not a strict bound (agents still answer
stochastically, and fixing a wrong agent may split a wrong vote rather than win it).

It runs only on the simulated engine: `sweep` refuses a config that pairs it with any other engine
(`ENGINE_NEEDS`: an engine whose traits say `reads_gold`). The gold never reaches a prompt or a stored record: the episode loop binds the router
to its item (`for_item`, in the driver), which grades the agents' answers itself; the decision record
holds only the budget left. Nothing is drawn from the router rng.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from data.types import Grader, Sample
from debate.decision import Decision
from debate.graph import Graph
from debate.policies.observation import activations
from debate.registry import method
from debate.state import DebateState


@method("oracle", summary="reads the gold: wrong agents see right peers (a ceiling)")
@dataclass(frozen=True)
class Oracle:
    """Wrong agents speak and see only right peers, within `budget` (see the module docstring)."""

    budget: int = 12  # RUMAD's default B
    LABEL: ClassVar[tuple[str, ...]] = ("budget",)
    ENGINE_NEEDS: ClassVar[tuple[str, str]] = ("reads_gold", "reads the gold answer")  # (engine trait, why)

    def __post_init__(self) -> None:
        if self.budget < 0:
            raise ValueError(f"oracle: budget must be >= 0 activations, got {self.budget}")

    def for_item(self, sample: Sample, grader: Grader) -> OracleOnItem:
        """The router for one episode: it knows `sample`'s gold."""
        return OracleOnItem(self, sample.gold, grader)

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        raise RuntimeError(
            "oracle: routed without its item's gold; the episode loop must call for_item(sample, grader)"
        )


@dataclass(frozen=True)
class OracleOnItem:
    """The oracle bound to one item's gold (never shown, never stored)."""

    params: Oracle
    gold: str = field(repr=False)
    grader: Grader = field(repr=False)

    def right(self, answer: str | None) -> bool:
        return answer is not None and self.grader.grade(answer, self.gold) == "correct"

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        n = state.n
        left = max(0, self.params.budget - int(activations(state).sum()))
        right = [self.right(a) for a in state.answers()]
        speakers = [t for t in range(n) if not right[t]][:left]
        edges = [(s, t) for t in speakers for s in range(n) if right[s]]
        return Decision(Graph(n, edges), active=frozenset(speakers), record={"budget_left": left})
