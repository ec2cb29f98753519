"""`sweep report` over real (simulated, in-process) sweep results: every number checked against an
independent computation from the Parquet rows (polars, numpy, scipy), pairing only on shared
(item, seed), newer columns used where present, files and MLflow artifacts written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from scipy import stats as sps

from sweep.cli import main
from sweep.report.build import build_report, build_tables
from sweep.report.layout import paper_tables
from sweep.report.load import committed_parts, load_results
from sweep.store.results import ResultStore
from sweep.store.targets import REPORT_MARK
from tests.results_helpers import add_columns, drop_columns, run_in_process, sweep_config

TEAM = {
    "models": {
        "strong": {"engine": "simulated", "args": {"skill": 0.75}, "price_in": 3.0, "price_out": 15.0},
        "weak": {"engine": "simulated", "args": {"skill": 0.45}, "price_in": 0.25, "price_out": 1.25},
    },
    "agents": ["strong", {"model": "weak", "count": 2}],
    "rounds": 2,
    "seeds": [0, 1],
}


@pytest.fixture(scope="module")
def sim_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "sim"
    return run_in_process(sweep_config("simulated", out, "datasets.0.limit=12", "seeds=[0,1,2]"))


def _sweep(tmp: Path, out: Path, methods: list, offset: int, limit: int, **extra: object) -> None:
    data = {"name": "arith", "offset": offset, "limit": limit}
    cfg = {**TEAM, "name": "t", "datasets": [data], "methods": methods, **extra}
    run_in_process(sweep_config(cfg, out, tmp=tmp))


def _row(table: pl.DataFrame, label: str) -> dict:
    return table.filter(pl.col("method_label") == label).row(0, named=True)


def test_summary_equals_an_independent_computation(sim_out: Path) -> None:
    t = build_tables(load_results([sim_out]))
    ep = (
        ResultStore(sim_out)
        .episodes()
        .with_columns(tokens=pl.col("prompt_tokens") + pl.col("completion_tokens"))
    )
    labels = {"fixed": "fixed(topology=clique)", "cot": "cot"}
    clique = ep.filter(pl.col("method_spec").str.contains('"topology":"clique"'))
    for method, label in labels.items():
        mine = ep.filter((pl.col("method") == method) & ~pl.col("method_spec").str.contains("ring"))
        row = _row(t.summary, label)
        per_seed = mine.group_by("seed").agg(pl.col("correct").mean())["correct"].to_numpy()
        assert row["accuracy_mean"] == pytest.approx(per_seed.mean())
        assert row["accuracy_std"] == pytest.approx(per_seed.std(ddof=1))
        ci = sps.binomtest(int(mine["correct"].sum()), mine.height).proportion_ci(method="wilson")
        assert (row["accuracy_lo"], row["accuracy_hi"]) == (pytest.approx(ci.low), pytest.approx(ci.high))
        assert row["tokens_per_task"] == pytest.approx(mine["tokens"].mean())
        assert row["episodes"] == mine.height == 36 and row["seeds"] == 3 and row["items"] == 12
        both = mine.join(clique, on=["item_id", "seed"], suffix="_c")
        assert row["tokens_pct_clique"] == pytest.approx(100 * both["tokens"].sum() / both["tokens_c"].sum())
    assert _row(t.summary, "fixed(topology=clique)")["tokens_pct_clique"] == pytest.approx(100.0)
    assert _row(t.summary, "cot")["unparsable_rate"] == pytest.approx(
        1 - ep.filter(pl.col("method") == "cot")["final_answer"].is_not_null().mean()
    )


def test_mcnemar_pvalues_match_scipy_on_the_parquet_rows(sim_out: Path) -> None:
    t = build_tables(load_results([sim_out]))
    ep = ResultStore(sim_out).episodes()
    assert t.mcnemar.height == 10  # 5 methods: every unordered pair once
    for r in t.mcnemar.iter_rows(named=True):
        xa = ep.filter(
            pl.col("method_spec").map_elements(lambda s, k=r["a"]: _key(s) == k, return_dtype=pl.Boolean)
        )
        xb = ep.filter(
            pl.col("method_spec").map_elements(lambda s, k=r["b"]: _key(s) == k, return_dtype=pl.Boolean)
        )
        both = xa.join(xb, on=["item_id", "seed"], suffix="_b")
        b = int((both["correct"] & ~both["correct_b"]).sum())
        c = int((~both["correct"] & both["correct_b"]).sum())
        assert (r["paired"], r["b_count"], r["c_count"]) == (both.height, b, c)
        expected = sps.binomtest(b, b + c, 0.5).pvalue if b + c else 1.0
        assert r["p"] == pytest.approx(expected, rel=1e-9)
        assert r["p_holm"] >= r["p"]
    # Holm within the family: the smallest p is multiplied by the family size
    smallest = t.mcnemar.sort("p").row(0, named=True)
    assert smallest["p_holm"] == pytest.approx(min(1.0, 10 * smallest["p"]))


def _key(spec: str) -> str:
    d = json.loads(spec)
    return json.dumps(
        {k: v for k, v in d.items() if k not in ("agents", "n_agents")}, sort_keys=True, separators=(",", ":")
    )


def test_per_round_accuracy_is_the_vote_after_each_round(sim_out: Path) -> None:
    t = build_tables(load_results([sim_out]))
    ep = ResultStore(sim_out).episodes().filter(pl.col("method_spec").str.contains("ring"))
    rows = t.per_round.filter(pl.col("method_label") == "fixed(topology=ring)").sort("round")
    assert rows["round"].to_list() == [0, 1, 2, 3]
    for r, acc in zip(rows["round"], rows["vote_accuracy"], strict=True):
        assert acc == pytest.approx(ep["round_correct"].list.get(r).mean())
    assert rows["tokens"].null_count() == 0 and rows["answer_entropy"].null_count() == 0


def test_pairs_without_overlap_are_reported_never_averaged(tmp_path: Path) -> None:
    out = tmp_path / "out"
    clique, ring = (
        {"name": "fixed", "args": {"topology": "clique"}},
        {"name": "fixed", "args": {"topology": "ring"}},
    )
    _sweep(tmp_path, out, ["cot"], offset=0, limit=4)
    _sweep(tmp_path, out, [clique], offset=4, limit=4)
    _sweep(tmp_path, out, [ring], offset=2, limit=4)
    _sweep(tmp_path, out, [{"name": "random", "args": {"k": 1}}], offset=4, limit=4, seeds=[1])
    solo = {"solo": {"engine": "simulated", "args": {"skill": 0.6}}}
    _sweep(tmp_path, out, ["cot", clique], offset=0, limit=4, models=solo, agents=["solo", "solo"])
    results = load_results([out])
    assert set(results.episodes["team"]) == {"strong+weak", "solo"}  # cot on `strong` alone joins its team
    t = build_tables(results)
    team = t.mcnemar.filter(pl.col("team") == "strong+weak")
    rows = {frozenset((r["a_label"], r["b_label"])): r for r in team.iter_rows(named=True)}
    assert len(rows) == 6 and t.mcnemar.filter(pl.col("team") == "solo").height == 1  # teams never pair
    none = rows[frozenset(("cot", "fixed(topology=clique)"))]
    assert (none["paired"], none["note"], none["p"], none["p_holm"]) == (0, "no overlap", None, None)
    part = rows[frozenset(("cot", "fixed(topology=ring)"))]  # items 2, 3 shared, under 2 seeds
    assert (part["paired"], part["only_a"], part["only_b"]) == (4, 4, 4) and part["p"] is not None
    one_seed = rows[frozenset(("random(k=1)", "fixed(topology=clique)"))]
    assert (one_seed["paired"], one_seed["only_a"] + one_seed["only_b"]) == (4, 4)  # seed 1 only
    summary = t.summary.filter(pl.col("team") == "strong+weak")
    cot = _row(summary, "cot")
    assert cot["paired_with_reference"] == 0 and cot["tokens_pct_clique"] is None
    assert cot["cost_pct_clique"] is None and cot["pareto_axis"] == "cost_per_task"  # the team is priced
    ep = (
        ResultStore(out).episodes().with_columns(tokens=pl.col("prompt_tokens") + pl.col("completion_tokens"))
    )
    rand = ep.filter(pl.col("method") == "random")
    ref = ep.filter((pl.col("method") == "fixed") & pl.col("method_spec").str.contains("clique") & (pl.col("seed") == 1)
                    & pl.col("models").list.contains("weak"))  # fmt: skip
    expected = (
        100
        * rand["tokens"].sum()
        / ref.filter(pl.col("item_id").is_in(rand["item_id"].to_list()))["tokens"].sum()
    )
    assert _row(summary, "random(k=1)")["tokens_pct_clique"] == pytest.approx(expected)


def test_unparsable_counts_as_wrong_and_answered_accuracy_leaves_it_out(tmp_path: Path) -> None:
    out = tmp_path / "out"
    models = {"flaky": {"engine": "simulated", "args": {"skill": 0.7, "malformed_rate": 0.5}}}
    _sweep(tmp_path, out, ["cot"], offset=0, limit=20, models=models, agents=["flaky"])
    ep = ResultStore(out).episodes()
    answered = ep.filter(pl.col("final_answer").is_not_null())
    assert 0 < answered.height < ep.height  # some replies were unreadable, so some votes are empty
    row = _row(build_tables(load_results([out])).summary, "cot")
    assert row["unparsable_rate"] == pytest.approx(1 - answered.height / ep.height)
    assert row["accuracy_mean"] == pytest.approx(
        ep.group_by("seed").agg(pl.col("correct").mean())["correct"].mean()
    )
    per_seed = answered.group_by("seed").agg(pl.col("correct").mean())["correct"]
    assert row["answered_accuracy_mean"] == pytest.approx(per_seed.mean())
    assert row["answered_accuracy_mean"] > row["accuracy_mean"]


def test_newer_columns_are_used_and_older_parts_still_read(sim_out: Path, tmp_path: Path) -> None:
    out = tmp_path / "sim"
    shutil.copytree(sim_out, out, ignore=shutil.ignore_patterns("report"))
    newest = committed_parts(out)[-1]
    new_episode_cols = ["method_label"]
    new_round_cols = ["active", "edge_src", "edge_tgt", "edge_weight", "max_tokens", "decision", "cost"]
    for part in committed_parts(out)[:-1]:  # the older parts: written before these columns existed
        drop_columns(part, new_episode_cols)
        drop_columns(out / "rounds" / part.name, new_round_cols)
    spec = pl.read_parquet(newest)["method_spec"][0]  # a method of the newest part gets a stored label
    derived = load_results([out]).episodes.filter(pl.col("method_spec") == spec)["method_label"][0]
    add_columns(
        newest,
        {
            "method_label": (
                pa.string(),
                lambda r: "Stored label $\\frac{$ <b>" if r["method_spec"] == spec else None,
            )
        },
    )
    add_columns(out / "rounds" / newest.name, {
        "active": (pa.list_(pa.int32()), [0, 1]),
        "edge_src": (pa.list_(pa.int32()), [1]), "edge_tgt": (pa.list_(pa.int32()), [0]),
        "edge_weight": (pa.list_(pa.float64()), [0.25]), "cost": (pa.float64(), 0.5),
        "decision": (pa.string(), '{"keep": [1, 0]}'),
    })  # fmt: skip
    results = load_results([out])
    labels = set(results.episodes["method_label"].to_list())
    assert (
        "Stored label $\\frac{$ <b>" in labels and derived not in labels
    )  # one label per method, older parts too
    report = build_report([out], out / "report")  # the label is drawn as text and written escaped
    assert "Stored label $\\frac{$ &lt;b&gt;" in (report.report_dir / "index.html").read_text()
    t = build_tables(results)
    assert {"cost", "active_agents", "mean_edge_weight"} <= set(t.per_round.columns)
    assert t.per_round["active_agents"].drop_nulls().to_list() and set(
        t.per_round["mean_edge_weight"].drop_nulls()
    ) == {0.25}
    from sweep.view.data import ViewData

    view = ViewData([out])
    new_id = view.index.filter(pl.col("_part") == newest.name)["episode_id"][0]
    old_id = view.index.filter(pl.col("_part") == committed_parts(out)[0].name)["episode_id"][0]
    new = view.episode(new_id)
    assert new is not None
    assert new["rounds"][1]["graph_from"] == "rounds"
    assert new["rounds"][1]["edges"] == [{"source": 1, "target": 0, "weight": 0.25}]
    assert new["rounds"][1]["decision"] == {"keep": [1, 0]} and new["rounds"][1]["active"] == [0, 1]
    old = view.episode(old_id)
    assert old is not None and all(r["graph_from"] == "turns" for r in old["rounds"])


def test_cli_writes_every_output_and_replaces_the_old_report(
    sim_out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = sim_out / "report" / "stale.txt"
    stale.parent.mkdir(exist_ok=True)
    stale.write_text("old")
    (stale.parent / REPORT_MARK).write_text("{}")  # an earlier report: replaced whole (else refused)
    assert main(["report", str(sim_out), "--no-tracking"]) == 0
    printed = capsys.readouterr().out
    assert "## Papers' layout (pear)" in printed and "| fixed(topology=clique) |" in printed
    report = sim_out / "report"
    assert not stale.exists()
    for name in ("summary", "mcnemar", "spearman", "per_round"):
        assert pl.read_parquet(report / f"{name}.parquet").equals(pl.read_parquet(report / f"{name}.parquet"))
        assert (report / f"{name}.csv").stat().st_size > 0
    pngs = sorted((report / "plots").glob("*.png"))
    assert {p.name.split("__")[0] for p in pngs} == {"pareto", "rounds", "diagnostics", "mcnemar"}
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    html = (report / "index.html").read_text()
    assert html.count("data:image/png;base64,") == len(pngs) and "<script" not in html


def test_cli_refuses_a_dir_without_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nope" in err and "episodes/" in err
    assert not (tmp_path / "nope").exists()
    (tmp_path / "empty" / "episodes").mkdir(parents=True)
    assert main(["report", str(tmp_path / "empty")]) == 2
    assert "no committed part" in capsys.readouterr().err


def test_papers_layouts(sim_out: Path) -> None:
    t = build_tables(load_results([sim_out]))
    cpp = paper_tables(t.summary, t.order, "cpp")[0]
    assert cpp.columns == ["method", "arith Acc (%)", "arith Cost"]
    rows = {r[0]: r for r in cpp.rows}
    assert rows["fixed(topology=clique)"][2] == "100.00%"
    clique = _row(t.summary, "fixed(topology=clique)")
    assert (
        rows["fixed(topology=clique)"][1].strip("*")
        == f"{100 * clique['accuracy_mean']:.2f} ± {100 * clique['accuracy_std']:.2f}"
    )
    rumad = paper_tables(t.summary, t.order, "rumad")[0]
    assert [r[2] for r in rumad.rows if r[0] == "cot"] == [
        f"{_row(t.summary, 'cot')['tokens_per_task'] / 1000:.1f}"
    ]
    best = max(t.summary["accuracy_mean"])
    bold = [r[0] for r in paper_tables(t.summary, t.order, "pear")[0].rows if r[1].startswith("**")]
    assert bold == [r["method_label"] for r in t.summary.iter_rows(named=True) if r["accuracy_mean"] == best]
    assert [r[0] for r in cpp.rows] == [
        "cot",
        "cot_sc(m=5)",
        "fixed(topology=clique)",
        "fixed(topology=ring)",
        "random(k=2)",
    ]
    with pytest.raises(ValueError, match="unknown layout"):
        paper_tables(t.summary, t.order, "nope")


def test_report_is_logged_to_the_sweeps_mlflow_parent_run(sim_out: Path, tmp_path: Path) -> None:
    from mlflow import MlflowClient

    from sweep.run.runner import run_sweep

    out = tmp_path / "tracked"
    shutil.copytree(sim_out, out, ignore=shutil.ignore_patterns("report"))
    cfg = sweep_config("simulated", out, "datasets.0.limit=12", "seeds=[0,1,2]")
    outcome = run_sweep(cfg)  # every episode is stored: no Ray, only the MLflow logging
    assert outcome.skipped == outcome.planned and outcome.parent_run_id
    assert main(["report", str(out)]) == 0
    client = MlflowClient(tracking_uri=outcome.tracking_uri)
    names = {a.path for a in client.list_artifacts(outcome.parent_run_id, "report")}
    assert {"report/index.html", "report/summary.csv", "report/plots"} <= names
    plots = {Path(a.path).name for a in client.list_artifacts(outcome.parent_run_id, "report/plots")}
    assert plots == {p.name for p in (out / "report" / "plots").glob("*.png")}


def test_build_report_leaves_the_old_report_when_writing_fails(
    sim_out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "rep"
    build_report([sim_out], target)
    before = sorted(p.name for p in target.iterdir())

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("sweep.report.build.write_html", boom)
    with pytest.raises(OSError, match="disk full"):
        build_report([sim_out], target)
    assert sorted(p.name for p in target.iterdir()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".rep.lock", "rep"]  # no temp dir left behind
    assert np.isfinite(pl.read_parquet(target / "summary.parquet")["accuracy_mean"].to_numpy()).all()


@pytest.mark.parametrize(
    ("example", "layout", "columns"),
    [
        ("table_pear", "pear", ["mmlu_pro", "truthfulqa", "gsm8k", "math500"]),
        ("table_rumad", "rumad", ["mmlu ACC (%)", "mmlu TC (k/task)", "mmlu Saving", "gpqa_main ACC (%)"]),
        (
            "table_cpp",
            "cpp",
            ["math_hard Acc (%)", "math_hard Cost", "gpqa_diamond Acc (%)", "gpqa_diamond Cost"],
        ),
    ],
)
def test_the_papers_table_examples_print_in_their_layout(
    example: str, layout: str, columns: list[str], tmp_path: Path
) -> None:
    cfg = sweep_config(example, tmp_path / "out")
    shrink = [f"datasets.{i}.limit=3" for i in range(len(cfg.datasets))]
    out = run_in_process(sweep_config(example, tmp_path / "out", *shrink, "seeds=[0,1]", "rounds=1"))
    t = build_tables(load_results([out]))
    (table,) = paper_tables(t.summary, t.order, layout, t.benchmarks)
    assert table.columns[1 : 1 + len(columns)] == columns  # benchmarks in the config's order
    settled_later = [m for m in cfg.methods if m.args.get("match")]  # cost-matched: `sweep run` settles them
    assert len(table.rows) == len(cfg.methods) - len(settled_later) and all(
        "–" not in r[1] for r in table.rows
    )
    if layout == "rumad":
        mad = _row(t.summary, "fixed(topology=clique, prompt_style=rumad)")
        star = table.rows[1]
        assert table.rows[0][3] == "N/A" and mad["method_key"] == mad["reference"]
        expected = _row(
            t.summary.filter(pl.col("dataset") == "mmlu"), "fixed(topology=star, prompt_style=rumad)"
        )
        assert star[3] == f"{expected['tokens_pct_clique'] - 100:+.2f}%" and star[3].startswith("-")
