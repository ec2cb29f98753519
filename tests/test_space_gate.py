"""The scheduler's gate: an episode starts once this driver claims it, none starts once the results'
disk is nearly full, and free space is read at most every `SPACE_LOOK_S` as episodes start."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

import sweep.runner
from sweep.ownership import Claims
from sweep.repair import MIN_FREE_BYTES, SPACE_LOOK_S
from sweep.runner import SpaceGate


def test_full_disk_stops_new_episodes_and_looks_are_spaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    free, looks, now = [10 * MIN_FREE_BYTES], [0], [100.0]

    def fake_free(path: Path) -> int:
        looks[0] += 1
        return free[0]

    monkeypatch.setattr(sweep.runner, "free_bytes", fake_free)
    monkeypatch.setattr(sweep.runner.time, "monotonic", lambda: now[0])
    gate = SpaceGate(tmp_path, Claims(tmp_path))
    assert all(gate(SimpleNamespace(episode_id=f"e{i}")) for i in range(50))
    assert looks[0] == 1  # fifty starts inside one interval: one look
    free[0] = MIN_FREE_BYTES - 1
    assert gate(SimpleNamespace(episode_id="e50"))  # not looked at again yet
    now[0] += SPACE_LOOK_S
    assert not gate(SimpleNamespace(episode_id="e51"))
    assert looks[0] == 2 and gate.full is not None and "KB free" in gate.full
    free[0] = 10 * MIN_FREE_BYTES  # once full, the run stops starting episodes for good
    now[0] += SPACE_LOOK_S
    assert not gate(SimpleNamespace(episode_id="e52"))
