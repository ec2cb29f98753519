"""The simulated backend: determinism, accuracy, calibration, debate dynamics, text shapes, token counts."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from actors.base import Backend, ChatRequest, Completion, Message
from actors.registry import build_backend
from actors.simulated import SimulatedBackend, item_profile
from debate.critique import read_reviews, read_verdicts

PROMPT = (Message("system", "You are a careful solver."), Message("user", "What is 3 * 6?"))


def req(hints: Mapping[str, Any], seed: int | None = 0, **kw: Any) -> ChatRequest:
    return ChatRequest(messages=kw.pop("messages", PROMPT), seed=seed, hints=hints, **kw)


def run(b: SimulatedBackend, requests: Sequence[ChatRequest]) -> list[Completion]:
    return asyncio.run(b.generate(requests))


def strip_fences(text: str) -> str:
    if text.startswith("```"):
        return text.split("\n", 1)[1].split("```", 1)[0]
    return text


def payload(c: Completion) -> dict[str, Any]:
    return json.loads(strip_fences(c.text))


def numeric_hints(i: int, **kw: Any) -> dict[str, Any]:
    gold = str(10 + i % 90)
    return {"agent": 0, "round": 0, "phase": "initial", "kind": "numeric", "gold": gold, "item": f"q{i}"} | kw


def update_hints(i: int, own: list[Any] | None, peers: list[list[Any]], **kw: Any) -> dict[str, Any]:
    return numeric_hints(i, round=1, phase="update", own=own, peers=peers) | kw


def wrong_for(i: int) -> str:
    h = numeric_hints(i)
    return item_profile(h["item"], h["gold"], "numeric", 4, 3)[1][0]


def test_is_a_registered_backend() -> None:
    b = build_backend("simulated", "sim-a", {"skill": 0.7})
    assert isinstance(b, SimulatedBackend) and isinstance(b, Backend)
    assert b.skill == 0.7 and b.model == "sim-a"


def test_same_seed_and_hints_give_identical_completions() -> None:
    b = SimulatedBackend("sim-a")
    batch = [req(numeric_hints(i), seed=i) for i in range(200)]
    assert run(b, batch) == run(SimulatedBackend("sim-a"), batch)
    other = run(b, [req(numeric_hints(i), seed=i + 10_000) for i in range(200)])
    differing = sum(a.text != c.text for a, c in zip(run(b, batch), other, strict=True))
    assert differing > 100
    renamed = run(SimulatedBackend("sim-b"), batch)
    assert sum(a.text != c.text for a, c in zip(run(b, batch), renamed, strict=True)) > 100
    assert all(c.model == "sim-b" for c in renamed)


def round0_accuracy(b: SimulatedBackend, n: int = 2000) -> float:
    outs = run(b, [req(numeric_hints(i), seed=7 * i) for i in range(n)])
    return float(np.mean([payload(c)["answer"] == numeric_hints(i)["gold"] for i, c in enumerate(outs)]))


@pytest.mark.parametrize("skill", [0.35, 0.6, 0.85])
def test_round0_accuracy_tracks_skill(skill: float) -> None:
    assert abs(round0_accuracy(SimulatedBackend("m", skill=skill, malformed_rate=0.0)) - skill) < 0.05


def test_strong_model_beats_weak_model_on_the_same_items() -> None:
    strong = round0_accuracy(SimulatedBackend("strong", skill=0.85, malformed_rate=0.0), 500)
    weak = round0_accuracy(SimulatedBackend("weak", skill=0.35, malformed_rate=0.0), 500)
    assert strong > weak + 0.3


def test_wrong_answers_are_shared_item_level_distractors() -> None:
    outs = {
        m: [payload(c)["answer"] for c in run(SimulatedBackend(m, skill=0.0, malformed_rate=0.0), batch)]
        for m in ("a", "b")
        for batch in [[req(numeric_hints(i), seed=i) for i in range(300)]]
    }
    for i in range(300):
        h = numeric_hints(i)
        assert (
            outs["a"][i] == h["gold"]
            or outs["a"][i] in item_profile(h["item"], h["gold"], "numeric", 4, 3)[1]
        )
    # The common misconception draws different models onto the same wrong answer.
    assert np.mean([a == b for a, b in zip(outs["a"], outs["b"], strict=True)]) > 0.3


def test_distractors_are_plausible_and_non_negative() -> None:
    _, wrong = item_profile("x", "0", "numeric", 4, 5)
    assert len(wrong) == 5 and "0" not in wrong and all(float(w) >= 0 for w in wrong)
    assert set(item_profile("y", "B", "choice", 4, 3)[1]) == {"A", "C", "D"}
    assert "-3" not in item_profile("z", "3", "numeric", 4, 20)[1]
    assert len(set(item_profile("w", r"\frac{1}{2}", "math", 4, 3)[1])) == 3


def test_confidence_is_calibrated() -> None:
    b = SimulatedBackend("m", skill=0.5, calibration=0.9, malformed_rate=0.0)
    outs = [payload(c) for c in run(b, [req(numeric_hints(i), seed=i) for i in range(1500)])]
    right = [p["confidence"] for i, p in enumerate(outs) if p["answer"] == numeric_hints(i)["gold"]]
    wrong = [p["confidence"] for i, p in enumerate(outs) if p["answer"] != numeric_hints(i)["gold"]]
    assert all(1 <= c <= 5 for c in right + wrong)
    assert np.mean(right) > np.mean(wrong) + 1.0


def switch_rate(b: SimulatedBackend, own_right: bool, peers_gold: bool, n: int = 1000) -> float:
    batch = []
    for i in range(n):
        gold, wrong = numeric_hints(i)["gold"], wrong_for(i)
        peer = gold if peers_gold else wrong
        own = [gold if own_right else wrong, 2]
        batch.append(req(update_hints(i, own, [[peer, 5]] * 4 if peer != own[0] else []), seed=i))
    answers = [payload(c)["answer"] for c in run(b, batch)]
    return float(np.mean([a != (b_.hints["own"][0]) for a, b_ in zip(answers, batch, strict=True)]))


def test_wrong_agent_facing_confident_gold_switches_often() -> None:
    assert switch_rate(SimulatedBackend("m", malformed_rate=0.0), own_right=False, peers_gold=True) > 0.5


def test_right_answer_is_abandoned_less_than_a_wrong_one() -> None:
    b = SimulatedBackend("m", malformed_rate=0.0)
    batch = []
    for i in range(1000):
        gold, wrong = numeric_hints(i)["gold"], wrong_for(i)
        batch.append(req(update_hints(i, [gold, 3], [[wrong, 3]] * 3), seed=i))
    left_right = np.mean(
        [payload(c)["answer"] != numeric_hints(i)["gold"] for i, c in enumerate(run(b, batch))]
    )
    assert 0.05 < left_right < switch_rate(b, own_right=False, peers_gold=True)


def test_fully_stubborn_agents_never_switch() -> None:
    b = SimulatedBackend("m", stubbornness=1.0, pull=1.0, malformed_rate=0.0)
    assert switch_rate(b, own_right=False, peers_gold=True) == 0.0
    assert switch_rate(b, own_right=True, peers_gold=False) == 0.0
    alone = [req(update_hints(i, [wrong_for(i), 2], []), seed=i) for i in range(500)]
    assert all(payload(c)["answer"] == wrong_for(i) for i, c in enumerate(run(b, alone)))


def test_self_refinement_without_peers_mostly_keeps_answers_but_fixes_some() -> None:
    b = SimulatedBackend("m", skill=0.9, stubbornness=0.0, malformed_rate=0.0)
    outs = run(b, [req(update_hints(i, [wrong_for(i), 2], []), seed=i) for i in range(2000)])
    fixed = np.mean([payload(c)["answer"] == numeric_hints(i)["gold"] for i, c in enumerate(outs)])
    assert 0.03 < fixed < 0.2


def test_critique_phase_writes_one_e5_review_per_target_the_reader_accepts() -> None:
    b = SimulatedBackend("m", malformed_rate=0.0)
    peers = [["13", 5], ["99", 2], [None, 1]]  # a target with no answer still gets its review
    h = update_hints(3, ["13", 4], peers, phase="critique", sources=[4, 0, 2])
    c = run(b, [req(h)])[0]
    p = payload(c)
    assert p["answer"] == "13" and 1 <= p["confidence"] <= 5
    assert [r["target"] for r in p["reviews"]] == [5, 1, 3]
    assert [r["assessment"] for r in p["reviews"]] == ["Strong", "Flawed", "Flawed"]
    reviews, structured = read_reviews(c.text, [4, 0, 2])
    assert structured and "13" in reviews[4] and "99" in reviews[0] and "No final answer" in reviews[2]


def test_revision_accepts_exactly_the_critics_it_ends_up_agreeing_with() -> None:
    b = SimulatedBackend("m", malformed_rate=0.0)
    reqs = []
    for i in range(300):
        gold = numeric_hints(i)["gold"]
        peers = [[gold, 5], [wrong_for(i), 3], [None, 2]]
        reqs.append(req(update_hints(i, [wrong_for(i), 2], peers, phase="revise", sources=[1, 2, 3]), seed=i))
    outs = run(b, reqs)
    switched = 0
    for i, c in enumerate(outs):
        answer, verdicts = payload(c)["answer"], read_verdicts(c.text, [1, 2, 3])
        assert set(verdicts) == {1, 2, 3} and verdicts[3] == "REJECT"  # no answer: never accepted
        assert verdicts[1] == ("ACCEPT" if answer == numeric_hints(i)["gold"] else "REJECT")
        assert verdicts[2] == ("ACCEPT" if answer == wrong_for(i) else "REJECT")
        switched += answer == numeric_hints(i)["gold"]
    assert 0 < switched < len(outs)  # both branches were exercised


def test_well_formed_text_always_parses_with_fences_and_trailers() -> None:
    b = SimulatedBackend("m", malformed_rate=0.0)
    outs = run(b, [req(numeric_hints(i), seed=i) for i in range(400)])
    assert all({"reasoning", "answer", "confidence"} <= payload(c).keys() for c in outs)
    assert any(c.text.startswith("```json") for c in outs) and any(c.text.startswith("{") for c in outs)
    assert any(not c.text.endswith(("```", "}")) for c in outs)
    assert len({payload(c)["reasoning"] for c in outs}) >= 5


def valid_answer_json(text: str) -> bool:
    try:
        p = json.loads(strip_fences(text))
    except json.JSONDecodeError:
        return False
    return isinstance(p, dict) and "answer" in p and "confidence" in p


def test_always_malformed_text_never_has_answer_and_confidence() -> None:
    b = SimulatedBackend("m", malformed_rate=1.0)
    outs = run(b, [req(numeric_hints(i), seed=i) for i in range(300)])
    assert not any(valid_answer_json(c.text) for c in outs)
    assert {c.finish_reason for c in outs} == {"stop", "length"}
    prose = [c for c in outs if "{" not in c.text]
    no_conf = [c for c in outs if c.text.rstrip("`\n").endswith("}")]
    assert prose and no_conf and all("answer" in json.loads(strip_fences(c.text)) for c in no_conf)


def test_token_counts_follow_text_length() -> None:
    b = SimulatedBackend("m", tokens_per_char=0.25)
    short, long_ = (
        run(b, [req(numeric_hints(1), messages=(Message("user", "x" * n),))])[0] for n in (40, 4000)
    )
    assert short.prompt_tokens == 10 + 4 and long_.prompt_tokens == 1000 + 4
    assert short.completion_tokens == -(-len(short.text) // 4) and short.cached_tokens == 0


def test_max_tokens_truncates_with_length_finish() -> None:
    c = run(SimulatedBackend("m", malformed_rate=0.0), [req(numeric_hints(1), max_tokens=5)])[0]
    assert c.finish_reason == "length" and c.completion_tokens <= 5 and not valid_answer_json(c.text)


def test_latency_is_awaited_once_per_batch() -> None:
    outs = run(SimulatedBackend("m", latency_s=0.05), [req(numeric_hints(i)) for i in range(20)])
    assert all(0.05 <= c.latency_s < 0.5 for c in outs)
    assert all(c.latency_s == 0.0 for c in run(SimulatedBackend("m"), [req(numeric_hints(0))]))


@pytest.mark.parametrize(
    "kw",
    [
        {"skill": 1.5},
        {"calibration": -0.1},
        {"pull": 2.0},
        {"stubbornness": -1.0},
        {"malformed_rate": 1.01},
        {"distractors": 0},
        {"tokens_per_char": 0.0},
        {"latency_s": -1.0},
        {"verbosity": -1.0},
        {"verbosity": 101.0},
    ],
)
def test_out_of_range_arguments_are_rejected_by_name(kw: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(kw))):
        SimulatedBackend("m", **kw)


@pytest.mark.parametrize(
    "hints",
    [
        {},
        {"kind": "choice", "n_choices": 5},
        {"kind": "essay", "gold": 18, "round": "two", "phase": None},
        {"phase": "update", "own": "garbage", "peers": "also garbage", "gold": "4"},
        {"phase": "update", "own": [None, "x"], "peers": [[None, 5], ["3"], 7, {"answer": "5"}], "gold": "4"},
        {"phase": "critique", "peers": None, "gold": ""},
    ],
)
def test_missing_or_garbled_hints_never_crash(hints: dict[str, Any]) -> None:
    b = SimulatedBackend("m", malformed_rate=0.0)
    c = run(b, [req(hints, seed=s) for s in (None, 0, -5, 2**70, np.int64(3))])
    assert all(isinstance(x.text, str) and x.text for x in c)
    assert all(payload(x)["answer"] for x in c)
    if hints.get("kind") == "choice":
        assert all(payload(x)["answer"] in "ABCDE" for x in c)


def test_choice_items_answer_letters_within_the_choices() -> None:
    b = SimulatedBackend("m", skill=0.6, malformed_rate=0.0)
    hints = [{"kind": "choice", "gold": "ABCDE"[i % 5], "n_choices": 5, "item": f"c{i}"} for i in range(1000)]
    outs = [payload(c) for c in run(b, [req(h, seed=i) for i, h in enumerate(hints)])]
    assert all(p["answer"] in "ABCDE" and "option " + p["answer"] in p["reasoning"] for p in outs)
    assert abs(np.mean([p["answer"] == h["gold"] for p, h in zip(outs, hints, strict=True)]) - 0.6) < 0.06
