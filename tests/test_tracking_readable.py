"""MLflow a researcher can read: a simulated sweep's child runs carry plain metric keys, the method
and dataset as tags and run names, only their own method's arguments as params, and the numbers
`sweep report` prints; the parent holds the table (mean ± std over seeds) and no per-method keys."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from mlflow import MlflowClient

from debate.methods import build_method
from sweep.config.sweep import load_config
from sweep.report.load import load_results
from sweep.report.sections import num
from sweep.report.stats import mean_std
from sweep.report.summary import summary_table
from sweep.tracking.choice import TrackingChoice
from sweep.tracking.metrics import as_reported, method_table, runs_view, table_markdown
from sweep.tracking.tracker import TAG_PARENT, read_runs
from sweep.tracking.ui import VIEW_TAG, hint

METHODS: list[Any] = [
    "cot",
    {"name": "random", "args": {"k": 2}},
    {"name": "fixed", "args": {"topology": "ring"}},
]


def js_shown(value: float) -> str:
    """What MLflow's UI shows for a metric below 10: Math.round(1000 v) / 1000 (half up)."""
    return f"{math.floor(value * 1000 + 0.5) / 1000:.3f}"


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path]]:
    """A small simulated sweep run in process and logged to an MLflow file store (seconds faster to
    create than sqlite's schema): three methods (one with an argument the others lack), two seeds."""
    from sweep.run.runner import run_sweep

    tmp = tmp_path_factory.mktemp("readable")
    raw = {
        "name": "readable",
        "output_dir": str(tmp / "out"),
        "models": {"sim": {"engine": "simulated", "args": {"skill": 0.6}}},
        "agents": [{"model": "sim", "count": 3}],
        "datasets": [{"name": "arith", "limit": 7}],
        "methods": METHODS,
        "rounds": 2,
        "seeds": [0, 1],
    }
    (tmp / "s.yaml").write_text(yaml.safe_dump(raw))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 refuses the file store unless told
        outcome = run_sweep(load_config(tmp / "s.yaml"), tracking=TrackingChoice((tmp / "mlruns").as_uri()))
        yield outcome, tmp


def test_children_have_plain_keys_readable_tags_and_names(swept: tuple[Any, Path]) -> None:
    outcome, _ = swept
    runs = read_runs(outcome.tracking_uri, "debate-sweep")
    parent = next(r for r in runs if r["run_id"] == outcome.parent_run_id)
    children = [r for r in runs if r["parent_run_id"] == outcome.parent_run_id]
    assert len(children) == 6
    for run in runs:  # no method or dataset inside a metric key
        assert not [k for k in run["metrics"] if "/" in k], run["run_name"]
    assert set(parent["metrics"]) == {"episodes_done", "cache_hits_this_run"}
    labels = {"cot", "random(k=2)", "fixed(topology=ring)"}
    for c in children:
        tags = c["tags"]
        assert (
            tags["method_label"] in labels and tags["dataset"] == "arith/test" and tags["seed"] in {"0", "1"}
        )
        assert c["run_name"] == f"{tags['method_label']} | arith/test | seed {tags['seed']}"
        assert {"accuracy", "tokens_per_task", "cost_per_task", "n_episodes"} <= set(c["metrics"])
    assert sorted(c["run_name"] for c in children) == sorted(
        f"{label} | arith/test | seed {s}" for label in labels for s in (0, 1)
    )


def test_children_carry_only_their_own_methods_arguments(swept: tuple[Any, Path]) -> None:
    outcome, _ = swept
    children = [r for r in read_runs(outcome.tracking_uri, "debate-sweep") if r["parent_run_id"]]
    for entry in METHODS:
        name, args = (entry, {}) if isinstance(entry, str) else (entry["name"], entry["args"])
        own = {f"method.args.{k}" for k in build_method(name, args).spec.kwargs}  # defaults included
        for c in (c for c in children if c["params"]["method.name"] == name):
            assert {k for k in c["params"] if k.startswith("method.args.")} == own
    assert all(("method.args.k" in c["params"]) == (c["params"]["method.name"] == "random") for c in children)
    assert all(
        "method.args.topology" not in c["params"] for c in children if c["params"]["method.name"] != "fixed"
    )


