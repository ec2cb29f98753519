"""Tracker against a real sqlite MLflow store: parent/child runs, batched metrics, artifacts, reruns."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from mlflow import MlflowClient

from debate.diagnostics import diagnose
from debate.graph import Graph
from debate.state import DebateState, View
from sweep.store.records import round_rows
from sweep.store.results import ResultStore
from sweep.tracking.choice import OFF, TrackingChoice, choose_tracking, default_tracking_uri, tracker_for
from sweep.tracking.metrics import diagnostic_metrics, group_metrics
from sweep.tracking.tracker import (
    TAG_GROUP,
    TAG_N_EPISODES,
    TAG_PARENT,
    Tracker,
    flatten_params,
    read_runs,
)


@pytest.fixture(scope="module")
def uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    # Creating the sqlite schema costs seconds: once per module, one experiment per test.
    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"
    MlflowClient(tracking_uri=uri).search_experiments()
    return uri


@pytest.fixture
def out_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    return tmp_path / "out"


def group_frames(tmp: Path, n: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """n episodes (every other one correct after round 1, none at round 0) through a real ResultStore."""
    store = ResultStore(tmp / f"store-{seed}-{n}")
    eps: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for i in range(n):
        eid = f"s{seed}-e{i}"
        correct = i % 2 == 0
        eps.append({
            "episode_id": eid, "sweep_id": "sw", "method": "mad", "method_spec": "{}", "dataset": "gsm8k",
            "split": "test", "item_id": str(i), "seed": seed, "n_agents": 2, "rounds": 2,
            "models": ["m"], "final_answer": "1" if correct else None, "gold": "1", "correct": correct,
            "round_correct": [False, correct, correct], "round_answers": ["0", "1", "1"], "calls": 6,
            "prompt_tokens": 100, "completion_tokens": 20, "cached_tokens": 10, "cache_hits": 0, "cost": 0.5,
            "parse_failures": 3 if i == 0 else 0, "simulated": True, "latency_s": 1.0,
            "finished_at": datetime(2025, 1, 1, tzinfo=UTC),
        })  # fmt: skip
        turns.append({
            "episode_id": eid, "round": 0, "agent": 0, "phase": "initial", "model": "m", "text": "t",
            "answer": None, "confidence": None, "reasoning": "", "parsed": False, "prompt_tokens": 100,
            "completion_tokens": 20, "cached_tokens": 10, "latency_s": 1.0, "seed": None, "cache_hit": False, "sources": [],
        })  # fmt: skip
    store.append(eps, turns)
    return store.episodes(), store.turns()


def test_one_tracking_choice_per_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Off by the flag or the config whatever the URIs say; else the flag's store, the config's, the
    environment's, the output dir's, in that order; `tracker_for` builds the real one only when on."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    assert choose_tracking(tmp_path, no_tracking=True, flag_uri="sqlite:///f.db") == OFF
    assert choose_tracking(
        tmp_path, False, "sqlite:///c.db", "exp", flag_uri="sqlite:///f.db"
    ) == TrackingChoice(None, "exp")
    assert (
        choose_tracking(tmp_path, True, "sqlite:///c.db", "exp", flag_uri="sqlite:///f.db").uri
        == "sqlite:///f.db"
    )
    assert choose_tracking(tmp_path, True, "sqlite:///c.db", "exp") == TrackingChoice("sqlite:///c.db", "exp")
    assert choose_tracking(tmp_path).uri == "http://127.0.0.1:5000"
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    assert choose_tracking(tmp_path).uri == f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    made: list[str] = []
    real = lambda uri: made.append(uri) or "real"  # noqa: E731
    assert tracker_for(OFF, real, lambda: "null") == "null" and made == []
    assert tracker_for(TrackingChoice("sqlite:///x.db"), real, lambda: "null") == "real" and made == [
        "sqlite:///x.db"
    ]


def test_default_uri_and_flatten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert default_tracking_uri(tmp_path) == f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    assert default_tracking_uri(tmp_path) == "http://127.0.0.1:5000"
    # a command's --tracking-uri, then the config's tracking.uri, come before the environment
    assert default_tracking_uri(tmp_path, None, "sqlite:///c.db") == "sqlite:///c.db"
    assert default_tracking_uri(tmp_path, "file:///cli", "sqlite:///c.db") == "file:///cli"
    assert default_tracking_uri(tmp_path, None, "") == "http://127.0.0.1:5000"
    flat = flatten_params({"method": {"name": "pear", "args": {"k": 3, "models": ["a", "b"]}}, "x": None})
    assert flat == {
        "method.name": "pear",
        "method.args.k": "3",
        "method.args.models": '["a", "b"]',
        "x": "None",
    }
    assert len(flatten_params({"long": "y" * 7000})["long"]) == 6000


def test_group_metrics_per_round_over_reached_episodes() -> None:
    eps = pl.DataFrame(
        {
            "correct": [True, False], "calls": [4, 6], "prompt_tokens": [10, 30], "completion_tokens": [5, 5],
            "cached_tokens": [0, 2], "cost": [0.0, 1.0], "latency_s": [1.0, 3.0], "parse_failures": [1, 0],
            "cache_hits": [0, 3],
            "round_correct": [[False, True], [True, False, False]],
        }
    )  # fmt: skip
    scalars, per_round = group_metrics(eps)
    assert per_round == [0.5, 0.5, 0.0]
    assert scalars["accuracy"] == 0.5 and scalars["calls_per_task"] == 5.0
    assert scalars["tokens_per_task"] == 25.0 and scalars["parse_failure_rate"] == 0.1
    assert scalars["cost_per_task"] == 0.5 and scalars["parse_failures_per_task"] == 0.5
    assert scalars["cached_tokens_per_task"] == 1.0 and scalars["prefix_cached_share"] == 0.05  # 2 of 40
    assert group_metrics(eps.with_columns(pl.lit(0).alias("prompt_tokens")))[0]["prefix_cached_share"] == 0.0


def test_sweep_runs_metrics_artifacts_and_reruns(uri: str, out_dir: Path, tmp_path: Path) -> None:
    client = MlflowClient(tracking_uri=uri)
    params = flatten_params({"sweep": {"name": "s1", "seeds": [1, 2]}})
    tracker = Tracker(uri, "exp-main", out_dir)
    parent = tracker.start_sweep("sw-1", "my sweep", params, {"owner": "test"})
    frames = {seed: group_frames(tmp_path, 4, seed) for seed in (1, 2)}
    child_ids = {}
    for seed, (eps, turns) in frames.items():
        gp = flatten_params({"method": {"name": "mad", "args": {"rounds": 2}}, "seed": seed})
        child_ids[seed] = tracker.log_group(f"mad|gsm8k|{seed}", f"mad-{seed}", gp, eps, turns)
    tracker.finish_sweep(metrics={"best_accuracy": 0.5})

    runs = read_runs(uri, "exp-main")
    assert [r["run_id"] for r in runs][0] == parent and len(runs) == 3
    assert runs[0]["params"] == {"sweep.name": "s1", "sweep.seeds": "[1, 2]"}
    assert runs[0]["status"] == "FINISHED" and runs[0]["metrics"] == {"best_accuracy": 0.5}
    assert runs[0]["tags"]["owner"] == "test"
    child = next(r for r in runs if r["run_id"] == child_ids[1])
    assert child["parent_run_id"] == parent and child["status"] == "FINISHED"
    assert child["tags"][TAG_GROUP] == "mad|gsm8k|1" and child["tags"][TAG_N_EPISODES] == "4"
    assert child["params"] == {"method.name": "mad", "method.args.rounds": "2", "seed": "1"}
    assert child["metrics"]["accuracy"] == 0.5 and child["metrics"]["n_episodes"] == 4
    assert child["metrics"]["parse_failure_rate"] == pytest.approx(3 / 24)
    assert child["metrics"]["tokens_per_task"] == 120 and child["metrics"]["cost_per_task"] == 0.5
    assert child["metrics"]["prefix_cached_share"] == pytest.approx(0.1)  # 10 of 100 prompt tokens
    history = client.get_metric_history(child_ids[1], "accuracy_round")
    assert sorted((m.step, m.value) for m in history) == [(0, 0.0), (1, 0.5), (2, 0.5)]

    # Artifacts live under out_dir, never in the CWD's ./mlruns.
    names = {a.path for a in client.list_artifacts(child_ids[1], "results")}
    assert names == {"results/episodes.parquet", "results/turns.parquet", "results/rounds.parquet"}
    assert [a.path for a in client.list_artifacts(parent)] == ["summary.json"]
    assert not (Path.cwd() / "mlruns").exists()
    assert list((out_dir / "mlartifacts").rglob("episodes.parquet"))
    summary = json.loads(next((out_dir / "mlartifacts").rglob("summary.json")).read_text())
    assert summary["groups"] == {"mad|gsm8k|1": 4, "mad|gsm8k|2": 4}
    logged = pl.read_parquet(next(p for p in (out_dir / "mlartifacts").rglob("turns.parquet")))
    assert logged.height == 4

    # Rerun with the same data: same parent, no new runs, no new metric points.
    again = Tracker(uri, "exp-main", out_dir)
    assert again.start_sweep("sw-1", "my sweep", params) == parent
    assert client.get_run(parent).info.status == "RUNNING"
    for seed, (eps, turns) in frames.items():
        assert again.log_group(f"mad|gsm8k|{seed}", f"mad-{seed}", {}, eps, turns) is None
    assert len(read_runs(uri, "exp-main")) == 3
    assert len(client.get_metric_history(child_ids[1], "accuracy_round")) == 3
    assert len(client.get_metric_history(child_ids[1], "accuracy")) == 1

    # Rerun with more episodes: the same child is updated, its params untouched.
    eps, turns = group_frames(tmp_path, 6, 1)
    gp = flatten_params({"method": {"name": "mad", "args": {"rounds": 2}}, "seed": 1})
    assert again.log_group("mad|gsm8k|1", "mad-1", gp, eps, turns) == child_ids[1]
    again.finish_sweep()
    run = client.get_run(child_ids[1])
    assert run.data.tags[TAG_N_EPISODES] == "6" and run.data.metrics["n_episodes"] == 6
    assert run.data.metrics["accuracy"] == 0.5 and run.info.status == "FINISHED"
    assert len(client.get_metric_history(child_ids[1], "accuracy_round")) == 6
    assert len(read_runs(uri, "exp-main")) == 3
    assert not (Path.cwd() / "mlruns").exists()


def test_separate_sweeps_get_separate_parents(uri: str, out_dir: Path, tmp_path: Path) -> None:
    tracker = Tracker(uri, "exp-two", out_dir)
    first = tracker.start_sweep("a", "a", {})
    eps, turns = group_frames(tmp_path, 2, 1)
    assert tracker.log_group("g", "g", {}, eps, turns) is not None
    assert tracker.log_group("empty", "empty", {}, eps.head(0), turns.head(0)) is None
    second = Tracker(uri, "exp-two", out_dir).start_sweep("b", "b", {})
    assert first != second
    runs = read_runs(uri, "exp-two")
    assert sum(r["parent_run_id"] is None for r in runs) == 2
    assert [r["parent_run_id"] for r in runs if r["tags"].get(TAG_PARENT)] == [first]
    with pytest.raises(ValueError):
        tracker.start_sweep("it's", "bad", {})
    with pytest.raises(RuntimeError):
        Tracker(uri, "exp-two", out_dir).finish_sweep()


def diagnosed_store(out: Path, n: int) -> ResultStore:
    """n two-agent episodes of one round; in episode i agent 1 adopts agent 0's answer when i is even."""
    store = ResultStore(out)
    eps, rounds = [], []
    for i in range(n):
        eid = f"d{i}"
        after = "42" if i % 2 == 0 else "7"
        state = DebateState(n=2).advance((View("42", 5, ""), View("7", 1, "")), (), None)
        state = state.advance((View("42", 5, ""), View(after, 2, "")), (), Graph(2, [(0, 1)]))
        diag = diagnose(state, lambda a: a == "42")
        eps.append({
            "episode_id": eid, "sweep_id": "sw", "method": "pear", "method_spec": "{}", "dataset": "arith",
            "split": "test", "item_id": str(i), "seed": 0, "n_agents": 2, "rounds": 1, "models": ["m"],
            "final_answer": "42", "gold": "42", "correct": True, "round_correct": [True, True],
            "round_answers": ["42", "42"], "calls": 4, "prompt_tokens": 10, "completion_tokens": 5,
            "cached_tokens": 0, "cache_hits": 0, "cost": 0.0, "parse_failures": 0, "simulated": True,
            "latency_s": 0.0, "finished_at": datetime(2025, 1, 1, tzinfo=UTC), **diag.summary,
        })  # fmt: skip
        rounds += round_rows(eid, diag)
    store.append(eps, [], rounds)
    return store


