"""Majority vote, its tie-break, and vote shares."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from debate.vote import majority_vote, plurality_share, vote_shares


@pytest.mark.parametrize(
    ("answers", "confidences", "winner"),
    [
        (["7", "7", "8"], [1, 1, 5], "7"),  # more votes beat more confidence
        (["7", "8"], [2, 3], "8"),  # one vote each: the more confident supporter wins
        (["7", "7", "8", "8"], [1, 5, 3, 2], "7"),  # 2-2: summed confidence 6 vs 5
        (["8", "7"], [4, 4], "7"),  # 1-1 at equal confidence: lexicographically smallest
        (["B", "A", "B", "A"], [3, 2, 2, 3], "A"),  # 2-2, 5 vs 5: smallest string
        (["10", "9"], [3, 3], "10"),  # strings compare as strings: "10" < "9"
        ([None, None, "3"], [5, 5, 1], "3"),  # None never votes, whatever its confidence
        ([None, "4", None, "5", "5"], [5, 1, 5, 1, 1], "5"),
        (["x"], [1], "x"),
        ([None, None], [3, 3], None),
        ([], [], None),
    ],
)
def test_majority_vote_by_hand(answers: list[str | None], confidences: list[int], winner: str | None) -> None:
    assert majority_vote(answers, confidences) == winner


def test_majority_vote_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="2 answers but 1 confidences"):
        majority_vote(["1", "2"], [3])


def test_vote_shares_and_plurality_share_by_hand() -> None:
    answers = ["7", None, "7", "8", None]
    assert vote_shares(answers) == {"7": 2 / 3, "8": 1 / 3}
    assert list(vote_shares(["b", "a", "c", "a", "c"])) == ["a", "c", "b"]  # largest first, ties by answer
    assert plurality_share(answers) == pytest.approx(2 / 5)
    assert plurality_share(["1", "2", "3", "4"]) == pytest.approx(1 / 4)
    assert vote_shares([None, None]) == {}
    assert vote_shares([]) == {}
    assert plurality_share([None, None]) == 0.0
    assert plurality_share([]) == 0.0


_agents = st.lists(
    st.tuples(st.one_of(st.none(), st.sampled_from(["1", "2", "3", "10", "A", "B"])), st.integers(1, 5)),
    max_size=9,
)


@settings(max_examples=200, deadline=None)
@given(agents=_agents, data=st.data())
def test_permuting_agents_never_changes_the_vote(
    agents: list[tuple[str | None, int]], data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(agents))
    answers, confidences = [a for a, _ in agents], [c for _, c in agents]
    answers2, confidences2 = [a for a, _ in shuffled], [c for _, c in shuffled]
    assert majority_vote(answers, confidences) == majority_vote(answers2, confidences2)
    assert vote_shares(answers) == vote_shares(answers2)
    assert list(vote_shares(answers)) == list(vote_shares(answers2))
    assert plurality_share(answers) == plurality_share(answers2)


@settings(max_examples=200, deadline=None)
@given(agents=_agents)
def test_the_winner_has_the_most_votes_and_shares_add_up(agents: list[tuple[str | None, int]]) -> None:
    answers, confidences = [a for a, _ in agents], [c for _, c in agents]
    winner = majority_vote(answers, confidences)
    shares = vote_shares(answers)
    if winner is None:
        assert all(a is None for a in answers) and shares == {} and plurality_share(answers) == 0.0
        return
    assert shares[winner] == max(shares.values())
    assert sum(shares.values()) == pytest.approx(1.0)
    assert plurality_share(answers) == pytest.approx(answers.count(winner) / len(answers))
    # among the answers tied on votes, none has more summed confidence than the winner
    support = {a: sum(c for b, c in agents if b == a) for a in shares}
    tied = [a for a in shares if shares[a] == shares[winner]]
    assert support[winner] == max(support[a] for a in tied)
    assert winner == min(a for a in tied if support[a] == support[winner])


@settings(max_examples=100, deadline=None)
@given(agents=_agents, extra=st.integers(1, 5))
def test_a_none_agent_changes_nothing_but_the_plurality_share(
    agents: list[tuple[str | None, int]], extra: int
) -> None:
    answers, confidences = [a for a, _ in agents], [c for _, c in agents]
    assert majority_vote([*answers, None], [*confidences, extra]) == majority_vote(answers, confidences)
    assert vote_shares([*answers, None]) == vote_shares(answers)
    if any(a is not None for a in answers):
        assert plurality_share([*answers, None]) < plurality_share(answers)
