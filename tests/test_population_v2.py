"""The v2 population model's mechanisms (`actors.population`, `docs/population.md`), each measured
over many calls so that breaking it moves the figure past the bound."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import numpy as np
import pytest

from actors.base import ChatRequest, Message
from actors.population import PopulationBackend
from actors.populations import Population, parse
from actors.simulated import SimulatedBackend, check_args

N = 1500  # calls per measured figure: a binomial sd of about 1.3 points


def population(**over: Any) -> Population:
    raw: dict[str, Any] = {
        "version": "v2",
        "members": {
            "strong": {"skill": {"default": 1.5}, "spread": 1.0, "tokens_median": 150, "tokens_q95": 300},
            "weak": {"skill": {"default": -1.5}, "spread": 1.0, "tokens_median": 150, "tokens_q95": 300},
            "mid": {
                "skill": {"default": 0.0, "hard": -2.0},
                "spread": 0.5,
                "tokens_median": 150,
                "tokens_q95": 300,
            },
        },
        "benchmarks": {"default": {"item_spread": 1.0, "misconception": 0.4}},
        "dynamics": {"stubbornness": 0.0, "reflect": 0.0},
    }
    for key, value in over.items():
        section, name = key.split("__")
        target = raw[section] if section == "dynamics" else raw[section]["default"]
        target[name] = value
    return parse("test", raw)


def ask(
    b: PopulationBackend, hints: list[dict[str, Any]], max_tokens: int = 4096, seed: int = 0
) -> list[dict[str, Any]]:
    reqs = [
        ChatRequest(messages=(Message("user", "question"),), max_tokens=max_tokens, seed=seed, hints=h)
        for h in hints
    ]
    out = asyncio.run(b.generate(reqs))
    return [{**json.loads(c.text), "_tokens": c.completion_tokens, "_finish": c.finish_reason} for c in out]


def initial(i: int, agent: int = 0, dataset: str = "") -> dict[str, Any]:
    return {
        "item": f"q{i}",
        "gold": "12",
        "kind": "numeric",
        "agent": agent,
        "round": 0,
        "phase": "initial",
        "dataset": dataset,
    }


def update(i: int, own: str, peers: list[tuple[str, int]], **extra: Any) -> dict[str, Any]:
    return {
        **initial(i),
        "round": 1,
        "phase": "update",
        "own": [own, 3],
        "peers": [list(p) for p in peers],
        "sources": list(range(1, len(peers) + 1)),
        **extra,
    }


def hit_rate(replies: list[dict[str, Any]]) -> float:
    return float(np.mean([r["answer"] == "12" for r in replies]))


def assert_replays(raw: dict[str, Any], field: str, since: str) -> None:
    """The file `raw` (a model before `since`) read as model `since`, where `field` is 0, draws what it
    draws, reply for reply, on first answers and updates; `raw`'s digest leaves `field` out."""
    old, new = parse("test", raw), parse("test", {**raw, "version": since})
    hints = [initial(i) for i in range(200)] + [update(i, "13", [("12", 3), ("14", 5)]) for i in range(200)]
    for m in ("weak", "mid"):
        assert ask(PopulationBackend(m, old, m), hints) == ask(PopulationBackend(m, new, m), hints)
    assert field not in old.content()["members"]["mid"]
    assert new.content()["members"]["mid"][field] == 0.0


def assert_gated(raw: dict[str, Any], field: str, since: str, bad: float, bounds: str) -> None:
    """A file of the model before `since` (`raw`) may not set member field `field`, and a `since`
    file must give it within `bounds` (as the error prints them, e.g. "0, 1")."""
    members = {**raw["members"], "mid": {**raw["members"]["mid"], field: 0.5}}
    with pytest.raises(
        ValueError,
        match=rf"^population.members.mid.{field}: read from population model {since} on; "
        rf"remove it, or set version: {since}$",
    ):
        parse("test", {**raw, "members": members})
    with pytest.raises(ValueError, match=rf"members.mid.{field}: must be a number in \[{bounds}\]"):
        parse(
            "test", {**raw, "version": since, "members": {**members, "mid": {**members["mid"], field: bad}}}
        )


