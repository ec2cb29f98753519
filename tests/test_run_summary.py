"""The table `sweep run` ends with is the report's first table: accuracy mean ± std over seeds, the
seeds, per-task columns only, the plan's labels (one scheme for plan, summary and report), one line
per row at 160 columns."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from rich.console import Console

from debate.spec import canonical_json
from sweep.cli import main
from sweep.config.sweep import load_config
from sweep.report.load import load_results, method_infos
from sweep.report.summary import summary_table as report_summary
from sweep.run.plan import build_plan
from sweep.run.summary import plan_labels, summarize, summary_table
from sweep.store.results import ResultStore

ROOT = Path(__file__).resolve().parents[1]
METHODS = ["cot", {"name": "cot_sc", "args": {"m": 3}}, {"name": "fixed", "args": {"topology": "ring"}}]


def _config(tmp_path: Path, **extra: Any) -> Path:
    cfg = {
        "name": "summary",
        "output_dir": str(tmp_path / "out"),
        "models": {
            "strong": {"engine": "simulated", "args": {"skill": 0.7, "malformed_rate": 0.15}},
            "weak": {"engine": "simulated", "args": {"skill": 0.4}},
        },
        "agents": ["strong", {"model": "weak", "count": 2}],
        "datasets": [{"name": "arith", "limit": 4}],
        "methods": METHODS,
        "rounds": 1,
        "seeds": [0, 1],
        "tracking": {"enabled": False},
        **extra,
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, list[dict[str, Any]], Path]:
    from sweep.run.runner import run_sweep

    tmp = tmp_path_factory.mktemp("summary")
    cfg = load_config(_config(tmp))
    plan = build_plan(cfg)
    outcome = run_sweep(cfg, plan)
    return cfg, plan, outcome.summary, Path(cfg.output_dir)


def test_accuracy_is_mean_and_std_over_seeds(ran: tuple[Any, Any, list[dict[str, Any]], Path]) -> None:
    _, plan, rows, out = ran
    episodes = ResultStore(out).episodes(["method_label", "seed", "correct", "parse_failures"])
    assert [r["method_label"] for r in rows] == ["cot", "cot_sc(m=3)", "fixed(topology=ring)"]
    for r in rows:
        mine = episodes.filter(episodes["method_label"] == r["method_label"])
        per_seed = [mine.filter(mine["seed"] == s)["correct"].mean() for s in (0, 1)]
        assert r["seeds"] == 2 and r["episodes"] == 8
        assert r["accuracy_mean"] == pytest.approx(statistics.mean(per_seed))  # type: ignore[type-var]
        assert r["accuracy_std"] == pytest.approx(statistics.stdev(per_seed))  # type: ignore[type-var]
        assert r["parse_failures_per_task"] == pytest.approx(mine["parse_failures"].mean())
    assert any(r["accuracy_std"] > 0 for r in rows)  # the seeds differ: a ± that says something
    assert any(r["parse_failures_per_task"] > 0 for r in rows)
    text = _render(summary_table(rows, simulated=True))
    for r in rows:
        assert f"{r['accuracy_mean']:.3f} ± {r['accuracy_std']:.3f}" in text
        assert f"{r['parse_failures_per_task']:.2f}" in text
    assert "parse_fail " not in text and "cache_hits" not in text  # no totals among per-task columns


def test_the_summary_is_the_reports_first_table(ran: tuple[Any, Any, list[dict[str, Any]], Path]) -> None:
    _, _, rows, out = ran
    report = {r["method_label"]: r for r in report_summary(load_results([out])).to_dicts()}
    assert set(report) == {r["method_label"] for r in rows}
    for r in rows:
        for col in (
            "accuracy_mean",
            "accuracy_std",
            "unparsable_rate",
            "parse_failures_per_task",
            "tokens_per_task",
            "calls_per_task",
            "cost_per_task",
            "seeds",
            "episodes",
        ):
            assert r[col] == report[r["method_label"]][col], col


def test_plan_and_summary_show_one_label_per_method(
    tmp_path: Path, ran: tuple[Any, Any, list[dict[str, Any]], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    cfg_path = _config(tmp_path)
    assert main(["plan", str(cfg_path)]) == 0
    out = capsys.readouterr().out
    planned = {m.group(1).strip() for m in re.finditer(r"^│ (\S[^│]*?) +│ arith/test", out, flags=re.M)}
    assert planned == {r["method_label"] for r in ran[2]} == {"cot", "cot_sc(m=3)", "fixed(topology=ring)"}
    assert "prompt_style" not in out  # defaults are not spelt out


def test_labels_that_would_collide_are_told_apart_as_the_report_does() -> None:
    def group(rounds: int, protocol: str) -> SimpleNamespace:
        spec = {
            "name": "x",
            "args": {"k": 1},
            "protocol": protocol,
            "rounds": rounds,
            "agents": ["a"],
            "n_agents": 1,
        }
        return SimpleNamespace(method_spec=spec, method=SimpleNamespace(label="x(k=1)"))

    groups = [group(2, "update"), group(3, "update"), group(2, "update")]
    labels = plan_labels(SimpleNamespace(groups=groups))  # type: ignore[arg-type]
    assert list(labels.values()) == [
        "x(k=1) [rounds=2, protocol=update]",
        "x(k=1) [rounds=3, protocol=update]",
    ]
    specs = [canonical_json(g.method_spec) for g in groups]
    infos = method_infos(specs, dict.fromkeys(specs, "x(k=1)"))
    assert {i.key: i.label for i in infos.values()} == labels
    alone = plan_labels(SimpleNamespace(groups=groups[:1]))  # type: ignore[arg-type]
    assert list(alone.values()) == ["x(k=1)"]


def _render(table: Any) -> str:
    console = Console(width=160, record=True, soft_wrap=False)
    console.print(table)
    return console.export_text()


@pytest.mark.parametrize("example", ["quickstart.yaml", "simulated.yaml"])
def test_one_line_per_row_at_160_columns(example: str) -> None:
    """The examples' labels with the widest figures a sweep prints (priced, six-figure tokens)."""
    plan = build_plan(load_config(ROOT / "examples" / example, ["datasets.0.limit=1"]))
    labels = plan_labels(plan)
    datasets = sorted({(g.dataset.name, g.dataset.split) for g in plan.groups})
    rows: list[dict[str, Any]] = [
        {
            "method_label": label,
            "method_key": key,
            "dataset": d,
            "split": s,
            "seeds": 10,
            "episodes": 10_000,
            "accuracy_mean": 0.123,
            "accuracy_std": 0.456,
            "unparsable_rate": 1.0,
            "parse_failures_per_task": 12.5,
            "tokens_per_task": 123456.0,
            "calls_per_task": 120.0,
            "cost_per_task": 12.345678,
        }
        for key, label in labels.items()
        for d, s in datasets
    ]
    lines = _render(summary_table(rows, simulated=False)).splitlines()
    assert max(len(line) for line in lines) <= 160
    body = [line for line in lines if line.startswith("│")]
    assert len(body) == len(rows)  # no cell wrapped onto a second line
    assert all(json.loads(r["method_key"])["name"] in line for r, line in zip(rows, body, strict=True))
    assert "cost/task" in lines[1] + lines[2]


def test_cost_shows_only_when_a_method_is_priced(ran: tuple[Any, Any, list[dict[str, Any]], Path]) -> None:
    rows = ran[2]
    assert "cost/task" not in _render(summary_table(rows, simulated=True))
    priced = [{**rows[0], "cost_per_task": 0.25}, *rows[1:]]
    assert "0.250000" in _render(summary_table(priced, simulated=True))


def test_no_rows_when_nothing_of_the_plan_is_stored(tmp_path: Path) -> None:
    plan = build_plan(load_config(_config(tmp_path)))
    assert summarize(plan, ResultStore(tmp_path / "empty")) == []
