"""Population model v8: a member's `echo`, the share of its first answers that repeat its one modal
answer on the item (`actors.population`, `docs/population.md`), in the engine and in the fit's
expected accuracy (the fit's search space is the newest model's: `tests/test_population_v9.py`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from test_calibrate_expected import team
from test_population_v2 import ask, assert_gated, assert_replays, initial, population

from actors.population import PopulationBackend
from actors.populations import parse
from data.benchmarks.registry import load_benchmark
from sweep.calibrate.expected import vote_accuracy


def _v8(echo: float) -> Any:
    raw = {**population().content(), "version": "v8"}
    members = {k: {**m, "echo": echo} for k, m in raw["members"].items()}
    return parse("test", {**raw, "members": members})


def _first_answers(echo: float, item: int) -> Counter[str]:
    """Member `mid`'s first answers on one item, 10 seats over 20 seeds."""
    backend = PopulationBackend("mid", _v8(echo), "mid")
    out: Counter[str] = Counter()
    for seed in range(20):
        out.update(r["answer"] for r in ask(backend, [initial(item, agent=a) for a in range(10)], seed=seed))
    return out


def test_echo_makes_a_members_first_answers_repeat_its_modal_one() -> None:
    """At echo 1 every first answer of a member on an item is one answer, right on some items and
    wrong on others; at echo 0.5 that answer takes about half of them and more; at 0 none does."""
    modal = [_first_answers(1.0, item) for item in range(12)]
    assert all(len(c) == 1 for c in modal)
    assert 0 < sum("12" in c for c in modal) < 12  # the modal answer is a draw at the competence
    half = [_first_answers(0.5, item) for item in range(12)]
    assert all(max(c.values()) / 200 > 0.45 for c in half)
    fresh = [_first_answers(0.0, item) for item in range(12)]
    assert any(len(c) > 1 for c in fresh)
    assert sum(max(c.values()) for c in half) > sum(max(c.values()) for c in fresh) + 200


def test_echo_leaves_one_sample_and_takes_the_votes_gain() -> None:
    """A five-sample vote gains less over one sample with echo; one sample's accuracy stays about
    where it was (the modal answer is itself a draw at the member's competence)."""
    items = load_benchmark("arith", "test", 200)

    def acc(echo: float, n: int) -> float:
        return vote_accuracy(team(calibration=0.0, echo=echo), ["b"] * n, items, "arith", draws=400)

    assert acc(0.0, 5) - acc(0.0, 1) > acc(0.9, 5) - acc(0.9, 1) + 0.03
    assert abs(acc(0.9, 1) - acc(0.0, 1)) < 0.05


def test_v8_without_echo_replies_as_v7_and_older_files_may_not_set_it() -> None:
    """A v8 file with echo 0 draws what the same v7 file draws, reply for reply; a v7 file may not
    set echo and its digest leaves it out; echo must lie in [0, 1]."""
    raw = {**population(dynamics__reflect=0.5).content(), "version": "v7"}
    assert_replays(raw, "echo", "v8")
    assert_gated(raw, "echo", "v8", 1.5, "0, 1")