def test_the_numbers_match_sweep_reports(swept: tuple[Any, Path]) -> None:
    outcome, tmp = swept
    client = MlflowClient(outcome.tracking_uri)
    raw = json.loads(
        Path(client.download_artifacts(outcome.parent_run_id, "results_table.json", str(tmp))).read_text()
    )
    logged = {r["method_label"]: r for r in (dict(zip(raw["columns"], v, strict=True)) for v in raw["data"])}
    note = client.get_run(outcome.parent_run_id).data.tags["mlflow.note.content"]
    report = summary_table(load_results([outcome.out_dir]))
    assert sorted(report["method_label"]) == sorted(logged)
    for row in report.iter_rows(named=True):
        mine = logged[row["method_label"]]
        # (the JSON artifact is pandas' to_json: 10 significant digits)
        assert mine["accuracy_mean"] == pytest.approx(row["accuracy_mean"], abs=1e-9)
        assert mine["accuracy_std"] == pytest.approx(row["accuracy_std"], abs=1e-9)
        cell = f"{num(row['accuracy_mean'])} ± {num(row['accuracy_std'])}"  # as the report's table prints it
        assert f"| {row['method_label']} | arith/test | {cell} |" in note
    # Each child's accuracy (one seed) is shown as the report would print that seed's k/n.
    episodes = pl.read_parquet(outcome.out_dir / "episodes" / "*.parquet")
    for c in (r for r in read_runs(outcome.tracking_uri, "debate-sweep") if r["parent_run_id"]):
        seed = episodes.filter(
            (pl.col("method_label") == c["tags"]["method_label"]) & (pl.col("seed") == int(c["tags"]["seed"]))
        )
        exact = Fraction(int(seed["correct"].sum()), seed.height)
        assert js_shown(c["metrics"]["accuracy"]) == num(float(exact))


def test_the_runs_view_lists_the_children_with_metric_columns(swept: tuple[Any, Path]) -> None:
    outcome, _ = swept
    client = MlflowClient(outcome.tracking_uri)
    exp = client.get_experiment_by_name("debate-sweep")
    assert exp is not None
    view = json.loads(exp.tags[VIEW_TAG + outcome.parent_run_id])
    assert view == runs_view(outcome.parent_run_id) and "metrics.`accuracy`" in view["selectedColumns"]
    found = client.search_runs([exp.experiment_id], view["searchFilter"])
    assert {r.info.run_id for r in found} == {
        r["run_id"] for r in read_runs(outcome.tracking_uri, "debate-sweep") if r["tags"].get(TAG_PARENT)
    }


def frames(accuracies: list[tuple[int, int]]) -> pl.DataFrame:
    """Episode rows of one method: seed i has k_i of n_i right."""
    rows = [
        {
            "method_label": "m",
            "method": "m",
            "dataset": "arith",
            "split": "test",
            "seed": seed,
            "correct": i < k,
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "cost": 0.0,
        }
        for seed, (k, n) in enumerate(accuracies)
        for i in range(n)
    ]
    return pl.DataFrame(rows)


def test_the_table_rounds_the_exact_mean_as_the_report_does() -> None:
    # 7/10 and 29/40: the exact mean is 0.7125 (prints 0.713); a float mean gives 0.71249... (0.712).
    assert f"{(0.7 + 0.725) / 2:.3f}" == "0.712"
    table = method_table(frames([(7, 10), (29, 40)]))
    mean, std = mean_std([Fraction(7, 10), Fraction(29, 40)])
    assert (table["accuracy_mean"][0], table["accuracy_std"][0]) == (mean, std)
    assert f"| m | arith/test | 0.713 ± {num(std)} |" in table_markdown(table)
    one = method_table(frames([(1, 16)]))
    assert one["accuracy_std"][0] is None and "| m | arith/test | 0.062 | 15 |" in table_markdown(one)


def test_logged_values_show_in_mlflow_as_the_report_prints_them() -> None:
    # MLflow's UI rounds half up from 1000 v; the report rounds the exact value half to even.
    assert js_shown(1 / 16) == "0.063" and f"{1 / 16:.3f}" == "0.062"
    for n in range(1, 81):
        for k in range(n + 1):
            assert js_shown(as_reported("accuracy", k / n)) == f"{k / n:.3f}", (k, n)
    assert as_reported("tokens_per_task", 533.5) == 534.0 and as_reported("n_episodes", 7.0) == 7.0


def test_the_hint_is_a_command_that_works_from_a_fresh_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "runs" / "q"
    line = hint(f"sqlite:///{out.resolve() / 'mlflow.db'}", "abc", out)
    assert line.startswith(f"mlflow: sqlite:///{out.resolve()}/mlflow.db (parent run abc); view with: ")
    assert line.endswith(" mlflow runs/q") and "mlflow ui" not in line
    command = line.split("view with: ", 1)[1].split(" mlflow ")[0]
    assert command == "sweep" or Path(command).is_file()  # typed as is: on PATH, or the script's path
    assert hint("http://127.0.0.1:5000/", "abc", out).endswith("open http://127.0.0.1:5000/#/runs/abc")
    other = hint("sqlite:////elsewhere/m.db", "abc", out)
    assert (
        "-m mlflow server --backend-store-uri sqlite:////elsewhere/m.db --host 127.0.0.1 --workers 1" in other
    )
