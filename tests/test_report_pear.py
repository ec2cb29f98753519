"""`sweep report` on `examples/pear_simulated.yaml`'s output reproduces the PEAR table of docs/methods/pear.md: the
table was printed by `bench/pear_vs_fixed.py`, which runs the same grid in-process with its own
tallies. Here both run on a smaller grid (fewer items, seeds and rounds) and every cell of the
report's row must equal the bench's, and its McNemar p-values scipy's on the bench's paired outcomes.
(The full grid: `sweep report` on a 10,000-episode run prints that page's numbers; see docs/results.md.)"""

from __future__ import annotations

import asyncio
import importlib.util
import statistics
import sys
from pathlib import Path
from types import ModuleType

import pytest
from scipy import stats as sps

from actors.registry import build_backend
from data.benchmarks.registry import load_benchmark
from debate.episode import Agent
from debate.methods import build_method
from sweep.report.build import build_tables
from sweep.report.load import load_results
from sweep.report.sections import sections
from tests.conftest import ROOT
from tests.results_helpers import run_in_process, sweep_config

ITEMS, SEEDS, ROUNDS = 12, (0, 1, 2), 2
LABELS = [  # the report's derived label for each row of the bench's table, in the config's order
    "pear", "pear(use_t=False)", "pear(use_i=False)", "pear(use_l=False)",
    "pear(alpha_i=0.0, alpha_l=0.0, alpha_t=0.0)", "pear(selection_temperature=0.0)", "pear(influence=accept)",
    "random(k=2, protocol=critique_revise)", "fixed(topology=clique, protocol=critique_revise)",
    "fixed(topology=ring, protocol=critique_revise)",
]  # fmt: skip


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pear_vs_fixed", ROOT / "bench" / "pear_vs_fixed.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("pear_vs_fixed", module)  # dataclasses look their module up there
    spec.loader.exec_module(sys.modules["pear_vs_fixed"])
    return sys.modules["pear_vs_fixed"]


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, dict[str, list], ModuleType]:
    out = tmp_path_factory.mktemp("pear") / "out"
    sets = (f"datasets.0.limit={ITEMS}", f"seeds={list(SEEDS)}", f"rounds={ROUNDS}")
    tables = build_tables(load_results([run_in_process(sweep_config("pear_simulated", out, *sets))]))
    bench = _bench()
    samples = load_benchmark("arith", "test", limit=ITEMS)
    team = [Agent(name, build_backend("simulated", name, spec)) for name, spec in bench.TEAM.items()]
    tallies = {
        label: [
            asyncio.run(bench.run_seed(build_method(name, args), team, samples, s, ROUNDS)) for s in SEEDS
        ]
        for label, name, args in bench.METHODS
    }
    return tables, tallies, bench


def test_every_cell_of_the_pear_table_equals_the_bench(both: tuple) -> None:
    tables, tallies, bench = both
    rows = list(tables.summary.iter_rows(named=True))
    assert [r["method_label"] for r in rows] == LABELS and len(bench.METHODS) == len(LABELS)
    for row, (label, _, _) in zip(rows, bench.METHODS, strict=True):
        runs = tallies[label]
        n = sum(x.episodes for x in runs)
        accuracy = bench._mean_std([x.correct / x.episodes for x in runs])  # "0.842 ± 0.024"
        assert f"{row['accuracy_mean']:.3f} ± {row['accuracy_std']:.3f}" == accuracy, label
        assert row["tokens_per_task"] == pytest.approx(sum(x.tokens for x in runs) / n)
        assert row["calls_per_task"] == pytest.approx(sum(x.calls for x in runs) / n)
        assert row["round0_accuracy"] == pytest.approx(sum(x.correct0 for x in runs) / n)
        for key in bench.DIAGNOSTICS:
            pooled = [v for x in runs for v in x.diag[key]]
            expected = statistics.mean(pooled) if pooled else None
            assert row[key] == pytest.approx(expected), (label, key)
    paper = sections(tables, "pear")[0].tables[0]
    assert [r[1].strip("*") for r in paper.rows] == [
        f"{r['accuracy_mean']:.3f} ± {r['accuracy_std']:.3f}" for r in rows
    ]


def test_mcnemar_pvalues_equal_scipy_on_the_bench_pairs(both: tuple) -> None:
    tables, tallies, bench = both
    label_of = dict(zip((m[0] for m in bench.METHODS), LABELS, strict=True))
    checked = 0
    for a, b in itertools_pairs([m[0] for m in bench.METHODS]):
        pairs = [
            (x.by_item[i], y.by_item[i])
            for x, y in zip(tallies[a], tallies[b], strict=True)
            for i in x.by_item
        ]
        wins, losses = sum(p and not q for p, q in pairs), sum(q and not p for p, q in pairs)
        row = tables.mcnemar.filter(
            (tables.mcnemar["a_label"] == label_of[a]) & (tables.mcnemar["b_label"] == label_of[b])
        ).row(0, named=True)
        assert (row["paired"], row["b_count"], row["c_count"]) == (len(pairs), wins, losses), (a, b)
        expected = sps.binomtest(wins, wins + losses, 0.5).pvalue if wins + losses else 1.0
        assert row["p"] == pytest.approx(expected, rel=1e-9)
        checked += 1
    assert checked == 45


def itertools_pairs(names: list[str]) -> list[tuple[str, str]]:
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]


def test_the_example_sweep_is_the_bench_grid() -> None:
    """The example and the bench must keep describing the same grid, or the docs' PEAR table drifts."""
    bench = _bench()
    out = Path("unused")
    cfg = sweep_config("pear_simulated", out)
    assert [m.name for m in cfg.method_entries()] == [m[1] for m in bench.METHODS]
    assert [dict(m.args) for m in cfg.method_entries()] == [m[2] for m in bench.METHODS]
    assert {k: dict(v.args) for k, v in cfg.models.items()} == bench.TEAM
    assert (cfg.rounds, list(cfg.seeds), cfg.datasets[0].limit) == (3, [0, 1, 2, 3, 4], 200)