def test_diagnostic_metrics_average_episodes_and_rounds(tmp_path: Path) -> None:
    store = diagnosed_store(tmp_path / "s", 4)
    metrics = {(name, step): v for name, v, step in diagnostic_metrics(store.episodes(), store.rounds())}
    assert metrics[("w2r", 0)] == 0.5  # two of four episodes fixed their one wrong agent
    assert metrics[("r2w", 0)] == 0.0 and metrics[("net", 0)] == 0.5
    assert metrics[("cross_ans", 0)] == 1.0 and metrics[("src_conf", 0)] == 1.0
    assert metrics[("w2r_round", 1)] == 0.5 and ("w2r_round", 0) not in metrics  # round 0 has no flips
    assert metrics[("agreement_round", 0)] == 0.5 and metrics[("agreement_round", 1)] == 0.75
    assert ("acceptance", 0) not in metrics  # no critiques anywhere: nothing to average, not logged
    assert metrics[("correct_round", 1)] == 1.5


def test_log_group_logs_diagnostics_as_steps(uri: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    store = diagnosed_store(out, 2)
    tracker = Tracker(uri, "exp-diag", out)
    tracker.start_sweep("diag", "diag", {})
    run_id = tracker.log_group("g", "g", {}, store.episodes(), store.turns())  # rounds read from `out`
    assert run_id is not None
    client = MlflowClient(tracking_uri=uri)
    history = client.get_metric_history(run_id, "answer_entropy_round")
    assert sorted((m.step, m.value) for m in history) == [(0, 1.0), (1, 0.5)]
    assert client.get_run(run_id).data.metrics["w2r"] == 0.5


def test_the_parent_shows_a_method_table_and_children_carry_readable_tags(
    uri: str, out_dir: Path, tmp_path: Path
) -> None:
    from sweep.tracking.metrics import method_table
    from sweep.tracking.tracker import KIND_TAG

    client = MlflowClient(tracking_uri=uri)
    tracker = Tracker(uri, "exp-readable", out_dir)
    assert client.get_experiment(tracker.experiment_id).tags[KIND_TAG] == "custom_model_development"
    parent = tracker.start_sweep("sw-r", "readable", {})
    frames = [group_frames(tmp_path, n, seed) for n, seed in ((4, 1), (2, 2))]
    gp = {"method.name": "mad", "dataset.name": "gsm8k", "dataset.split": "test", "seed": "1"}
    child = tracker.log_group("g1", "mad(rounds=2) | gsm8k/test | seed 1", gp, *frames[0])
    assert child is not None
    tags = client.get_run(child).data.tags
    assert (tags["method_label"], tags["method"], tags["dataset"], tags["seed"]) == (
        "mad(rounds=2)", "mad", "gsm8k/test", "1",
    )  # fmt: skip

    episodes = pl.concat([frames[0][0], frames[1][0]])
    table = method_table(episodes)  # seed 1: 2 of 4 right, seed 2: 1 of 2 right
    assert table.height == 1 and table["seeds"][0] == 2 and table["episodes"][0] == 6
    assert table["accuracy_mean"][0] == pytest.approx(0.5) and table["accuracy_std"][0] == pytest.approx(0.0)
    assert table["tokens_per_task"][0] == pytest.approx(120)
    tracker._log_table(parent, episodes)
    run = client.get_run(parent)
    assert "| mad | gsm8k/test | 0.500 ± 0.000 | 120 |" in run.data.tags["mlflow.note.content"]
    assert {a.path for a in client.list_artifacts(parent)} >= {"results_table.md", "results_table.json"}
