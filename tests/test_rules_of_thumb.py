"""Rules of thumb and bounds beside the learned methods: `silent` (round 0's vote at round 0's cost),
`least_confident` (the k least confident speak, within RUMAD's budget), `confidence_keep` (CPP-style
keep/hide by stated confidence) and `oracle` (reads the gold, simulated engine only) — hand-computed
decisions, invariants, episodes through the loop, the config refusal and a sweep that runs them all."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.base import ChatRequest, Completion
from actors.registry import build_backend
from data.grading.graders import NumericGrader
from data.types import Sample
from debate.decision import Decision
from debate.episode import Agent, run_episode
from debate.methods import build_method
from debate.routers.base import route_now
from debate.routers.oracle import Oracle
from debate.routers.rules import ConfidenceKeep, LeastConfident, NeverKeep, least_confident
from debate.state import DebateState, View
from debate.trajectory import EpisodeResult
from debate.vote import majority_vote
from sweep.cli import main
from sweep.config.sweep import ConfigError, validate

GRADER = NumericGrader()
SAMPLE = Sample(id="q7", question="What is 17 + 25?", gold="42", kind="numeric")
ITEMS = [
    Sample(id=f"q{i}", question=f"What is 37 times {i}, plus 1000?", gold=str(1000 + 37 * i), kind="numeric")
    for i in range(1, 31)
]
RNG = np.random.default_rng(0)


def state_with(answers: Sequence[str | None], conf: Sequence[int], rounds: int = 1) -> DebateState:
    state = DebateState(n=len(answers))
    for _ in range(rounds):
        state = state.advance(tuple(View(a, c, "") for a, c in zip(answers, conf, strict=True)), (), None)
    return state


class Recording:
    """A backend that passes requests on to `inner` and keeps every one it saw."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.seen = inner, list[ChatRequest]()

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.seen += list(requests)
        return list(await self.inner.generate(requests))


def team(n: int, skill: float = 0.45, backend: Any = None) -> list[Agent]:
    """`n` priced simulated seats (one shared backend when given)."""
    return [
        Agent(
            f"s{i}",
            backend or build_backend("simulated", f"s{i}", {"skill": skill}),
            price_in=1.0,
            price_out=2.0,
        )
        for i in range(n)
    ]


def run(
    name: str, args: dict, seats: list[Agent], sample: Sample = SAMPLE, seed: int = 0, rounds: int = 3
) -> EpisodeResult:
    return asyncio.run(run_episode(build_method(name, args), seats, sample, GRADER, seed, rounds, "toy"))


# -- silent -------------------------------------------------------------------------------------------


def test_silent_is_round_zeros_vote_at_round_zeros_cost() -> None:
    method = build_method("silent")
    assert method.router is None and method.num_rounds(5) == 0 and method.team_size(4) == 4
    for seed in range(3):
        for sample in ITEMS[:5]:
            silent = run("silent", {}, team(4), sample, seed, rounds=3)  # rounds is ignored
            clique = run("fixed", {}, team(4), sample, seed, rounds=3)
            assert len(silent.turns) == 4 and {t.round for t in silent.turns} == {0}
            round0 = [t for t in clique.turns if t.round == 0]
            assert silent.cost == pytest.approx(sum(t.cost for t in round0)) and silent.cost > 0
            # the very calls of round 0: one cache entry serves both
            assert [t.text for t in silent.turns] == [t.text for t in round0]
            vote0 = majority_vote(clique.state.answers(0), clique.state.confidences(0))
            assert silent.final_answer == vote0 == clique.round_answers[0]
            assert silent.round_answers == [vote0]


# -- least_confident ----------------------------------------------------------------------------------


