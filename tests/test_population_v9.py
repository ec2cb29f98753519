"""Population model v9: a member's `echo` given once per benchmark (`actors.population`,
`docs/population.md`), in the engine, in the fit's expected accuracy, in its search space, and the
coordinate search's profiled move (echo with the skill re-chosen beside it)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pytest
from test_calibrate import TARGETS as FIT_TARGETS
from test_calibrate_expected import TARGETS, team
from test_population_v2 import ask, initial, population

from actors.population import PopulationBackend
from actors.populations import Population, parse
from data.benchmarks.registry import load_benchmark
from sweep.calibrate import warm
from sweep.calibrate.evaluate import RowResult, row_method
from sweep.calibrate.expected import vote_accuracy
from sweep.calibrate.space import population_of, space, values_of
from sweep.calibrate.targets import load_targets


def _pop(version: str, echo: Any) -> Population:
    raw = {**population().content(), "version": version}
    members = {k: {**m, "echo": echo} for k, m in raw["members"].items()}
    return parse("test", {**raw, "members": members})


def _largest_share(pop: Population, dataset: str) -> float:
    """Over 12 items, the mean share of member `mid`'s first answers (10 seats, 10 seeds) that its
    most frequent answer on the item takes."""
    backend = PopulationBackend("mid", pop, "mid")
    shares = []
    for item in range(12):
        got: Counter[str] = Counter()
        for seed in range(10):
            hints = [initial(item, agent=a, dataset=dataset) for a in range(10)]
            got.update(r["answer"] for r in ask(backend, hints, seed=seed))
        shares.append(max(got.values()) / 100)
    return sum(shares) / len(shares)


def test_echo_per_benchmark_makes_first_answers_repeat_on_that_benchmark_only() -> None:
    """Echo 1 on `hard` and 0 elsewhere: every first answer on a `hard` item is one answer, while on
    the default benchmark they vary as at echo 0."""
    pop = _pop("v9", {"default": 0.0, "hard": 1.0})
    assert _largest_share(pop, "hard") == 1.0
    assert _largest_share(pop, "") == _largest_share(_pop("v8", 0.0), "") < 0.9


def test_one_number_replies_as_v8_and_a_mapping_needs_v9() -> None:
    """A v8 file read as v9 draws the same replies (one echo number holds on every benchmark); a v8
    file may not give echo per benchmark; a v9 mapping needs `default` and numbers in [0, 1]."""
    old, new = _pop("v8", 0.4), _pop("v9", 0.4)
    hints = [initial(i) for i in range(150)] + [initial(i, dataset="hard") for i in range(150)]
    for m in ("weak", "mid"):
        assert ask(PopulationBackend(m, old, m), hints) == ask(PopulationBackend(m, new, m), hints)
    assert new.content()["members"]["mid"]["echo"] == 0.4
    with pytest.raises(ValueError, match=r"members.\w+.echo: one number per benchmark is read from .* v9 on"):
        _pop("v8", {"default": 0.4})
    with pytest.raises(ValueError, match=r"members.\w+.echo: needs a 'default' entry"):
        _pop("v9", {"hard": 0.4})
    with pytest.raises(ValueError, match=r"members.\w+.echo.hard: must be a number in \[0, 1\]"):
        _pop("v9", {"default": 0.0, "hard": 1.5})


def test_the_expected_vote_follows_each_benchmarks_echo() -> None:
    """A five-sample vote gains less over one sample on the benchmark whose echo is high."""
    items = load_benchmark("arith", "test", 200)

    def gain(echo: dict[str, float]) -> float:
        pop = team(calibration=0.0, echo=echo)
        five, one = (vote_accuracy(pop, ["b"] * n, items, "arith", draws=400) for n in (5, 1))
        return five - one

    assert gain({"default": 0.9, "arith": 0.0}) > gain({"default": 0.0, "arith": 0.9}) + 0.03


def test_the_fit_searches_echo_per_benchmark_from_an_older_files_number(tmp_path: Any) -> None:
    """The fit searches each member's echo on each benchmark in [0, 1]: from a v8 file's one number,
    from 0 on an older file, on the rows that seat the member on that benchmark."""
    path = tmp_path / "targets.yaml"
    path.write_text(TARGETS % "0, 1", encoding="utf-8")
    targets = load_targets(path)
    dims = space(targets)
    assert (dims["echo.a.arith"].low, dims["echo.a.arith"].high) == (0.0, 1.0) and "echo.a" not in dims
    assert values_of(team(habit=0.2), targets)["echo.a.arith"] == 0.0
    assert values_of(team(echo=0.35), targets)["echo.a.arith"] == 0.35
    values = {**values_of(team(echo=0.35), targets), "echo.b.arith": 0.75}
    fitted = population_of(values, targets)
    assert fitted.version == "v9" and fitted.member("b").echo_on("arith") == 0.75
    rows = list(targets.fit_rows())
    seated = [r.label for r in rows if "b" in r.agents]
    assert [r.label for r in warm._rows_of("echo.b.arith", rows, {"ar": "arith"})] == seated


def test_echo_moves_with_the_skill_rechosen_on_the_rows_that_never_debate(tmp_path: Any) -> None:
    """A valley the profiled move can follow and no one-at-a-time move can: the one-sample row asks
    for a skill that rises with echo, the debate row for echo 0.8. Moved alone, echo leaves the skill
    behind and the one-sample row costs far more than the debate row gains; moved with the skill
    re-chosen on the one-sample row, echo goes to about 0.8 and the skill rises with it."""
    path = tmp_path / "targets.yaml"
    path.write_text(FIT_TARGETS, encoding="utf-8")
    t = load_targets(path)
    dims = space(t)
    start = {k: (d.low + d.high) / 2 for k, d in dims.items()} | {"echo.a.arith": 0.0}

    def share(pop: Population) -> float:
        d = dims["skill.a.arith"]
        return (pop.members["a"].skill_on("arith") - d.low) / (d.high - d.low)

    class Valley:
        def run(self, rows: list, pop: Population) -> dict[str, RowResult]:
            echo = pop.members["a"].echo_on("arith")
            out = {}
            for r in rows:
                quiet = row_method(r, {}).rounds == 0
                depth = 100 * abs(share(pop) - 0.5 - echo / 4) if quiet else abs(echo - 0.8)
                out[r.key] = RowResult(r.key, depth, None, math.nan, math.nan, None, 1)
            return out

    score = lambda rows, results: sum(results[r.key].acc for r in rows) / len(rows)  # noqa: E731
    found = warm.warm_start(t, Valley(), lambda pop: pop, dict(start), score, lambda line: None)  # type: ignore[arg-type]
    assert abs(found["echo.a.arith"] - 0.8) < 0.05
    skill = (found["skill.a.arith"] - dims["skill.a.arith"].low) / 10
    assert skill == pytest.approx(0.5 + found["echo.a.arith"] / 4, abs=1e-3)
