"""SIGKILL the driver again and again — at random moments and at the worst ones (half-way through a
Parquet part, inside MLflow logging, between a claim's two steps, between taking the output-dir lock
and saying who holds it) — then rerun: every episode is stored exactly once."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sweep.store.results import ResultStore
from sweep.tracking.tracker import TAG_N_EPISODES, TAG_PARENT
from tests.chaos.conftest import planned, sweep_config
from tests.chaos.harness import Drivers, assert_exactly_once, committed_ids

pytestmark = pytest.mark.chaos

RANDOM_KILLS = 20  # on top of the five at the worst moments
WORST_MOMENTS = [("parquet", 1), ("claim", 3), ("parquet", 2), ("lock", 1), ("parquet", 1)]


def test_twenty_five_driver_kills_lose_and_duplicate_nothing(tmp_path: Path, drivers: Drivers) -> None:
    tracked = {"tracking": {"enabled": True}}
    # 200 episodes: more than 20 short runs do
    path = sweep_config(tmp_path, limit=50, latency=0.1, concurrency=2, **tracked)
    want, out, log = planned(path), tmp_path / "out", tmp_path / "driver.log"
    argv = ["run", str(path)]
    rng = random.Random(16)
    kills = 0
    for point in WORST_MOMENTS:
        kills += drivers.kill_when_stopped(drivers.start(argv, log, stop=point))
    assert kills == len(WORST_MOMENTS), log.read_text()[-3000:]
    assert list(out.rglob(".tmp-*")), "a kill in the middle of a part leaves its temp file"
    for _ in range(10 * RANDOM_KILLS):  # bounded: a driver that always exits first cannot loop forever
        if kills >= len(WORST_MOMENTS) + RANDOM_KILLS:
            break
        left = len(want - set(committed_ids(out)))
        # Late in the sweep, kill early in the run (start-up, lock, claims): a kill must still land.
        delay = rng.uniform(0.2, 1.0) if left > len(want) // 4 else rng.uniform(0.1, 0.4)
        kills += drivers.kill_after(drivers.start(argv, log), delay)
    assert kills >= len(WORST_MOMENTS) + RANDOM_KILLS
    stored = set(committed_ids(out))
    assert stored, "no episode got stored between the kills"
    print(f"chaos: {kills} driver kills, {len(stored)} of {len(want)} episodes stored before the last run")
    assert drivers.run(argv, log) == 0, log.read_text()[-3000:]
    assert_exactly_once(out, want)
    assert not (out / "claims").exists()  # the sweep is complete: no claim is needed any more
    # The same answers and token counts as one uninterrupted run, and one MLflow child per group.
    clean = tmp_path / "clean"
    clean.mkdir()
    assert (
        drivers.run(["run", str(sweep_config(clean, limit=50, latency=0.1, concurrency=8, **tracked))], log)
        == 0
    )
    assert outcomes(out) == outcomes(clean / "out")
    runs = MlflowClient(f"sqlite:///{out / 'mlflow.db'}").search_runs(["1"], max_results=1000)
    children = [r for r in runs if TAG_PARENT in r.data.tags]
    assert len(runs) - len(children) == 1 and len(children) == 4  # 2 methods x 2 seeds, none twice
    assert all(r.data.tags[TAG_N_EPISODES] == "50" for r in children)


def outcomes(out: Path) -> dict[str, tuple[object, ...]]:
    ep = ResultStore(out).episodes()
    cols = ("final_answer", "round_answers", "prompt_tokens", "completion_tokens", "calls")
    return {row["episode_id"]: tuple(row[c] for c in cols) for row in ep.iter_rows(named=True)}


def test_a_kill_inside_mlflow_logging_is_logged_once_on_rerun(tmp_path: Path, drivers: Drivers) -> None:
    path = sweep_config(tmp_path, limit=3, tracking={"enabled": True})
    out, log = tmp_path / "out", tmp_path / "driver.log"
    argv = ["run", str(path)]
    assert drivers.kill_when_stopped(drivers.start(argv, log, stop=("mlflow", 2))), log.read_text()[-3000:]
    assert set(committed_ids(out)) == planned(path)  # every episode was stored before logging began
    assert drivers.run(argv, log) == 0, log.read_text()[-3000:]
    assert "already stored" in log.read_text()
    client = MlflowClient(f"sqlite:///{out / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("debate-sweep").experiment_id])
    parents = [r for r in runs if TAG_PARENT not in r.data.tags]
    children = [r for r in runs if TAG_PARENT in r.data.tags]
    assert len(parents) == 1 and len(children) == 4  # 2 methods x 2 seeds, none twice
    assert all(r.data.tags[TAG_N_EPISODES] == "3" for r in children)
    assert_exactly_once(out, planned(path))


def test_sigterm_stops_a_driver_like_ctrl_c(tmp_path: Path, drivers: Drivers) -> None:
    import os
    import signal
    import time

    path = sweep_config(tmp_path, limit=15, latency=0.05)
    out, log = tmp_path / "out", tmp_path / "driver.log"
    proc = drivers.start(["run", str(path)], log)
    deadline = time.monotonic() + 120
    while not committed_ids(out) and time.monotonic() < deadline and proc.is_alive():
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGTERM)
    proc.join(120)
    assert proc.exitcode == 1 and "interrupted: finished episodes are stored" in log.read_text(), (
        log.read_text()[-2000:]
    )
    assert "Traceback" not in log.read_text()
    assert drivers.run(["run", str(path)], log) == 0  # the lock was let go; the rest runs now
    assert_exactly_once(out, planned(path))