def test_least_confident_picks_the_k_least_confident_ties_by_seat() -> None:
    d = route_now(LeastConfident(k=2), state_with("12345", (5, 1, 3, 1, 4)), RNG)
    assert d.active == {1, 3}
    assert d.graph.edges == {(s, t) for t in (1, 3) for s in range(5) if s != t}  # they see everyone
    assert route_now(LeastConfident(k=2), state_with("1234", (2, 2, 2, 5)), RNG).active == {0, 1}
    assert route_now(LeastConfident(k=3), state_with("1234", (4, 1, 1, 1)), RNG).active == {1, 2, 3}
    assert route_now(LeastConfident(k=9), state_with("123", (4, 1, 2)), RNG).active == {0, 1, 2}
    assert least_confident((3, 3, 1, 3), 2) == [0, 2]
    with pytest.raises(ValueError, match="k must be >= 1"):
        build_method("least_confident", {"k": 0})
    with pytest.raises(ValueError, match="budget must be >= 0"):
        build_method("least_confident", {"budget": -1})


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 7), st.integers(1, 5), st.integers(0, 15), st.integers(0, 10_000))
def test_least_confident_never_spends_more_than_its_budget(n: int, k: int, budget: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    router = LeastConfident(k, budget)
    conf = tuple(int(c) for c in rng.integers(1, 6, n))
    state, total = state_with(["1"] * n, conf), 0
    for _ in range(6):
        d = route_now(router, state, RNG)
        want = min(k, n, budget - total)
        assert d.active == set(sorted(range(n), key=lambda i: (conf[i], i))[:want])
        total += len(d.active_agents())
        conf = tuple(int(c) for c in rng.integers(1, 6, n))
        views = tuple(View("1", c, "") for c in conf)
        state = state.advance(views, (), Decision(d.graph, active=d.active))
    assert total == min(budget, 6 * min(k, n))


def test_least_confident_in_episodes_activates_by_the_last_stated_confidence() -> None:
    res = run("least_confident", {"k": 2, "budget": 5}, team(4), rounds=3)
    for r, want in ((1, 2), (2, 2), (3, 1)):  # 5 activations in all
        speakers = least_confident(res.state.confidences(r - 1), want)
        turns = [t for t in res.turns if t.round == r]
        assert [t.agent for t in turns] == speakers and len(speakers) == want
        assert all(set(t.sources) == set(range(4)) - {t.agent} for t in turns)


# -- confidence_keep ----------------------------------------------------------------------------------


def test_confidence_keep_keeps_and_hides_exactly_by_its_thresholds() -> None:
    s = state_with("12345", (5, 4, 3, 2, 1))
    d = route_now(ConfidenceKeep(keep_at=4, hide_own_at=2), s, RNG)
    assert d.graph.edges == {(s, t) for s in (0, 1) for t in range(5) if s != t}
    assert d.hidden_own == {3, 4} and d.active is None
    assert d.record["keep"][3][0] == [3, False, 0.0] and d.record["keep"][0][1] == [1, True, 1.0]
    loose = route_now(ConfidenceKeep(keep_at=3, hide_own_at=0), s, RNG)
    assert loose.graph.edges == {(s, t) for s in (0, 1, 2) for t in range(5) if s != t}
    assert not loose.hidden_own
    with pytest.raises(ValueError, match="protocol 'update'"):
        build_method("confidence_keep", {"protocol": "critique_revise"})
    with pytest.raises(ValueError, match="keep_at"):
        build_method("confidence_keep", {"keep_at": 0})
    with pytest.raises(ValueError, match="hide_own_at"):
        build_method("confidence_keep", {"hide_own_at": 6})


def test_confidence_keep_can_skip_peers_that_agree_and_keeps_old_ids() -> None:
    s = state_with(("7", "7", "8", "7", None), (5, 5, 5, 2, 5))
    d = route_now(ConfidenceKeep(keep_at=4, hide_own_at=2, skip_agreeing=True), s, RNG)
    # agent 0 (7) skips agent 1 (7, agrees) and agent 3 (unsure); keeps 2 (8) and 4 (no answer: not agreeing)
    assert {src for src, t in d.graph.edges if t == 0} == {2, 4}
    assert {src for src, t in d.graph.edges if t == 2} == {0, 1, 4}  # 8 agrees with nobody
    assert d.hidden_own == {3}
    plain = route_now(ConfidenceKeep(keep_at=4, hide_own_at=2), s, RNG)
    assert {src for src, t in plain.graph.edges if t == 0} == {1, 2, 4}
    default, skipping = (
        build_method("confidence_keep", {}),
        build_method("confidence_keep", {"skip_agreeing": True}),
    )
    assert "skip_agreeing" not in default.spec.identity()["args"]  # stored episodes keep their ids
    assert skipping.spec.identity() != default.spec.identity() and "skip_agreeing=True" in skipping.label
    with pytest.raises(ValueError, match="skip_agreeing"):
        build_method("confidence_keep", {"skip_agreeing": "yes"})


def test_confidence_keep_told_a_seat_never_keeps_it_and_keeps_old_ids() -> None:
    s = state_with("1234", (5, 5, 5, 1))
    d = route_now(ConfidenceKeep(keep_at=4, hide_own_at=2, never_seat=1), s, RNG)
    # seat 1 is confident, but nobody keeps it; seat 3 is unsure: nobody keeps it and it hides its own
    assert d.graph.edges == {(src, t) for src in (0, 2) for t in range(4) if src != t}
    assert d.hidden_own == {3} and d.record["keep"][1][0] == [1, True, 1.0]  # seat 1 keeps its own
    told = build_method("confidence_keep", {"never_seat": 1})
    assert "never_seat" not in build_method("confidence_keep", {}).spec.identity()["args"]
    assert told.spec.identity() != build_method("confidence_keep", {}).spec.identity()
    assert "never_seat=1" in told.label
    for bad in (-1, True):
        with pytest.raises(ValueError, match="never_seat must be a seat index"):
            build_method("confidence_keep", {"never_seat": bad})
    with pytest.raises(ValueError, match="never_seat 4 is not in a team of 4"):
        route_now(ConfidenceKeep(never_seat=4), s, RNG)


def test_never_keep_drops_exactly_one_seats_responses() -> None:
    s = state_with("1234", (1, 5, 3, 2))
    d = route_now(NeverKeep(seat=1), s, RNG)
    assert d.graph.edges == {(s, t) for s in (0, 2, 3) for t in range(4) if s != t}
    assert not d.hidden_own and d.active is None  # seat 1 keeps its own; everyone speaks
    assert d.record["keep"][1][0] == [1, True, 1.0] and d.record["keep"][0][1] == [1, False, 0.0]
    assert sum(e[1] for row in d.record["keep"] for e in row) == 16 - 3
    with pytest.raises(ValueError, match="seat 4 is not in a team of 4"):
        route_now(NeverKeep(seat=4), s, RNG)
    with pytest.raises(ValueError, match="never_keep: seat must be"):
        build_method("never_keep", {"seat": -1})


def test_confidence_keep_prompts_show_what_the_thresholds_keep() -> None:
    hidden = kept = 0
    for sample in ITEMS[:6]:
        backend = Recording(build_backend("simulated", "sim", {"skill": 0.5}))
        res = run("confidence_keep", {}, team(4, backend=backend), sample, rounds=2)
        for req in backend.seen:
            h = req.hints
            if h["phase"] != "update":
                continue
            conf, t = res.state.confidences(h["round"] - 1), h["agent"]
            assert h["sources"] == [s for s in range(4) if s != t and conf[s] >= 4]
            assert (h["own"] is None) == (conf[t] <= 2)
            hidden, kept = hidden + (h["own"] is None), kept + len(h["sources"])
    assert hidden > 0 and kept > 0  # both sides of both thresholds were exercised


# -- oracle -------------------------------------------------------------------------------------------


def test_oracle_activates_the_wrong_and_shows_them_the_right() -> None:
    s = state_with(("42", "41", None, "40", "42.0"), (1, 5, 3, 5, 2))
    d = route_now(Oracle(budget=3).for_item(SAMPLE, GRADER), s, RNG)
    assert d.active == {1, 2, 3}
    assert d.graph.edges == {(r, w) for w in (1, 2, 3) for r in (0, 4)}
    assert route_now(Oracle(budget=2).for_item(SAMPLE, GRADER), s, RNG).active == {
        1,
        2,
    }  # the budget, by seat
    spent = s.advance(s.latest, (), d)  # 3 activations spent
    assert route_now(Oracle(budget=4).for_item(SAMPLE, GRADER), spent, RNG).active == {1}
    assert "42" not in json.dumps(d.row()["decision"])  # the gold is not stored
    with pytest.raises(RuntimeError, match="for_item"):
        route_now(Oracle(), s, RNG)  # never routes blind


def test_oracle_beats_clique_and_keeps_the_gold_out_of_prompts() -> None:
    right = {"oracle": 0, "fixed": 0}
    for name in right:
        for seed in (0, 1):
            for sample in ITEMS:
                seats = [
                    Agent(f"s{i}", Recording(build_backend("simulated", f"s{i}", {"skill": 0.45})))
                    for i in range(3)
                ]
                right[name] += run(name, {}, seats, sample, seed, rounds=2).correct
                seen = [req for a in seats for req in a.backend.seen]  # type: ignore[attr-defined]
                for req in seen if name == "oracle" else []:  # the gold shows only where an agent wrote it
                    shown = (
                        [req.hints["own"], *req.hints["peers"]] if req.hints["own"] else req.hints["peers"]
                    )
                    text = "".join(m.content for m in req.messages)
                    if re.search(rf"(?<![\d.]){sample.gold}(?![\d.])", text):
                        assert any(a == sample.gold for a, _ in shown)
    assert right["oracle"] >= right["fixed"] + 5, right


def config(tmp_path: Path, engine: str = "simulated", methods: list | None = None) -> dict:
    return {
        "name": "rules",
        "output_dir": str(tmp_path / "out"),
        "models": {"sim": {"engine": "simulated", "args": {"skill": 0.5}}, "other": {"engine": engine}},
        "agents": ["sim", {"model": "other", "count": 2}],
        "datasets": [{"name": "arith", "limit": 3}],
        "methods": methods or ["silent", {"name": "fixed", "args": {"topology": "clique"}}, "oracle"],
        "rounds": 2,
        "tracking": {"enabled": False},
    }


def test_oracle_is_refused_with_a_non_simulated_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    validate(config(tmp_path))  # all simulated: fine
    with pytest.raises(ConfigError) as e:
        validate(config(tmp_path, "llama_cpp"))
    assert str(e.value) == (
        "methods[2]: oracle reads the gold answer and runs only on the simulated engine; agents[1] ('other') "
        "runs on 'llama_cpp': use simulated models only, or drop oracle"
    )
    validate(
        config(tmp_path, "llama_cpp", methods=["silent", "least_confident", "confidence_keep"])
    )  # any engine
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config(tmp_path, "llama_cpp")))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: methods[2]: oracle reads the gold answer") and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_all_four_run_in_a_sweep_and_are_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sweep.run.runner import run_sweep
    from sweep.store.results import ResultStore

    methods = ["silent", "least_confident", "confidence_keep", "oracle", "fixed"]
    done = run_sweep(validate(config(tmp_path, methods=methods)))
    assert done.stats is not None and done.stats.done == 15 and not done.stats.failures
    labels = set(ResultStore(done.out_dir).episodes()["method_label"].to_list())
    assert labels == {
        "silent",
        "least_confident(budget=12, k=2)",
        "confidence_keep(hide_own_at=2, keep_at=4)",
        "oracle(budget=12)",
        "fixed(topology=clique)",
    }
    assert main(["list", "methods"]) == 0
    listed = capsys.readouterr().out
    for name in ("silent", "least_confident", "confidence_keep", "oracle"):
        assert f"\n│ {name} " in listed


