"""The fit's expected accuracy of rows that never debate (`sweep.calibrate.expected`) against the
mean of real episodes over many seeds, the v4 model's per-benchmark spread, and a fit's evaluator
scoring those rows by expectation while debate rows still run."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from actors.population import PopulationBackend
from actors.populations import Population, parse
from data.benchmarks.registry import load_benchmark
from sweep.calibrate.backends import population_backends
from sweep.calibrate.evaluate import Evaluator
from sweep.calibrate.expected import vote_accuracy
from sweep.calibrate.space import population_of, space, values_of
from sweep.calibrate.targets import load_targets

SEEDS = 40  # episodes per item for the reference mean: its se on 30 items is about 1.3 points


def team(
    calibration: float = 0.8,
    self_knowledge: float | None = None,
    habit: float | None = None,
    echo: float | dict[str, float] | None = None,
    **spread: float,
) -> Population:
    """The test team on model v4, on v5 with both members' `self_knowledge` when it is given, on v6
    with both members' `habit` when that is given, on v8 with both members' `echo` when that is (v9
    when it is one number per benchmark)."""
    version = "v4" if self_knowledge is None else "v5"
    version = version if habit is None else "v6"
    raw: dict[str, Any] = {
        "version": version if echo is None else "v9" if isinstance(echo, dict) else "v8",
        "members": {
            "a": {
                "skill": {"default": 0.4},
                "spread": {"default": 1.0, **spread},
                "calibration": calibration,
            },
            "b": {"skill": {"default": -0.3}, "spread": 1.5, "calibration": calibration},
        },
        "benchmarks": {"default": {"item_spread": 1.0, "misconception": 0.4}},
    }
    for m in raw["members"].values():
        if self_knowledge is not None:
            m["self_knowledge"] = self_knowledge
        if habit is not None:
            m["habit"] = habit
        if echo is not None:
            m["echo"] = echo
    return parse("test", raw)


TARGETS = """\
paper: "A test table"
population: test
members:
  a: {price_in: 1.0, price_out: 2.0}
  b: {price_in: 1.0, price_out: 2.0}
agents: [a, b, a]
rounds: 2
seeds: [%s]
datasets:
  ar: {name: arith, split: test, limit: 30}
v1:
  a: {skill: 0.6}
  b: {skill: 0.4}
fit:
  - {label: A, dataset: ar, method: cot, agents: [a], acc: 60.0, where: "T1"}
  - {label: A n=3, dataset: ar, method: {name: cot_sc, args: {m: 3}}, agents: [a], acc: 60.0, where: "T1"}
  - {label: A n=2, dataset: ar, method: {name: cot_sc, args: {m: 2}}, agents: [a], acc: 60.0, where: "T1"}
  - {label: Vote, dataset: ar, method: vote, acc: 60.0, where: "T1"}
  - {label: Vote a+b, dataset: ar, method: vote, agents: [a, b], acc: 60.0, where: "T1"}
  - {label: Fuse n=5, dataset: ar, method: {name: consistency, args: {m: 5, pool: fuse}}, acc: 60.0, where: "T1"}
  - {label: Full-Debate, dataset: ar, method: {name: fixed, args: {topology: clique}}, acc: 70.0, where: "T1"}