def test_skill_sets_the_hit_rate_and_benchmarks_have_their_own() -> None:
    pop = population()
    strong, weak, mid = (PopulationBackend(m, pop, m) for m in ("strong", "weak", "mid"))
    assert hit_rate(ask(strong, [initial(i) for i in range(N)])) > 0.7
    assert hit_rate(ask(weak, [initial(i) for i in range(N)])) < 0.3
    assert hit_rate(ask(mid, [initial(i, dataset="hard") for i in range(N)])) < 0.25


def test_samples_of_one_member_share_its_competence_so_consistency_saturates() -> None:
    """Two samples of one member on one item agree far more often than independent draws would."""
    pop = population()
    mid = PopulationBackend("mid", pop, "mid")
    a = [r["answer"] == "12" for r in ask(mid, [initial(i, agent=0) for i in range(N)])]
    b = [r["answer"] == "12" for r in ask(mid, [initial(i, agent=1) for i in range(N)])]
    p = np.mean(a)
    both = np.mean(np.logical_and(a, b))
    assert both > p * p + 0.04  # independent samples would give p^2 (sd of `both` ~0.012)


def test_wrong_members_share_the_misconception() -> None:
    def agreement(misconception: float) -> float:
        pop = population(benchmarks__misconception=misconception)
        w1, w2 = PopulationBackend("weak", pop, "weak"), PopulationBackend("strong", pop, "strong")
        x = [r["answer"] for r in ask(w1, [initial(i) for i in range(N)])]
        y = [r["answer"] for r in ask(w2, [initial(i) for i in range(N)])]
        wrong = [(u, v) for u, v in zip(x, y, strict=True) if u != "12" and v != "12"]
        return float(np.mean([u == v for u, v in wrong]))

    assert agreement(0.9) > agreement(0.0) + 0.4


def test_a_correct_argument_convinces_a_competent_reader_more() -> None:
    pop = population()
    hints = [update(i, "13", [("12", 3)]) for i in range(N)]
    strong = hit_rate(ask(PopulationBackend("strong", pop, "strong"), hints))
    weak = hit_rate(ask(PopulationBackend("weak", pop, "weak"), hints))
    assert strong > weak + 0.15


def test_a_confident_wrong_argument_misleads_a_weak_reader_more() -> None:
    pop = population(dynamics__mislead=0.8)
    sure = [update(i, "12", [("13", 5)]) for i in range(N)]
    unsure = [update(i, "12", [("13", 1)]) for i in range(N)]
    weak = PopulationBackend("weak", pop, "weak")
    strong = PopulationBackend("strong", pop, "strong")
    assert hit_rate(ask(weak, sure)) < hit_rate(ask(strong, sure)) - 0.1
    assert hit_rate(ask(weak, sure)) < hit_rate(ask(weak, unsure)) - 0.1


def test_importance_weights_change_a_source_s_pull() -> None:
    pop = population(dynamics__persuasion=0.7)
    mid = PopulationBackend("mid", pop, "mid")
    heavy = hit_rate(ask(mid, [update(i, "13", [("12", 3)], weights=[1.0]) for i in range(N)]))
    ignored = hit_rate(ask(mid, [update(i, "13", [("12", 3)], weights=[0.0]) for i in range(N)]))
    assert ignored == 0.0 and heavy > 0.2


def test_a_cut_argument_persuades_less() -> None:
    pop = population(dynamics__persuasion=0.9, dynamics__cut_persuasion=0.2)
    mid = PopulationBackend("mid", pop, "mid")
    whole = hit_rate(ask(mid, [update(i, "13", [("12", 3)], peer_complete=[True]) for i in range(N)]))
    cut = hit_rate(ask(mid, [update(i, "13", [("12", 3)], peer_complete=[False]) for i in range(N)]))
    assert whole > cut + 0.1