def test_engines_are_told_apart_by_their_traits(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The oracle, the in-process default, the simulated label and the population an engine's model
    plays follow the engine's registered traits, not its name: a new engine declaring `reads_gold`
    runs the oracle, and the simulated engine without that trait may not."""
    from actors import registry
    from sweep.config.sweep import ModelSpec, load_config, population_ref
    from sweep.engines.pool import in_process

    sim = registry.ENGINES["simulated"]  # the built-in engines are registered before the patch
    toy = registry.Traits(reads_gold=True, population_arg="population")
    monkeypatch.setitem(registry.ENGINES, "gold_toy", registry.Engine(sim.factory, None, toy))
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config(tmp_path, "gold_toy")))
    cfg = load_config(path)  # the oracle is accepted beside an engine that reads the gold
    assert not in_process(cfg, "other") and in_process(cfg, "sim")
    assert population_ref(ModelSpec(engine="gold_toy", args={"population": "cpp"})) == "cpp"
    assert population_ref(ModelSpec(engine="llama_cpp", args={})) == "v1"
    monkeypatch.setitem(
        registry.ENGINES,
        "simulated",
        registry.Engine(sim.factory, sim.check, registry.Traits(simulated=True)),
    )
    with pytest.raises(
        ConfigError, match=r"oracle reads the gold answer and runs only on the gold_toy engine"
    ):
        validate(config(tmp_path, "gold_toy"))
