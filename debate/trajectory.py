"""What an episode produced: every call, the vote after every round, and a per-round trajectory from
which any reward is a pure function (`debate.rewards`): each round's decision, every agent's answer
and correctness before and after it, who spoke, and the round's calls, tokens and price-weighted cost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from actors.frozen import quick_init
from debate.decision import Decision
from debate.state import DebateState, Turn


@quick_init
@dataclass(frozen=True)
class RoundRecord:
    """One round of one episode, round 0 (independent answers) included."""

    round: int
    decision: Decision | None  # None for round 0
    answers_before: tuple[str | None, ...]  # the agents' answers entering the round (round 0: None)
    answers_after: tuple[str | None, ...]
    correct_before: tuple[bool, ...]
    correct_after: tuple[bool, ...]
    active: tuple[int, ...]  # agents that made at least one call this round
    vote: str | None  # the majority vote after the round
    vote_correct: bool
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost: float

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class EpisodeResult:
    """Everything an episode produced; `turns` holds every call in order."""

    turns: list[Turn]
    round_answers: list[str | None]  # the vote after each round (round 0 included)
    round_correct: list[bool]
    final_answer: str | None
    correct: bool
    cost: float
    state: DebateState = field(repr=False)
    trajectory: list[RoundRecord] = field(default_factory=list, repr=False)

    @property
    def calls(self) -> int:
        return len(self.turns)

    @property
    def prompt_tokens(self) -> int:
        return sum(t.prompt_tokens for t in self.turns)

    @property
    def completion_tokens(self) -> int:
        return sum(t.completion_tokens for t in self.turns)

    @property
    def cached_tokens(self) -> int:
        return sum(t.cached_tokens for t in self.turns)

    @property
    def cache_hits(self) -> int:
        return sum(t.cache_hit for t in self.turns)

    @property
    def parse_failures(self) -> int:
        return sum(not t.parsed for t in self.turns)

    @property
    def latency_s(self) -> float:
        return sum(t.latency_s for t in self.turns)


def build_trajectory(
    state: DebateState, votes: list[str | None], is_correct: Callable[[str | None], bool]
) -> list[RoundRecord]:
    """The per-round records of a finished episode; `is_correct` grades one canonical answer."""
    records = []
    for r in range(state.round):
        after = state.answers(r)
        before = state.answers(r - 1) if r else (None,) * state.n
        turns = state.turns[r]
        records.append(
            RoundRecord(
                round=r,
                decision=state.decisions[r],
                answers_before=before,
                answers_after=after,
                correct_before=tuple(is_correct(a) for a in before),
                correct_after=tuple(is_correct(a) for a in after),
                active=tuple(sorted({t.agent for t in turns})),
                vote=votes[r],
                vote_correct=is_correct(votes[r]),
                calls=len(turns),
                prompt_tokens=sum(t.prompt_tokens for t in turns),
                completion_tokens=sum(t.completion_tokens for t in turns),
                cost=sum(t.cost for t in turns),
            )
        )
    return records
