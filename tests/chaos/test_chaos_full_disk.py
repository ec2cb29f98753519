"""A full disk: the run stops with exit 1 and one line once what fits is written, leaves no temp
files, and a rerun with space completes the sweep exactly once. Real: a small tmpfs in a private
mount namespace (root, or an unprivileged user namespace); skipped where neither is allowed (the
injected ENOSPC of tests/test_repair.py runs everywhere)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.chaos.conftest import planned, sweep_config
from tests.chaos.harness import Drivers, full_disk

pytestmark = pytest.mark.chaos


def test_a_full_disk_stops_the_run_and_a_rerun_with_space_completes_it(
    tmp_path: Path, drivers: Drivers
) -> None:
    path = sweep_config(tmp_path, limit=40, latency=0.0, cache=True)
    out, log, report = tmp_path / "out", tmp_path / "driver.log", tmp_path / "report.json"
    proc = drivers.ctx.Process(
        target=full_disk, args=(["run", str(path)], str(out), str(log), str(report), 700, 64 * 1024)
    )
    proc.start()
    proc.join(300)
    assert proc.exitcode == 0 and report.exists(), log.read_text()[-3000:] if log.exists() else "no log"
    result = json.loads(report.read_text())
    if "unavailable" in result:
        pytest.skip(f"no tmpfs in a private mount namespace here: {result['unavailable']}")
    assert "error" not in result, result.get("error")
    text = log.read_text()
    want = planned(path)
    assert result["first"] == 1 and 0 < result["stored_first"] < len(want), (result, text[-3000:])
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no space left for results in" in errors[0], text[-3000:]
    assert "Traceback" not in text
    assert result["temp_files"] == []
    assert result["second"] == 0, text[-3000:]
    assert len(result["stored"]) == len(set(result["stored"])) and set(result["stored"]) == want
    assert result["turns_ok"]
