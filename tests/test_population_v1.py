"""The simulated engine's own population ("v1") gives the episodes it gave before the calibrated
populations (issue 31) were added: the same ids, votes per round, costs and, call by call, answers,
confidences, token counts and texts (`tests/v1_fixture.py` wrote `tests/corpus/v1_episodes.jsonl`
from the code as it was). Without the shared benchmark copy only the synthetic datasets are compared."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import BENCHMARKS
from tests.v1_fixture import CONFIGS, SYNTHETIC, read_corpus, records

TURN_FIELDS = (
    "agent",
    "round",
    "phase",
    "answer",
    "confidence",
    "prompt_tokens",
    "completion_tokens",
    "parsed",
    "text_sha1",
)


def _where(r: dict[str, Any]) -> str:
    where = f"{r['dataset']} item {r['item']} seed {r['seed']}"
    return f"{r['config']}: {r['method']} on {where} ({r['episode_id'][:12]})"


def _first_difference(want: dict[str, Any], got: dict[str, Any]) -> str:
    """What differs first between two records of one episode, in words."""
    for key in sorted(want.keys() | got.keys()):
        if key == "turns" or want.get(key) == got.get(key):
            continue
        return f"{key}: recorded {want.get(key)!r}, now {got.get(key)!r}"
    a, b = want["turns"], got["turns"]
    for i, (x, y) in enumerate(zip(a, b, strict=False)):  # a call more or less: said below
        if x != y:
            fields = [f"{f} {p!r} -> {q!r}" for f, p, q in zip(TURN_FIELDS, x, y, strict=True) if p != q]
            return f"call {i} (agent {x[0]}, round {x[1]}, {x[2]}): " + "; ".join(fields)
    return f"calls: recorded {len(a)}, now {len(b)}"


@pytest.mark.parametrize("name", list(CONFIGS))
def test_v1_episodes_are_as_recorded(name: str) -> None:
    datasets = None if BENCHMARKS.is_dir() else set(SYNTHETIC)
    want = {
        r["episode_id"]: r
        for r in read_corpus()
        if r["config"] == name and (datasets is None or r["dataset"] in datasets)
    }
    got = {r["episode_id"]: r for r in records(name, datasets)}
    assert want, f"{name}: no recorded episodes (rewrite tests/corpus/v1_episodes.jsonl from the v1 code)"
    missing = [_where(want[e]) for e in want.keys() - got.keys()]
    extra = [_where(got[e]) for e in got.keys() - want.keys()]
    assert not missing and not extra, (
        f"{name}: episode ids changed: {len(missing)} recorded ids not made now (first: {missing[:1]}), "
        f"{len(extra)} new ids (first: {extra[:1]})"
    )
    changed = [f"{_where(want[e])}: {_first_difference(want[e], got[e])}" for e in want if want[e] != got[e]]
    assert not changed, f"{len(changed)} of {len(want)} v1 episodes changed; first: {changed[0]}"
