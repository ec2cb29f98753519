"""Debate state: typed agent turns, what each agent exposes after a round, and the round history."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actors.frozen import quick_init
from debate.decision import Decision
from debate.graph import Graph

NEUTRAL_CONFIDENCE = 3  # used where a reply gave no confidence: neither trusted nor discounted


@quick_init
@dataclass(frozen=True)
class Turn:
    """One model call of one agent: what it saw, what it wrote, what it cost (counts from the engine)."""

    agent: int
    round: int
    phase: str  # "initial" | "update" | "critique" | "revise" | "sample"
    model: str
    text: str
    answer: str | None  # canonical answer read from the reply (None: none could be read)
    confidence: int | None  # 1..5 as written; None when the reply gave none
    reasoning: str
    parsed: bool  # False: the reply could not be parsed, the agent kept its previous answer
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0
    latency_s: float = 0.0
    seed: int | None = None
    cache_hit: bool = False
    sources: tuple[int, ...] = ()
    cost: float = 0.0  # price-weighted: the seat's prices per million prompt/completion tokens
    extra: dict[str, Any] = field(default_factory=dict)  # protocol-specific (e.g. ACCEPT/REJECT verdicts)


@quick_init
@dataclass(frozen=True)
class View:
    """ξ_i^r: what agent i exposes to the others at the end of round r."""

    answer: str | None
    confidence: int
    reasoning: str


@quick_init
@dataclass(frozen=True)
class DebateState:
    """Everything routers may look at: each finished round's views, turns and routing decision.
    Immutable; `advance` returns the next state, so a router can never change what it was shown."""

    n: int
    views: tuple[tuple[View, ...], ...] = ()  # views[r][i]: agent i at the end of round r
    turns: tuple[tuple[Turn, ...], ...] = ()  # turns[r]: every call made in round r
    decisions: tuple[Decision | None, ...] = ()  # decisions[r]: the round's decision (None for round 0)
    # A per-episode seed for draws a router must make once per episode, not once per round (PEAR's
    # base role graph). The loop sets it; it is the same in every round's state.
    routing_seed: int = 0
    rounds: int | None = None  # the debate rounds the episode will run (None: not said)
    question: str = ""  # the question as agents read it (routers that read content embed it)

    @property
    def round(self) -> int:
        """The index of the next round to run (0 before round 0 has run)."""
        return len(self.views)

    @property
    def graphs(self) -> tuple[Graph | None, ...]:
        """graphs[r]: the round's graph (None for round 0)."""
        return tuple(None if d is None else d.graph for d in self.decisions)

    @property
    def latest(self) -> tuple[View, ...]:
        if not self.views:
            raise ValueError("no round has run yet")
        return self.views[-1]

    def answers(self, r: int = -1) -> tuple[str | None, ...]:
        return tuple(v.answer for v in self.views[r])

    def confidences(self, r: int = -1) -> tuple[int, ...]:
        return tuple(v.confidence for v in self.views[r])

    def advance(
        self, views: tuple[View, ...], turns: tuple[Turn, ...], decision: Decision | Graph | None
    ) -> DebateState:
        """The state after one more round; a bare graph stands for a decision in which everyone speaks."""
        if isinstance(decision, Graph):
            decision = Decision(decision)
        if len(views) != self.n:
            raise ValueError(f"expected {self.n} views, got {len(views)}")
        return DebateState(
            n=self.n,
            views=self.views + (views,),
            turns=self.turns + (turns,),
            decisions=self.decisions + (decision,),
            routing_seed=self.routing_seed,
            rounds=self.rounds,
            question=self.question,
        )


def next_view(previous: View | None, turn: Turn) -> View:
    """The view an agent exposes after `turn`: an unparsable reply keeps the previous answer."""
    if not turn.parsed or turn.answer is None:
        if previous is not None:
            return previous
        return View(answer=None, confidence=1, reasoning=turn.reasoning)
    conf = turn.confidence if turn.confidence is not None else NEUTRAL_CONFIDENCE
    return View(answer=turn.answer, confidence=conf, reasoning=turn.reasoning)