def test_long_context_costs_competence() -> None:
    pop = population(dynamics__context_cost=1.0, dynamics__reflect=1.0, dynamics__context_free_tokens=100)
    mid = PopulationBackend("mid", pop, "mid")
    short = hit_rate(ask(mid, [update(i, "13", [("13", 3)], peer_chars=[100]) for i in range(N)]))
    long = hit_rate(ask(mid, [update(i, "13", [("13", 3)], peer_chars=[40_000]) for i in range(N)]))
    assert short > long + 0.1


def test_a_cap_shortens_the_argument_and_keeps_the_answer() -> None:
    pop = population()
    strong = PopulationBackend("strong", pop, "strong")
    full = ask(strong, [initial(i) for i in range(200)])
    capped = ask(strong, [initial(i) for i in range(200)], max_tokens=60)
    assert [r["answer"] for r in full] == [r["answer"] for r in capped]
    assert all(r["_tokens"] <= 60 + 30 for r in capped) and any(r["_finish"] == "length" for r in capped)
    assert np.mean([r["_tokens"] for r in capped]) < np.mean([r["_tokens"] for r in full]) / 2
    median = np.median([r["_tokens"] for r in full])
    assert 110 <= median <= 190  # the member's tokens_median is 150


def test_no_seat_identity_in_replies() -> None:
    pop = population()
    b = PopulationBackend("mid", pop, "mid")
    critique = {**update(1, "12", [("13", 3), ("12", 4)]), "phase": "critique"}
    reqs = [
        ChatRequest(messages=(Message("user", "q"),), seed=s, hints=h)
        for s in range(20)
        for h in (critique, update(2, "13", [("12", 3)]))
    ]
    assert not any("Agent" in c.text for c in asyncio.run(b.generate(reqs)))


def test_the_engine_runs_a_population_file_and_refuses_v1_arguments_beside_it(tmp_path: Any) -> None:
    path = tmp_path / "pop.yaml"
    path.write_text(population().dump())
    engine = SimulatedBackend("mid", population=str(path), member="mid")
    reply = asyncio.run(
        engine.generate([ChatRequest(messages=(Message("user", "q"),), seed=1, hints=initial(3))])
    )
    direct = ask(PopulationBackend("mid", population(), "mid"), [initial(3)], max_tokens=512, seed=1)
    assert json.loads(reply[0].text)["answer"] == direct[0]["answer"]
    with pytest.raises(ValueError, match=r"^args.skill: population .* remove skill"):
        check_args("mid", 0.7, 0.8, 0.5, 0.3, 0.02, 3, 0.25, 0.0, 0.0, str(path), "mid")
    with pytest.raises(ValueError, match="has no member 'nobody'"):
        check_args("m", 0.6, 0.8, 0.5, 0.3, 0.02, 3, 0.25, 0.0, 0.0, str(path), "nobody")
    with pytest.raises(ValueError, match=r"^args.member: required .* has: strong, weak, mid"):
        check_args("mid", 0.6, 0.8, 0.5, 0.3, 0.02, 3, 0.25, 0.0, 0.0, str(path), "")
    with pytest.raises(ValueError, match="no population 'nope'"):
        check_args("mid", 0.6, 0.8, 0.5, 0.3, 0.02, 3, 0.25, 0.0, 0.0, "nope", "")


def test_v3_lets_a_reader_check_an_argument_it_could_not_have_found() -> None:
    """`verify` (model v3) raises a weak reader's chance of being convinced by a correct argument;
    v2 ignores it, and a v2 file may not set it (its digest and episodes stay as they were)."""
    hints = [update(i, "13", [("12", 3)]) for i in range(N)]
    v2 = population(dynamics__persuasion=0.9)
    raw = {**v2.content(), "version": "v3"}
    v3 = parse("test", {**raw, "dynamics": {**raw["dynamics"], "verify": 0.8}})
    weak_v2 = hit_rate(ask(PopulationBackend("weak", v2, "weak"), hints))
    weak_v3 = hit_rate(ask(PopulationBackend("weak", v3, "weak"), hints))
    assert weak_v3 > weak_v2 + 0.2
    assert "verify" not in v2.content()["dynamics"]
    with pytest.raises(ValueError, match=r"dynamics.verify: read from population model v3 on"):
        parse("test", {**v2.content(), "dynamics": {"verify": 0.5}})


