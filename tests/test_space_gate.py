"""The scheduler's gate: an episode starts once this driver claims it, and none starts once the
results' disk is nearly full (free space read as each episode starts: episodes started later would
only fail to write, and the cache's writes would fail before the results' own DiskFull names the
cause — tests/chaos/test_chaos_full_disk.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

import sweep.run.runner
from sweep.run.runner import SpaceGate
from sweep.store.ownership import Claims
from sweep.store.repair import MIN_FREE_BYTES


def test_a_nearly_full_disk_stops_new_episodes_for_good(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    free = [10 * MIN_FREE_BYTES]
    monkeypatch.setattr(sweep.run.runner, "free_bytes", lambda path: free[0])
    gate = SpaceGate(tmp_path, Claims(tmp_path))
    assert all(gate(SimpleNamespace(episode_id=f"e{i}")) for i in range(5))
    free[0] = MIN_FREE_BYTES - 1
    assert not gate(SimpleNamespace(episode_id="e5"))  # the very next episode
    assert gate.full is not None and "KB free" in gate.full
    free[0] = 10 * MIN_FREE_BYTES
    assert not gate(SimpleNamespace(episode_id="e6"))
