"""Rules of thumb beside the learned methods: what a simple, honest rule gets without training.

- `silent` — round 0's vote, no debate: every agent answers once and the final answer is round 0's
  majority vote, whatever `rounds` says. It costs exactly round 0 (the call seeds are those of any
  debate's round 0 on the same team and seed, so the call cache pays once). The floor every debate
  method must beat to earn its extra rounds; on one model it equals `cot_sc` with `m` = the team size.
- `least_confident` — RUMAD's budget (`specs/methods.md` §RUMAD) without its policy: each debate
  round the `k` agents with the lowest last stated confidence (ties: the lower seat) speak and see
  every other agent; the others keep their answers at no cost. Once `budget` activations after
  round 0 are spent nobody speaks (the round that would exceed it activates only what is left). It
  approximates RUMAD's controller by the one signal a calibrated team gives for free: who doubts.
- `confidence_keep` — CPP's keep/prune decisions (`specs/methods.md` §CPP) as a fixed threshold:
  agent i keeps a peer's previous response when that peer stated confidence >= `keep_at`, and hides
  its own previous response when its own confidence <= `hide_own_at`; with `skip_agreeing` it also
  prunes a peer whose answer is the agent's own (it brings no answer the agent lacks, and costs its
  tokens); with `never_seat` S no agent keeps seat S's responses either (the rule told the
  adversary's seat, as `never_keep` is, with confidence deciding the rest). Every agent speaks every round.
  It stands for what CPP's pruner could learn from confidence alone; its decision record has CPP's
  shape (`keep[i][k] = [candidate, kept, p]`, p 1 or 0), so CPP's reward reads it. Protocol `update`.
- `never_keep` — Full-Debate with one seat's responses never kept: every agent keeps every previous
  response (its own included) except seat `seat`'s, which no other agent sees. With `seat` the
  adversarial seat it is the rule of thumb Adv-CPP is read against ("never keep the adversary"): it
  knows which seat is adversarial, which CPP has to learn. Its decision record has CPP's shape.

None draws from the router rng: given the seed (the engines' call seeds), each gives the same episodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from debate.cpp_reward import order
from debate.decision import Decision
from debate.graph import Graph
from debate.policies.observation import activations
from debate.registry import method
from debate.state import DebateState


@method("silent", protocol=None, summary="round 0's majority vote of the team, no debate round")
@dataclass(frozen=True)
class Silent:
    """Round 0's majority vote over the whole team, no debate round (see the module docstring)."""


def _budget_left(budget: int, state: DebateState) -> int:
    """Activations `budget` still allows before this round (round 0 not counted)."""
    return max(0, budget - int(activations(state).sum()))


def least_confident(confidences: tuple[int, ...], k: int) -> list[int]:
    """The `k` seats with the lowest confidence, ties to the lower seat, in seat order."""
    ranked = sorted(range(len(confidences)), key=lambda i: (confidences[i], i))
    return sorted(ranked[: max(0, k)])


@method("least_confident", summary="the k least confident speak, seeing all, within a budget")
@dataclass(frozen=True)
class LeastConfident:
    """The `k` least confident agents speak, seeing everyone, within `budget` activations (see the
    module docstring)."""

    k: int = 2
    budget: int = 12  # RUMAD's default B
    LABEL: ClassVar[tuple[str, ...]] = ("k", "budget")

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"least_confident: k must be >= 1 agents per round, got {self.k}")
        if self.budget < 0:
            raise ValueError(f"least_confident: budget must be >= 0 activations, got {self.budget}")

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        n, left = state.n, _budget_left(self.budget, state)
        speakers = least_confident(state.confidences(), min(self.k, left))
        edges = [(s, t) for t in speakers for s in range(n) if s != t]
        return Decision(Graph(n, edges), active=frozenset(speakers), record={"budget_left": left})


def _update_only(args: Mapping[str, Any]) -> None:
    if args.get("protocol") != "update":
        raise ValueError(
            "method confidence_keep: an own response is hidden from the update prompt; use protocol 'update'"
        )


