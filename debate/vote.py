"""Aggregating agents' canonical answers: majority vote with a deterministic tie-break, and vote shares.

Every function here depends only on the multiset of (answer, confidence) pairs, never on agent order, so
relabelling agents cannot change a result.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def majority_vote(answers: Sequence[str | None], confidences: Sequence[int]) -> str | None:
    """The answer with the most votes; ties go to the highest summed confidence of its supporters, then
    to the lexicographically smallest answer. None answers do not vote; all None (or none) -> None."""
    if len(answers) != len(confidences):
        raise ValueError(f"{len(answers)} answers but {len(confidences)} confidences")
    votes: Counter[str] = Counter()
    support: Counter[str] = Counter()
    for answer, confidence in zip(answers, confidences, strict=True):
        if answer is not None:
            votes[answer] += 1
            support[answer] += confidence
    if not votes:
        return None
    return min(votes, key=lambda a: (-votes[a], -support[a], a))


def vote_shares(answers: Sequence[str | None]) -> dict[str, float]:
    """Each answer's share of the non-None votes, largest first (ties by answer); {} when nobody voted."""
    votes = Counter(a for a in answers if a is not None)
    total = sum(votes.values())
    return {a: votes[a] / total for a in sorted(votes, key=lambda a: (-votes[a], a))}


def plurality_share(answers: Sequence[str | None]) -> float:
    """The share of ALL agents (None answers included) holding the most-voted answer; 0.0 if none."""
    votes = Counter(a for a in answers if a is not None)
    if not votes:
        return 0.0
    return max(votes.values()) / len(answers)
