"""Whole sweeps on the session's local Ray with simulated agents: Parquet contract, MLflow runs,
resume after SIGKILL. (The `ray job submit` round trip: tests/test_cluster_cmd.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
import yaml
from mlflow.tracking import MlflowClient

from sweep.config.sweep import load_config
from sweep.run.plan import build_plan
from sweep.store.results import ResultStore
from sweep.tracking.tracker import read_runs
from tests.conftest import ROOT, RayHead, sweep_cmd

pytestmark = pytest.mark.ray

EPISODE_COLUMNS = {
    "episode_id",
    "method",
    "method_spec",
    "dataset",
    "item_id",
    "seed",
    "n_agents",
    "rounds",
    "final_answer",
    "gold",
    "correct",
    "round_correct",
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "parse_failures",
    "simulated",
}
TURN_COLUMNS = {
    "episode_id",
    "round",
    "agent",
    "phase",
    "model",
    "text",
    "answer",
    "confidence",
    "prompt_tokens",
    "completion_tokens",
    "latency_s",
    "parsed",
}


def config(tmp_path: Path, limit: int = 6, latency: float = 0.0, **extra: object) -> Path:
    cfg = {
        "name": "t",
        "output_dir": str(tmp_path / "out"),
        "models": {
            "strong": {
                "engine": "simulated",
                "args": {"skill": 0.8, "latency_s": latency, "malformed_rate": 0.05},
                "price_in": 3.0,
                "price_out": 15.0,
            },
            "weak": {
                "engine": "simulated",
                "args": {"skill": 0.4, "latency_s": latency},
                "price_in": 0.25,
                "price_out": 1.25,
            },
        },
        "agents": ["strong", {"model": "weak", "count": 2}],
        "datasets": [{"name": "arith", "limit": limit}],
        "methods": [
            "cot",
            {"name": "cot_sc", "args": {"m": 3}},
            {"name": "fixed", "args": {"topology": "clique"}},
        ],
        "rounds": 2,
        "seeds": [0, 1],
        **extra,
    }
    p = tmp_path / "sweep.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def test_whole_sweep_writes_the_results_contract_and_mlflow(tmp_path: Path, ray_driver: RayHead) -> None:
    from sweep.run.runner import run_sweep

    cfg = load_config(config(tmp_path))
    plan = build_plan(cfg)
    outcome = run_sweep(cfg, plan)
    assert outcome.stats is not None and outcome.stats.done == len(plan.tasks) == 36
    assert not outcome.stats.failures

    store = ResultStore(outcome.out_dir)
    ep, tu = store.episodes(), store.turns()
    assert set(ep.columns) >= EPISODE_COLUMNS and set(tu.columns) >= TURN_COLUMNS
    assert ep.height == 36 and ep["episode_id"].n_unique() == 36
    assert set(ep["episode_id"]) == {t.episode_id for t in plan.tasks}
    assert ep["simulated"].all()
    assert tu.height == int(ep["calls"].sum())
    assert int(tu["prompt_tokens"].sum()) == int(ep["prompt_tokens"].sum())
    clique = ep.filter(pl.col("method") == "fixed")
    assert clique["round_correct"].list.len().unique().to_list() == [3]
    assert (clique["calls"] == 9).all()
    assert (outcome.out_dir / "config.resolved.yaml").is_file()
    assert 0.0 < float(ep["correct"].mean()) < 1.0  # type: ignore[arg-type]
    # a two-model team: each turn is priced at its own model's rates (USD per million tokens)
    prices = {"strong": (3.0, 15.0), "weak": (0.25, 1.25)}
    priced = tu.with_columns(
        turn_cost=pl.struct("model", "prompt_tokens", "completion_tokens").map_elements(
            lambda t: (
                (prices[t["model"]][0] * t["prompt_tokens"] + prices[t["model"]][1] * t["completion_tokens"])
                / 1e6
            ),
            return_dtype=pl.Float64,
        )
    )
    expected = priced.group_by("episode_id").agg(pl.col("turn_cost").sum()).join(ep, on="episode_id")
    assert set(tu["model"]) == {"strong", "weak"} and expected.height == 36
    assert all(abs(a - b) < 1e-9 for a, b in zip(expected["turn_cost"], expected["cost"], strict=True))

    runs = read_runs(outcome.tracking_uri, "debate-sweep")
    parents = [r for r in runs if "mlflow.parentRunId" not in r["tags"]]
    children = [r for r in runs if r["tags"].get("mlflow.parentRunId") == outcome.parent_run_id]
    assert len(parents) == 1 and len(children) == len(plan.groups) == 6
    fixed = [c for c in children if c["params"].get("method.name") == "fixed"]
    assert all("accuracy" in c["metrics"] and "tokens_per_task" in c["metrics"] for c in children)
    client = MlflowClient(outcome.tracking_uri)
    history = lambda runs: [  # noqa: E731
        len(client.get_metric_history(c["run_id"], "accuracy_round"))
        for c in runs
        if c["params"].get("method.name") == "fixed"
    ]
    assert history(fixed) == [3, 3]
    # The parent's aggregated table: every method x dataset, accuracy mean ± std over the two seeds.
    # (read as a file: MlflowClient.load_table looks the artifact up through the default tracking URI)
    raw = json.loads(
        Path(
            client.download_artifacts(outcome.parent_run_id, "results_table.json", str(tmp_path))
        ).read_text()
    )
    table = [dict(zip(raw["columns"], values, strict=True)) for values in raw["data"]]
    assert sorted(r["method_label"] for r in table) == ["cot", "cot_sc(m=3)", "fixed(topology=clique)"]
    for row in table:
        mine = ep.filter(pl.col("method_label") == row["method_label"])
        per_seed = mine.group_by("seed").agg(pl.col("correct").mean())["correct"]
        assert row["seeds"] == 2 and row["episodes"] == 12 and row["dataset"] == "arith"
        assert row["accuracy_mean"] == pytest.approx(per_seed.mean())
        assert row["accuracy_std"] == pytest.approx(per_seed.std(ddof=1))
    parent_run = client.get_run(outcome.parent_run_id)
    assert not [k for k in parent_run.data.metrics if "/" in k]  # the table holds each method's numbers
    assert "| fixed(topology=clique) | arith/test |" in parent_run.data.tags["mlflow.note.content"]

    again = run_sweep(cfg, build_plan(cfg))
    assert again.stats is None and again.skipped == 36  # no model call, nothing new
    assert store.episodes().height == 36
    runs2 = read_runs(outcome.tracking_uri, "debate-sweep")
    assert len(runs2) == len(runs)
    assert history(runs2) == [3, 3]


def test_sigkill_mid_sweep_then_rerun_loses_and_duplicates_nothing(tmp_path: Path, ray_head: RayHead) -> None:
    p = config(tmp_path, limit=60, latency=0.05, concurrency=4)
    cmd = sweep_cmd("run", str(p), "--address", ray_head.address, "--no-tracking")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parts = tmp_path / "out" / "episodes"
    # Waits for the first part however long start-up takes (it took > 120 s at load average 20): the
    # kill must land mid-sweep, not before the first write.
    deadline = time.time() + 900
    while time.time() < deadline and not list(parts.glob("part-*.parquet")):
        assert proc.poll() is None, "the sweep finished before it could be interrupted"
        time.sleep(0.2)
    assert list(parts.glob("part-*.parquet")), "no part written within 900 s"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    stored = ResultStore(tmp_path / "out").done_ids()
    planned = {t.episode_id for t in build_plan(load_config(p)).tasks}
    assert 0 < len(stored) < len(planned)

    rerun = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"{len(stored)} already stored" in rerun.stdout
    rows = [
        r
        for f in sorted(parts.glob("part-*.parquet"))
        for r in pq.read_table(f, columns=["episode_id"]).column(0).to_pylist()
    ]
    assert len(rows) == len(set(rows)) == len(planned)  # none lost, none duplicated
    assert set(rows) == planned


def test_an_identical_sweep_is_served_by_the_call_cache(tmp_path: Path, ray_driver: RayHead) -> None:
    import shutil

    from sweep.run.runner import run_sweep

    cfg = load_config(config(tmp_path, limit=3), ["tracking.enabled=false"])
    first = run_sweep(cfg, build_plan(cfg))
    assert first.stats is not None and first.stats.cache_hits < first.stats.calls
    # cot, cot_sc and the clique debate share round 0 under a seed: the cache already pays once.
    assert first.stats.cache_hits > 0
    before = ResultStore(first.out_dir).episodes().sort("episode_id")["final_answer"].to_list()
    for table in ("episodes", "turns"):
        shutil.rmtree(first.out_dir / table)
    second = run_sweep(cfg, build_plan(cfg))
    assert second.stats is not None and second.stats.done == first.stats.done
    assert second.stats.cache_hits == second.stats.calls  # zero engine calls
    turns = ResultStore(second.out_dir).turns()
    assert turns["cache_hit"].all()
    assert ResultStore(second.out_dir).episodes().sort("episode_id")["final_answer"].to_list() == before