def _v5(self_knowledge: float, calibration: float = 1.0) -> Population:
    raw = {**population().content(), "version": "v5"}
    members = {
        k: {**m, "calibration": calibration, "self_knowledge": self_knowledge}
        for k, m in raw["members"].items()
    }
    return parse("test", {**raw, "members": members})


def test_v5_self_knowledge_sets_whether_confidence_tells_which_sample_is_right() -> None:
    """Of two samples of one member on one item, one right and one wrong, the right one states a
    higher confidence when confidence follows the sample (self_knowledge 1) and no higher one when it
    follows how easy the item feels (0); across members it still tells strong from weak."""

    def gap(pop: Population) -> float:
        mid = PopulationBackend("mid", pop, "mid")
        a = ask(mid, [initial(i, agent=0) for i in range(N)])
        b = ask(mid, [initial(i, agent=1) for i in range(N)])
        diffs = [
            (x["confidence"] - y["confidence"]) * (1 if x["answer"] == "12" else -1)
            for x, y in zip(a, b, strict=True)
            if (x["answer"] == "12") != (y["answer"] == "12")
        ]
        assert len(diffs) > 150
        return float(np.mean(diffs))

    assert gap(_v5(1.0)) > 1.0
    assert abs(gap(_v5(0.0))) < 0.35
    blind = _v5(0.0)
    strong = np.mean(
        [
            r["confidence"]
            for r in ask(PopulationBackend("strong", blind, "strong"), [initial(i) for i in range(N)])
        ]
    )
    weak = np.mean(
        [
            r["confidence"]
            for r in ask(PopulationBackend("weak", blind, "weak"), [initial(i) for i in range(N)])
        ]
    )
    assert strong > weak + 0.5


def test_v5_with_full_self_knowledge_replays_v4_and_older_files_may_not_set_it() -> None:
    """A v5 file with self_knowledge 1 draws what the same v4 file draws, reply for reply (v5's
    draws are gated on it); a v4 file may not set self_knowledge, and its digest is what it was."""
    raw = {**population().content(), "version": "v4"}
    v4 = parse("test", raw)
    v5 = parse("test", {**raw, "version": "v5"})
    hints = [initial(i) for i in range(200)] + [update(i, "13", [("12", 3), ("14", 5)]) for i in range(200)]
    critique = [{**update(i, "12", [("13", 3)]), "phase": "critique"} for i in range(50)]
    for m in ("strong", "mid"):
        assert ask(PopulationBackend(m, v4, m), hints + critique) == ask(
            PopulationBackend(m, v5, m), hints + critique
        )
    assert "self_knowledge" not in v4.content()["members"]["mid"]
    assert v5.content()["members"]["mid"]["self_knowledge"] == 1.0
    assert_gated(raw, "self_knowledge", "v5", 1.5, "0, 1")


def test_a_v4_file_replies_as_before_v5() -> None:
    """A v4 file's answers and confidences, initial, update and critique, hash to what model v4 gave
    at d7d9b6d (before v5): v5's draws leave an older version's stream alone."""
    pop = parse("test", {**population().content(), "version": "v4"})
    hints = [initial(i) for i in range(100)] + [update(i, "13", [("12", 3), ("14", 5)]) for i in range(100)]
    hints += [{**update(i, "12", [("13", 3)]), "phase": "critique"} for i in range(30)]
    out = [
        [r["answer"], r["confidence"]]
        for m in ("strong", "mid")
        for r in ask(PopulationBackend(m, pop, m), hints)
    ]
    assert hashlib.sha256(json.dumps(out).encode()).hexdigest()[:16] == "d0047215d89b8cd5"
