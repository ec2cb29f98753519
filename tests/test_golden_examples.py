"""Every shipped simulated example gives the episodes it gave before the episode loop was refactored
into decisions, phases and trajectories: the same ids, answers per round, token counts and texts
(`tests/golden_examples.py` wrote `tests/golden/examples.json` from the code as it was)."""

from __future__ import annotations

import json

import pytest
from golden_examples import EXAMPLES, GOLDEN, fingerprints


@pytest.fixture(scope="module")
def now() -> dict[str, list[dict]]:
    return fingerprints()


@pytest.mark.parametrize("example", [name for name, _ in EXAMPLES])
def test_the_example_gives_the_stored_episodes(example: str, now: dict[str, list[dict]]) -> None:
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))[example]
    got = now[example]
    assert len(got) == len(want) > 0
    assert [e["id"] for e in got] == [e["id"] for e in want]
    for a, b in zip(got, want, strict=True):
        assert a == b, f"{example}: episode {b['id']} changed"