"""


@pytest.fixture
def targets(tmp_path: Path) -> Any:
    path = tmp_path / "targets.yaml"
    path.write_text(TARGETS % ", ".join(map(str, range(SEEDS))), encoding="utf-8")
    return load_targets(path)


@pytest.mark.parametrize(
    "pop",
    [
        team(),
        team(calibration=1.0, self_knowledge=0.3),
        team(calibration=1.0, self_knowledge=0.3, habit=1.0),
        team(calibration=1.0, self_knowledge=0.3, habit=0.5, echo=0.6),
        team(calibration=1.0, self_knowledge=0.3, habit=0.5, echo={"default": 0.0, "arith": 0.6}),
    ],
    ids=["v4", "v5", "v6", "v8", "v9"],
)
def test_expected_accuracy_matches_the_episodes_mean(targets: Any, pop: Population) -> None:
    """Each non-debate row's expectation lies within 4 standard errors of the mean of its episodes
    over 40 seeds: the estimate follows the model's samples (v8: a member's modal answer), slips (v6: a
    member's habitual one),
    confidences (v5: confidences that follow the item rather than the sample) and vote rule."""
    episodes = Evaluator(targets, targets.seeds).run(list(targets.fit_rows()), population_backends(pop))
    expected = Evaluator(targets, [0], expected=True).run(list(targets.fit_rows()), population_backends(pop))
    for row in targets.fit_rows():
        got, want = expected[row.key], episodes[row.key]
        if row.label == "Full-Debate":  # debate rows still run as episodes
            assert got.episodes == 30 and not math.isnan(got.cost)
            continue
        assert got.episodes == 0 and got.std is None
        assert want.std is not None
        se = want.std / math.sqrt(SEEDS)
        assert abs(got.acc - want.acc) < 4 * se + 0.5, (row.label, got.acc, want.acc, se)


def test_calibrated_confidence_breaks_ties_of_two_samples() -> None:
    """With two samples a tie goes to the more confident: calibrated confidence lifts n = 2 above one
    sample, uninformative confidence leaves it where one sample is (the vote rule in the estimate)."""
    items = load_benchmark("arith", "test", 60)
    for calibration, lift in ((1.0, 0.02), (0.0, None)):
        pop = team(calibration=calibration)
        one = vote_accuracy(pop, ["a"], items, "arith", draws=2000)
        two = vote_accuracy(pop, ["a", "a"], items, "arith", draws=2000)
        if lift is None:
            assert abs(two - one) < 0.01
        else:
            assert two > one + lift


def test_v4_spread_per_benchmark() -> None:
    """A member's spread can differ by benchmark (v4): a larger one flattens its consistency curve
    there; a v3 file may not give one, and a v3 file's digest is what it was."""
    items = load_benchmark("arith", "test", 60)
    pop = team(hard=3.0)
    flat = vote_accuracy(pop, ["a"] * 9, items, "hard") - vote_accuracy(pop, ["a"], items, "hard")
    steep = vote_accuracy(pop, ["a"] * 9, items, "arith") - vote_accuracy(pop, ["a"], items, "arith")
    assert steep > flat + 0.05
    backend = PopulationBackend("a", pop, "a")
    assert backend.member.spread_on("hard") == 3.0 and backend.member.spread_on("arith") == 1.0
    v3 = {**pop.content(), "version": "v3"}
    with pytest.raises(ValueError, match=r"members.a.spread: one number per benchmark is read from .* v4"):
        parse("test", v3)
    scalar = parse("test", {**v3, "members": {"a": {"skill": {"default": 0.1}, "spread": 1.2}}})
    assert scalar.content()["members"]["a"]["spread"] == 1.2  # a scalar hashes as a scalar, as before


def test_v5_without_self_knowledge_two_samples_tie_as_one() -> None:
    """Model v5: with self_knowledge 0 a 2-vote of one member gains on one sample no more than with
    uninformative confidence (calibration 0): a tie between its two samples is settled as if
    confidence said nothing (what is left is the vote's last tie-break, the smallest answer, about a
    point on these items); with self_knowledge 1 it gains as in v4. Between two members, the one the
    item is easier for states more confidence, so it wins their ties even with self_knowledge 0."""
    items = load_benchmark("arith", "test", 60)

    def acc(seats: list[str], calibration: float, self_knowledge: float | None) -> float:
        return vote_accuracy(team(calibration, self_knowledge), seats, items, "arith", draws=2000)

    one, uninformed = acc(["a"], 1.0, 0.0), acc(["a", "a"], 0.0, None)
    assert abs(acc(["a", "a"], 1.0, 0.0) - uninformed) < 0.005  # the same samples (one stream)
    assert abs(uninformed - one) < 0.015
    assert acc(["a", "a"], 1.0, 1.0) > uninformed + 0.02
    assert acc(["a", "a"], 1.0, 1.0) == acc(["a", "a"], 1.0, None)  # self_knowledge 1 is v4's stream
    # Across members confidence still follows competence: the stronger one wins a tie of a and b.
    assert acc(["a", "b"], 1.0, 0.0) > acc(["a", "b"], 0.0, None) + 0.02


def test_v5_search_space_and_a_start_from_a_v4_file(targets: Any) -> None:
    """The fit searches each member's self_knowledge in [0, 1]; a start from a v4 population (which
    lacks it) puts it at the middle, a v5 one keeps its value, and the fitted file is of the newest
    model (v7), which keeps it."""
    dims = space(targets)
    assert (dims["self_knowledge.a"].low, dims["self_knowledge.a"].high) == (0.0, 1.0)
    assert values_of(team(), targets)["self_knowledge.b"] == 0.5
    values = values_of(team(self_knowledge=0.2), targets)
    assert values["self_knowledge.b"] == 0.2
    fitted = population_of(values, targets)
    assert fitted.version == "v9" and fitted.member("b").self_knowledge == 0.2


# vote_accuracy's estimates as the first, seat-by-seat implementation gave them (300 draws, the first
# 40 items): a faster implementation must give every one exactly, or a fit's search would move.
RECORDED = [
    ("v4", ["a"], "arith", 0.5540833333333334),
    ("v4", ["b", "b"], "mmlu", 0.39591666666666664),
    ("v4", ["a", "b"] * 2 + ["a"], "arith", 0.7305),
    ("v5", ["a"] * 9, "mmlu", 0.73775),
    ("v5", ["b", "a"] * 6, "arith", 0.7714166666666666),
    ("v6", ["a"] * 9, "arith", 0.7051666666666667),
    ("v6", ["a", "b"] * 2 + ["a"], "mmlu", 0.6316666666666667),
    ("v8", ["a", "b"] * 2 + ["a"], "arith", 0.6968333333333333),
    ("v8", ["b", "a"] * 6, "mmlu", 0.6064166666666667),
    ("v9", ["b", "b"], "arith", 0.5615833333333333),
    ("v9", ["a"] * 9, "mmlu", 0.699),
    ("v9", ["b", "a"] * 6, "arith", 0.6998333333333333),
]
RECORDED_TEAMS = {
    "v4": team(),
    "v5": team(self_knowledge=0.3),
    "v6": team(self_knowledge=0.6, habit=0.5),
    "v8": team(self_knowledge=0.6, habit=0.5, echo=0.4),
    "v9": team(calibration=0.5, self_knowledge=0.3, habit=0.5, echo={"default": 0.2, "arith": 0.6}),
}


@pytest.mark.parametrize(("version", "seats", "dataset", "value"), RECORDED)
def test_expected_accuracy_is_the_recorded_estimate(
    version: str, seats: list[str], dataset: str, value: float
) -> None:
    items = load_benchmark(dataset, "test", 40)
    assert vote_accuracy(RECORDED_TEAMS[version], seats, items, dataset, draws=300) == value
