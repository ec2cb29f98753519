"""Heterogeneous baselines without debate rounds (`specs/methods.md`, Baselines; CPP's Tables 2-3):

- `vote`: one answer from each distinct seat of the team (each model; an adversarial seat counts as
  its own), majority vote.
- `consistency`: `m` independent answers, majority vote, from a pool of the team: `fuse` — every
  distinct seat in equal proportion (cycling in team order); `best` — only the strongest model; or a
  model's name — homogeneous on that model. `best` and `match` are settled from measurements before
  the method runs (`sweep` reads them from the matched method's stored episodes; `bench/` from its
  own): `match: <method>` sets `m` so that the samples' price-weighted cost comes nearest that
  method's measured cost on the same items (`matched_m`), and `best` becomes the model whose round-0
  answers were right most often there. A resolved entry names its `m` and model, so its episode ids
  are those of the same plain consistency run.

Sample s runs on its seat's model with the call seed of (round 0, seat s): a consistency sample on
seat s is the same call as seat s's round-0 answer in a debate on the same team (the call cache pays
once).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from debate.registry import method


def _distinct(keys: Sequence[Hashable]) -> list[int]:
    """The first team member of each distinct seat key, in team order."""
    first: dict[Hashable, int] = {}
    for j, k in enumerate(keys):
        first.setdefault(k, j)
    return list(first.values())


def _model(key: Hashable) -> object:
    return key[0] if isinstance(key, tuple) else key


@method("vote", protocol=None, summary="one answer per distinct model of the team, majority vote")
@dataclass(frozen=True)
class Vote:
    """One answer per distinct seat (model) of the team, majority vote."""

    def seats(self, keys: Sequence[Hashable]) -> list[int]:
        return _distinct(keys)


@method("consistency", protocol=None, summary="m answers from a team pool, majority vote; cost-matchable")
@dataclass(frozen=True)
class Consistency:
    """`m` samples from `pool` (fuse | best | a model), majority vote; `match` names the method whose
    measured cost `m` is set to match (see the module docstring)."""

    m: int = 9
    pool: str = "fuse"
    match: str = ""
    LABEL: ClassVar[tuple[str, ...]] = ("m", "pool")

    def __post_init__(self) -> None:
        if self.m < 1:
            raise ValueError(f"consistency: m must be >= 1, got {self.m}")
        if not self.pool:
            raise ValueError("consistency: pool must be fuse, best or a model of the team")

    @property
    def team_size(self) -> int:
        return self.m

    def members(self, keys: Sequence[Hashable]) -> list[int]:
        """The team members the samples cycle through, in order."""
        if self.pool == "best":
            raise ValueError(
                "consistency: pool 'best' is settled from measured episodes before it runs (sweep run does)"
            )
        if self.pool == "fuse":
            return _distinct(keys)
        members = [j for j, k in enumerate(keys) if _model(k) == self.pool]
        if not members:
            known = ", ".join(dict.fromkeys(str(_model(k)) for k in keys))
            raise ValueError(
                f"consistency: pool '{self.pool}' is not a model of the team ({known}); or fuse, best"
            )
        return members

    def seats(self, keys: Sequence[Hashable]) -> list[int]:
        if self.match:
            raise ValueError(
                "consistency: match is settled from the matched method's stored episodes before it runs (sweep run does)"
            )
        members = self.members(keys)
        return [members[s % len(members)] for s in range(self.m)]


def sample_costs(seat_cost: Sequence[float], indices: Sequence[int], m: int) -> list[float]:
    """The cumulative cost of the first 1..m samples when sample s costs `seat_cost[indices[s % len]]`."""
    out, total = [], 0.0
    for s in range(m):
        total += seat_cost[indices[s % len(indices)]]
        out.append(total)
    return out


def matched_m(seat_cost: Sequence[float], indices: Sequence[int], target: float, most: int = 256) -> int:
    """The number of samples whose summed mean cost comes nearest `target` (ties: more samples), where
    sample s runs on team member `indices[s % len(indices)]`, costing `seat_cost[member]` on average.
    At least 1, at most `most`."""
    if target <= 0 or not indices:
        return 1
    cumulative = sample_costs(seat_cost, indices, most)
    best = min(range(most), key=lambda s: (abs(cumulative[s] - target), -s))
    return best + 1


def strongest(accuracy: Mapping[str, float]) -> str:
    """The model with the highest measured accuracy (ties: the first name in sorted order)."""
    if not accuracy:
        raise ValueError("consistency: no measured accuracy to pick the strongest model from")
    return min(accuracy, key=lambda m: (-accuracy[m], m))
