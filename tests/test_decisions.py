"""Decisions are records: a router that activates a subset of agents, weights edges and caps output
tokens per round runs through the loop and through `sweep run`; inactive agents make no calls, the
caps reach the engine, weights reach the prompt, and the trajectory and the rounds table show it all."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from actors.base import ChatRequest, Completion
from actors.registry import build_backend
from data.grading.graders import NumericGrader
from data.types import Sample
from debate.decision import Decision, everyone
from debate.episode import Agent, run_episode
from debate.graph import Graph
from debate.methods import build_method
from debate.registry import method
from debate.state import DebateState

SAMPLE = Sample(id="q7", question="What is 6 * 7?", gold="42", kind="numeric")
N = 4


@method("subset_probe")
@dataclass(frozen=True)
class SubsetProbe:
    """Round r: agents i with (i + r) even speak, each sees every other agent with weight 0.25 or
    0.75 by parity, and may write `cap` tokens."""

    cap: int = 12

    async def route(self, state: DebateState, rng: np.random.Generator) -> Decision:
        r, n = state.round, state.n
        active = frozenset(i for i in range(n) if (i + r) % 2 == 0)
        edges = [(s, t) for t in sorted(active) for s in range(n) if s != t]
        weights = {(s, t): 0.25 if (s + t) % 2 else 0.75 for s, t in edges}
        caps = dict.fromkeys(active, self.cap)
        return Decision(Graph(n, edges), weights, active, caps, record={"round": r, "logp": -0.5})


def expected_active(r: int) -> list[int]:
    return [i for i in range(N) if (i + r) % 2 == 0]


class Recording:
    """A backend wrapper keeping every request it was sent."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.seen = inner, []  # type: ignore[var-annotated]

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.seen += list(requests)
        return await self.inner.generate(requests)


def test_decision_checks_its_parts() -> None:
    g = Graph(3, [(0, 1), (1, 2)])
    with pytest.raises(ValueError, match="outside"):
        Decision(g, active=frozenset({3}))
    with pytest.raises(ValueError, match="not in the graph"):
        Decision(g, weights={(2, 0): 0.5})
    with pytest.raises(ValueError, match="caps"):
        Decision(g, max_tokens={0: 0})
    d = Decision(g, weights={(0, 1): 0.3}, active=frozenset({1}), max_tokens={1: 50})
    assert (
        d.speaks(1)
        and not d.speaks(0)
        and d.cap(1, 512) == 50
        and d.cap(1, 20) == 20
        and d.cap(2, 512) == 512
    )
    assert d.weights_for(1) == {0: 0.3} and d.weights_for(2) == {}
    assert everyone(g).active_agents() == (0, 1, 2) and everyone(g).weights_for(1) is None
    assert d.row()["edge_weight"] == [0.3, 0.0] and d.row()["max_tokens"] == [None, 50, None]


def test_the_loop_honours_the_active_set_the_caps_and_the_weights() -> None:
    backend = Recording(build_backend("simulated", "sim", {"skill": 0.6}))
    team = [Agent("sim", backend, max_tokens=400)]
    probe = build_method("subset_probe", {"prompt_style": "rumad"})
    res = asyncio.run(run_episode(probe, team * N, SAMPLE, NumericGrader(), 3, 3, "toy"))
    for r in range(1, 4):
        asked = [q for q in backend.seen if q.hints["round"] == r]
        assert sorted(q.hints["agent"] for q in asked) == expected_active(r)  # the others made no call
        assert all(q.max_tokens == 12 for q in asked)  # the cap reached the engine request
        assert all(t.completion_tokens <= 12 for t in res.state.turns[r])
        rec = res.trajectory[r]
        assert list(rec.active) == expected_active(r) and rec.decision is not None
        for i in set(range(N)) - set(expected_active(r)):  # silent agents keep their answer
            assert rec.answers_after[i] == rec.answers_before[i]
        assert rec.calls == len(expected_active(r))
        assert rec.tokens == sum(t.prompt_tokens + t.completion_tokens for t in res.state.turns[r])
    # RUMAD's prompt shows each visible response with its weight as importance
    first = next(q for q in backend.seen if q.hints["round"] == 1 and q.hints["agent"] == 1)
    shown = first.messages[-1].content  # agent index 1 is "Agent 2"; (s + t) odd weighs 0.25
    assert "Agent 1 (importance 0.25)" in shown and "Agent 3 (importance 0.25)" in shown
    assert "Agent 4 (importance 0.75)" in shown and "Agent 2 (" not in shown
    assert all(q.max_tokens == 400 for q in backend.seen if q.hints["round"] == 0)
    assert res.trajectory[0].decision is None and res.trajectory[0].active == tuple(range(N))
    assert [r.vote for r in res.trajectory] == res.round_answers


@pytest.mark.ray
def test_a_subset_router_runs_through_sweep_run(tmp_path: Path, ray_driver: Any) -> None:
    from sweep.config.sweep import validate
    from sweep.run.runner import run_sweep

    cfg = validate({
        "name": "probe", "output_dir": str(tmp_path / "out"),
        "models": {"sim": {"engine": "simulated", "args": {"skill": 0.6}, "sampling": {"max_tokens": 300}}},
        "agents": [{"model": "sim", "count": N}], "datasets": [{"name": "arith", "limit": 3}],
        "methods": [{"name": "subset_probe", "args": {"cap": 10}}], "rounds": 2, "seeds": [0],
        "cache": False, "tracking": {"enabled": False}, "ray": {"address": ray_driver.address},
    })  # fmt: skip
    out = run_sweep(cfg)
    assert out.stats is not None and out.stats.done == 3 and not out.stats.failures
    turns = pl.read_parquet(tmp_path / "out" / "turns" / "*.parquet")
    rounds = pl.read_parquet(tmp_path / "out" / "rounds" / "*.parquet").sort("episode_id", "round")
    for r in (1, 2):
        tr = turns.filter(pl.col("round") == r)
        assert sorted(set(tr["agent"].to_list())) == expected_active(r)  # inactive agents: no calls
        assert tr.height == 3 * len(expected_active(r)) and tr["completion_tokens"].max() <= 10
        rr = rounds.filter(pl.col("round") == r)
        assert rr["active"].to_list() == [expected_active(r)] * 3
        row = rr.row(0, named=True)
        assert set(row["edge_tgt"]) == set(expected_active(r)) and row["max_tokens"].count(10) == 2
        assert sorted(set(row["edge_weight"])) == [0.25, 0.75]
        assert json.loads(row["decision"]) == {"round": r, "logp": -0.5}
    r0 = rounds.filter(pl.col("round") == 0)
    assert r0["edge_src"].null_count() == 3 and r0["active"].to_list() == [list(range(N))] * 3
    assert turns.filter(pl.col("round") == 0)["completion_tokens"].max() > 10  # round 0 uncapped
    ep = pl.read_parquet(tmp_path / "out" / "episodes" / "*.parquet")
    assert set(ep["method_label"]) == {"subset_probe(cap=10)"}
