"""Population model v6: a member's `habit`, the share of its wrong samples outside the shared
misconception that give its own habitual wrong answer on the item (`actors.population`,
`docs/population.md`), in the engine, in the fit's expected accuracy and in the fit's search space."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from test_calibrate_expected import TARGETS, team
from test_population_v2 import ask, assert_gated, assert_replays, initial, population

from actors.population import PopulationBackend
from actors.populations import parse
from data.benchmarks.registry import load_benchmark
from sweep.calibrate.expected import vote_accuracy
from sweep.calibrate.space import population_of, space, values_of
from sweep.calibrate.targets import load_targets

SEEDS = 40


def _v6(habit: float, misconception: float = 0.0) -> Any:
    raw = {**population().content(), "version": "v6"}
    members = {k: {**m, "habit": habit} for k, m in raw["members"].items()}
    benches = {"default": {"item_spread": 1.0, "misconception": misconception}}
    return parse("test", {**raw, "members": members, "benchmarks": benches})


def _wrong_answers(habit: float, item: int, agents: int = 10) -> Counter[str]:
    """The wrong answers of member `weak` on one item over many seeds (no shared misconception)."""
    backend = PopulationBackend("weak", _v6(habit), "weak")
    out: Counter[str] = Counter()
    for seed in range(SEEDS):
        for r in ask(backend, [initial(item, agent=a) for a in range(agents)], seed=seed):
            if r["answer"] != "12":
                out[r["answer"]] += 1
    return out


@pytest.mark.parametrize("item", [3, 11])
def test_habit_makes_a_members_wrong_samples_repeat_one_answer(item: int) -> None:
    """With habit 1 every wrong sample of a member on an item is one answer; with habit 0 its slips
    spread over the item's distractors, none taking more than about half."""
    habitual = _wrong_answers(1.0, item)
    assert sum(habitual.values()) > 100 and len(habitual) == 1
    scattered = _wrong_answers(0.0, item)
    assert len(scattered) >= 3
    assert max(scattered.values()) < 0.5 * sum(scattered.values())


def test_habit_is_the_share_of_slips_that_repeat() -> None:
    """At habit 0.5 (no shared misconception) half the wrong samples take the habitual answer and the
    rest spread over the item's 3 own slips, so the commonest wrong answer takes about 2/3 of them."""
    counts = [_wrong_answers(0.5, item, agents=25) for item in (3, 11, 17)]
    share = sum(max(c.values()) for c in counts) / sum(sum(c.values()) for c in counts)
    assert abs(share - (0.5 + 0.5 / 3)) < 0.05, share


def test_a_habit_makes_votes_of_one_member_gain_less() -> None:
    """Five samples of one member gain less over one when its wrong samples agree with each other."""
    items = load_benchmark("arith", "test", 60)

    def gain(habit: float) -> float:
        pop = team(calibration=0.0, self_knowledge=1.0, habit=habit)
        return vote_accuracy(pop, ["b"] * 5, items, "arith", draws=1000) - vote_accuracy(
            pop, ["b"], items, "arith", draws=1000
        )

    assert gain(0.0) > gain(1.0) + 0.03


def test_v6_without_habit_replies_as_v5_and_older_files_may_not_set_it() -> None:
    """A v6 file with habit 0 draws what the same v5 file draws, reply for reply; a v5 file may not
    set habit and its digest leaves it out; habit must lie in [0, 1]."""
    raw = {**population().content(), "version": "v5"}
    assert_replays(raw, "habit", "v6")
    assert_gated(raw, "habit", "v6", 1.5, "0, 1")


def test_the_fit_searches_habit_from_zero_on_an_older_file(tmp_path: Any) -> None:
    """The fit searches each member's habit in [0, 1]; a start from a v5 file (which lacks it) puts
    it at 0, where the population replies as that file; a v6 start keeps its value."""
    path = tmp_path / "targets.yaml"
    path.write_text(TARGETS % "0, 1", encoding="utf-8")
    targets = load_targets(path)
    dims = space(targets)
    assert (dims["habit.a"].low, dims["habit.a"].high) == (0.0, 1.0)
    assert values_of(team(self_knowledge=0.4), targets)["habit.a"] == 0.0
    values = values_of(team(self_knowledge=0.4, habit=0.35), targets)
    assert values["habit.b"] == 0.35
    fitted = population_of(values, targets)
    assert fitted.version == "v9" and fitted.member("b").habit == 0.35
