"""Population model v7: a member's `insight`, the logit its competence gains when it reads peers'
work in an update (`actors.population`, `docs/population.md`), in the engine, the fit's search space
and the rows the fit's coordinate search scores it on."""

from __future__ import annotations

from typing import Any

from test_calibrate_expected import TARGETS, team
from test_population_v2 import N, ask, assert_gated, assert_replays, hit_rate, population, update

from actors.population import PopulationBackend
from actors.populations import parse
from sweep.calibrate import warm
from sweep.calibrate.space import population_of, space, values_of
from sweep.calibrate.targets import load_targets


def _v7(insight: float) -> Any:
    """The v2 test team with reflection on (an unmoved reader re-solves) and `insight` for everyone."""
    raw = {**population(dynamics__reflect=1.0).content(), "version": "v7"}
    members = {k: {**m, "insight": insight} for k, m in raw["members"].items()}
    return parse("test", {**raw, "members": members})


def test_insight_lifts_a_reader_that_reads_peers_and_no_other() -> None:
    """A weak reader holding a wrong answer, shown one peer who agrees with it, re-solves right far
    more often with insight 2 than with 0; one shown no peer re-solves as before."""
    shown = [update(i, "13", [("13", 3)]) for i in range(N)]
    alone = [update(i, "13", []) for i in range(N)]
    lifted, plain = (PopulationBackend("weak", _v7(x), "weak") for x in (2.0, 0.0))
    assert hit_rate(ask(lifted, shown)) > hit_rate(ask(plain, shown)) + 0.15
    assert ask(lifted, alone) == ask(plain, alone)


def test_v7_without_insight_replies_as_v6_and_older_files_may_not_set_it() -> None:
    """A v7 file with insight 0 draws what the same v6 file draws, reply for reply; a v6 file may not
    set insight and its digest leaves it out; insight must lie in [0, 4]."""
    raw = {**population(dynamics__reflect=0.5).content(), "version": "v6"}
    assert_replays(raw, "insight", "v7")
    assert_gated(raw, "insight", "v7", 5.0, "0, 4")


def test_the_fit_searches_insight_from_zero_on_the_rows_that_debate(tmp_path: Any) -> None:
    """The fit searches each member's insight in [0, 3], from 0 on an older file; the coordinate
    search scores it on the debate rows that seat the member, and it moves no row that never debates."""
    path = tmp_path / "targets.yaml"
    path.write_text(TARGETS % "0, 1", encoding="utf-8")
    targets = load_targets(path)
    dims = space(targets)
    assert (dims["insight.a"].low, dims["insight.a"].high) == (0.0, 3.0)
    assert values_of(team(self_knowledge=0.4, habit=0.2), targets)["insight.a"] == 0.0
    values = {**values_of(team(self_knowledge=0.4), targets), "insight.b": 1.25}
    fitted = population_of(values, targets)
    assert fitted.version == "v9" and fitted.member("b").insight == 1.25
    rows = list(targets.fit_rows())
    bench_of = {"ar": "arith"}
    assert [r.label for r in warm._rows_of("insight.b", rows, bench_of)] == ["Full-Debate"]
    assert [r.label for r in rows if warm._moves("insight.b", r, bench_of, ())] == ["Full-Debate"]