@method(
    "confidence_keep",
    check=_update_only,
    summary="keep confident peers, hide an unsure own answer (a rule)",
)
@dataclass(frozen=True)
class ConfidenceKeep:
    """CPP-style pruning by stated confidence: keep confident peers, hide an unsure own response (see
    the module docstring)."""

    keep_at: int = 4
    hide_own_at: int = 2
    skip_agreeing: bool = False
    never_seat: int | None = None
    LABEL: ClassVar[tuple[str, ...]] = ("keep_at", "hide_own_at")
    # added after episodes were stored: ids leave them out at their defaults, so theirs stay as they were
    ADDED: ClassVar[dict[str, Any]] = {"skip_agreeing": False, "never_seat": None}

    def __post_init__(self) -> None:
        # keep_at 6 keeps no peer and hide_own_at 0 hides nothing: the rule's two "off" ends
        if not 1 <= self.keep_at <= 6:
            raise ValueError(f"confidence_keep: keep_at must be in 1..6 (6: keep none), got {self.keep_at}")
        if not 0 <= self.hide_own_at <= 5:
            raise ValueError(
                f"confidence_keep: hide_own_at must be in 0..5 (0: hide none), got {self.hide_own_at}"
            )
        if not isinstance(self.skip_agreeing, bool):
            raise ValueError(
                f"confidence_keep: skip_agreeing must be true or false, got {self.skip_agreeing!r}"
            )
        if self.never_seat is not None and (isinstance(self.never_seat, bool) or self.never_seat < 0):
            raise ValueError(
                f"confidence_keep: never_seat must be a seat index >= 0 or null, got {self.never_seat!r}"
            )

    def keeps(
        self, agent: int, candidate: int, confidences: tuple[int, ...], answers: tuple[str | None, ...] = ()
    ) -> bool:
        """Whether `agent` keeps `candidate`'s previous response (its own when they are the same);
        `answers`, the previous round's, matter only with `skip_agreeing`."""
        if candidate == agent:
            return confidences[agent] > self.hide_own_at
        if candidate == self.never_seat:
            return False
        if (
            self.skip_agreeing
            and answers
            and answers[candidate] is not None
            and answers[candidate] == answers[agent]
        ):
            return False
        return confidences[candidate] >= self.keep_at

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        n, conf, answers = state.n, state.confidences(), state.answers()
        if self.never_seat is not None and self.never_seat >= n:
            raise ValueError(
                f"confidence_keep: never_seat {self.never_seat} is not in a team of {n}; give a seat below {n}"
            )
        # keep[i][k]: whether agent i keeps candidate order(i)[k]
        keep = [[self.keeps(i, j, conf, answers) for j in order(i, n)] for i in range(n)]
        edges = [(order(i, n)[k], i) for i in range(n) for k in range(1, n) if keep[i][k]]
        hidden = frozenset(i for i in range(n) if not keep[i][0])
        record = {
            "keep": [[[order(i, n)[k], keep[i][k], float(keep[i][k])] for k in range(n)] for i in range(n)]
        }
        return Decision(Graph(n, edges), record=record, hidden_own=hidden)


@method("never_keep", summary="Full-Debate, but no agent keeps one seat's responses (a rule)")
@dataclass(frozen=True)
class NeverKeep:
    """Every agent keeps every previous response but seat `seat`'s (see the module docstring)."""

    seat: int = 1
    LABEL: ClassVar[tuple[str, ...]] = ("seat",)

    def __post_init__(self) -> None:
        if self.seat < 0:
            raise ValueError(f"never_keep: seat must be a seat index >= 0, got {self.seat}")

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        n = state.n
        if self.seat >= n:
            raise ValueError(f"never_keep: seat {self.seat} is not in a team of {n}; give a seat below {n}")
        keep = [[j == i or j != self.seat for j in order(i, n)] for i in range(n)]  # keep[i][k]: order(i)[k]
        edges = [(order(i, n)[k], i) for i in range(n) for k in range(1, n) if keep[i][k]]
        record = {
            "keep": [[[order(i, n)[k], keep[i][k], float(keep[i][k])] for k in range(n)] for i in range(n)]
        }
        return Decision(Graph(n, edges), record=record)
