"""The episode loop, driven by a scripted engine (no Ray): rounds, graphs, seeds, votes, accounting, and
the two protocols (update; critique then revise)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest

from actors.base import ChatRequest, Completion
from data.grading.graders import NumericGrader
from data.types import Sample
from debate.episode import Agent, run_episode
from debate.methods import build_method

SAMPLE = Sample(id="q1", question="What is 6 * 7?", gold="42", kind="numeric")


class Scripted:
    """Answers from a table keyed by (round, agent, phase) or (round, agent), round -1 for any round;
    records every request it saw."""

    def __init__(self, table: dict[tuple[int, int], str], model: str = "scripted") -> None:
        self.table = table
        self.model = model
        self.seen: list[ChatRequest] = []

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        out = []
        for req in requests:
            self.seen.append(req)
            key = (req.hints["round"], req.hints["agent"])
            phase = req.hints["phase"]
            keys = [(*key, phase), key, (-1, key[1], phase), (-1, key[1])]
            text = next((self.table[k] for k in keys if k in self.table), "no idea")
            out.append(
                Completion(text, prompt_tokens=100 + key[1], completion_tokens=10 + key[0], model=self.model)
            )
        return out


def js(answer: str, conf: int = 4) -> str:
    return json.dumps({"reasoning": "because", "answer": answer, "confidence": conf})


def run(method: str, args: dict, backend: Scripted, n: int = 3, rounds: int = 2, seed: int = 0):
    team = [Agent("m", backend, price_in=1.0, price_out=2.0)] * n
    return asyncio.run(
        run_episode(build_method(method, args), team, SAMPLE, NumericGrader(), seed, rounds, "toy")
    )


def test_clique_debate_converges_and_is_graded_every_round() -> None:
    table = {
        (0, 0): js("42", 5),
        (0, 1): js("41", 2),
        (0, 2): js("40", 2),
        (-1, 0): js("42", 5),
        (-1, 1): js("42", 4),
        (-1, 2): js("42", 4),
    }
    r = run("fixed", {"topology": "clique"}, Scripted(table))
    assert r.round_answers == ["42", "42", "42"]  # round 0: three different answers, 42 wins on confidence
    assert r.round_correct == [True, True, True]
    assert r.correct and r.final_answer == "42"
    assert r.calls == 9 and len(r.state.views) == 3


def test_token_counts_and_cost_come_from_the_engine() -> None:
    r = run("fixed", {"topology": "ring"}, Scripted({(-1, i): js("42") for i in range(3)}))
    assert r.prompt_tokens == sum(100 + t.agent for t in r.turns)
    assert r.completion_tokens == sum(10 + t.round for t in r.turns)
    assert abs(r.cost - (r.prompt_tokens * 1.0 + r.completion_tokens * 2.0) / 1e6) < 1e-12


def test_unparsable_reply_keeps_previous_answer_and_is_counted() -> None:
    table = {
        (0, 0): js("42"),
        (0, 1): js("42"),
        (0, 2): js("7"),
        (1, 0): "I refuse to answer.",
        (1, 1): js("42"),
        (1, 2): js("42"),
    }
    r = run("fixed", {"topology": "clique"}, Scripted(table), rounds=1)
    assert r.parse_failures == 1
    bad = [t for t in r.turns if not t.parsed]
    assert len(bad) == 1 and bad[0].agent == 0 and bad[0].round == 1
    assert r.state.views[1][0].answer == "42"  # kept from round 0


def test_ring_agents_see_exactly_their_source() -> None:
    backend = Scripted({(-1, i): js(str(40 + i)) for i in range(3)})
    run("fixed", {"topology": "ring"}, backend, rounds=1)
    round1 = {r.hints["agent"]: r for r in backend.seen if r.hints["round"] == 1}
    assert round1[1].hints["peers"] == [["40", 4]]  # agent 1 sees agent 0
    prompt = round1[1].messages[-1].content
    assert "VISIBLE NEIGHBOR MESSAGES\nAgent 1\nAnswer: 40\nConfidence: 4" in prompt
    assert "You are Agent 2" in prompt and "Agent 3" not in prompt
    zero = Scripted({(-1, i): js("1") for i in range(3)})
    run("fixed", {"topology": "zero"}, zero, rounds=1)
    assert all(r.hints["peers"] == [] for r in zero.seen)


def test_cot_and_cot_sc_shapes() -> None:
    cot = run("cot", {}, Scripted({(-1, 0): js("42")}), rounds=3)
    assert cot.calls == 1 and cot.round_correct == [True]
    sc = run(
        "cot_sc", {"m": 5}, Scripted({(0, i): js("42" if i < 2 else str(i)) for i in range(5)}), rounds=3
    )
    assert sc.calls == 5 and sc.final_answer == "42" and len(sc.round_correct) == 1


def test_round0_seeds_are_shared_across_methods_and_seeds_reach_the_engine() -> None:
    a, b = Scripted({(-1, i): js("1") for i in range(3)}), Scripted({(-1, i): js("1") for i in range(3)})
    run("fixed", {"topology": "clique"}, a, seed=7)
    run("random", {"k": 1}, b, seed=7)
    seeds0 = lambda s: sorted(r.seed for r in s.seen if r.hints["round"] == 0)  # noqa: E731
    assert seeds0(a) == seeds0(b)
    assert len(set(seeds0(a))) == 3  # every agent its own seed
    c = Scripted({(-1, i): js("1") for i in range(3)})
    run("fixed", {"topology": "clique"}, c, seed=8)
    assert seeds0(c) != seeds0(a)
    assert all(isinstance(r.seed, int) for r in a.seen)


def test_episode_is_deterministic_with_the_simulated_backend() -> None:
    from actors.registry import build_backend

    def once(seed: int) -> list[str]:
        sim = build_backend("simulated", "sim", {"skill": 0.5})
        team = [Agent("sim", sim)] * 4
        res = asyncio.run(
            run_episode(build_method("random", {"k": 2}), team, SAMPLE, NumericGrader(), seed, 3, "toy")
        )
        return [t.text for t in res.turns]

    assert once(1) == once(1)
    assert once(1) != once(2)


# -- critique_revise ---------------------------------------------------------------------------------
def review(*targets: int, assessment: str = "Flawed") -> str:
    """A critique reply in PEAR's E.5 shape; targets are 1-based agent ids."""
    reviews = [
        {
            "target": t,
            "step_loc": f"step of agent {t}",
            "correction": f"fix for {t}",
            "assessment": assessment,
        }
        for t in targets
    ]
    return json.dumps({"reviews": reviews})


def revised(answer: str, conf: int, **verdicts: str) -> str:
    """A revision reply in E.4's shape; verdict keys are like a3 for "Agent 3"."""
    response = {k[1:]: {"decision": v, "reason": "r"} for k, v in verdicts.items()}
    return json.dumps({"reasoning": "r", "answer": answer, "confidence": conf, "critique_response": response})


def test_critique_revise_calls_verdicts_and_unparsable_kept() -> None:
    table = {
        (0, 0): js("42", 5), (0, 1): js("41", 2), (0, 2): js("40", 2),
        # ring: 0 -> 1 -> 2 -> 0 (target sees / is critiqued by its predecessor)
        (1, 0, "critique"): review(2), (1, 1, "critique"): review(3), (1, 2, "critique"): review(1),
        (1, 0, "revise"): revised("42", 5, a3="REJECT"),
        (1, 1, "revise"): revised("42", 4, a1="ACCEPT"),
        (1, 2, "revise"): "I have nothing useful to say.",  # unparsable: keeps 40
    }  # fmt: skip
    backend = Scripted(table)
    r = run("fixed", {"topology": "ring", "protocol": "critique_revise"}, backend, rounds=1)
    round1 = r.state.turns[1]
    assert [t.phase for t in round1] == ["critique"] * 3 + ["revise"] * 3  # two calls per agent
    assert r.calls == 3 + 6
    critiques = {t.agent: t for t in round1 if t.phase == "critique"}
    assert critiques[0].sources == (1,) and critiques[0].answer is None and critiques[0].parsed
    assert "fix for 2" in critiques[0].extra["reviews"][1]
    revisions = {t.agent: t for t in round1 if t.phase == "revise"}
    assert revisions[0].extra["verdicts"] == {2: "REJECT"}
    assert revisions[1].extra["verdicts"] == {0: "ACCEPT"} and revisions[1].sources == (0,)
    assert not revisions[2].parsed and r.parse_failures == 1
    assert [v.answer for v in r.state.views[1]] == ["42", "42", "40"]  # agent 2 kept its answer
    # The revision prompt carries the critic's review of this target, not of another.
    seen = {q.hints["agent"]: q for q in backend.seen if q.hints["phase"] == "revise"}
    assert "Critique from Agent 1 (its answer: 42, confidence 5):" in seen[1].messages[-1].content
    assert "fix for 2" in seen[1].messages[-1].content and "fix for 3" not in seen[1].messages[-1].content
    assert seen[1].hints["peers"] == [["42", 5]]


def test_agents_without_targets_make_no_critique_call() -> None:
    table = {(-1, i, "critique"): review(i + 2) for i in range(3)}
    table.update({(-1, i): js("42") for i in range(3)})
    backend = Scripted(table)
    r = run("fixed", {"topology": "chain", "protocol": "critique_revise"}, backend, rounds=2)
    for rnd in (1, 2):
        phases = [(t.phase, t.agent) for t in r.state.turns[rnd]]
        assert phases == [("critique", 0), ("critique", 1), ("revise", 0), ("revise", 1), ("revise", 2)]
    head = next(q for q in backend.seen if q.hints["phase"] == "revise" and q.hints["agent"] == 0)
    assert "CRITIQUES YOU RECEIVED\n(none)" in head.messages[-1].content  # agent 0 re-checks itself
    assert r.calls == 3 + 2 * 5


def test_unstructured_critique_still_reaches_its_target_and_counts_as_unparsed() -> None:
    table = {(-1, i): js("42") for i in range(2)}
    table[(1, 0, "critique")] = "Your second step divides where it should multiply."
    backend = Scripted(table)
    r = run("fixed", {"topology": "chain", "protocol": "critique_revise"}, backend, n=2, rounds=1)
    critique = next(t for t in r.turns if t.phase == "critique")
    assert not critique.parsed and r.parse_failures == 1
    target = next(q for q in backend.seen if q.hints["phase"] == "revise" and q.hints["agent"] == 1)
    assert "divides where it should multiply" in target.messages[-1].content


def test_structured_output_gets_a_schema_per_phase() -> None:
    from debate.prompts import REPLY_SCHEMA

    backend = Scripted({(-1, i): js("42") for i in range(3)})
    team = [Agent("m", backend, json_schema=dict(REPLY_SCHEMA))] * 3
    method = build_method("fixed", {"topology": "ring", "protocol": "critique_revise"})
    asyncio.run(run_episode(method, team, SAMPLE, NumericGrader(), 0, 1, "toy"))
    by_phase = {(q.hints["phase"], q.hints["agent"]): q.json_schema for q in backend.seen}
    initial = by_phase[("initial", 0)]
    assert initial is not None and initial["properties"]["answer"] == {"type": "number"}  # a numeric item
    assert {k: v for k, v in initial["properties"].items() if k != "answer"} == {
        k: v
        for k, v in REPLY_SCHEMA["properties"].items()
        if k != "answer"  # type: ignore[attr-defined]
    }
    critique = by_phase[("critique", 0)]
    assert critique is not None and critique["properties"]["reviews"]["items"]["properties"]["target"] == {
        "enum": [2]
    }
    revise = by_phase[("revise", 1)]
    assert revise is not None and revise["properties"]["critique_response"]["required"] == ["1"]
    assert revise["properties"]["answer"] == {"type": "number"}


@pytest.mark.parametrize(
    ("kind", "n_choices", "answer"),
    [
        ("numeric", 0, {"type": "number"}),
        ("choice", 4, {"enum": ["A", "B", "C", "D"]}),
        ("choice", 10, {"enum": list("ABCDEFGHIJ")}),
        ("math", 0, {"type": "string", "maxLength": 200}),
    ],
)
def test_the_reply_schema_types_the_answer_by_the_items_kind(
    kind: str, n_choices: int, answer: dict[str, Any]
) -> None:
    from debate.critique import answer_property, structured_schema
    from debate.prompts import REPLY_SCHEMA

    assert answer_property(kind, n_choices) == answer
    schema = structured_schema("initial", [], REPLY_SCHEMA, "pear", answer_property(kind, n_choices))
    assert schema is not None and schema["properties"]["answer"] == answer
    assert REPLY_SCHEMA["properties"]["answer"] == {"type": "string", "maxLength": 200}  # type: ignore[index]
    assert structured_schema("initial", [], REPLY_SCHEMA, "rumad", answer) is None  # free-text prompts


def test_every_router_runs_under_both_protocols_with_the_simulated_backend() -> None:
    from actors.registry import build_backend

    sim = build_backend("simulated", "sim", {"skill": 0.5})
    team = [Agent("sim", sim)] * 5
    for name, args in [
        ("random", {"k": 2}),
        ("fixed", {"topology": "star"}),
        ("pear", {"mc_permutations": 8}),
    ]:
        for protocol in ("update", "critique_revise"):
            method = build_method(name, {**args, "protocol": protocol})
            res = asyncio.run(run_episode(method, team, SAMPLE, NumericGrader(), 3, 2, "toy"))
            per_round = [len(res.state.turns[r]) for r in (1, 2)]
            if protocol == "update":
                assert per_round == [5, 5]
            else:  # five revisions plus one critique per agent that has targets
                for r, calls in zip((1, 2), per_round, strict=True):
                    graph = res.state.graphs[r]
                    assert graph is not None
                    assert calls == 5 + sum(graph.out_degree(i) > 0 for i in range(5))


def test_simulated_pear_fills_critique_acceptance() -> None:
    from actors.registry import build_backend
    from debate.diagnostics import diagnose_episode

    sim = build_backend("simulated", "sim", {"skill": 0.5, "malformed_rate": 0.0})
    team = [Agent("sim", sim)] * 4
    method = build_method("pear", {"mc_permutations": 8})
    grader = NumericGrader()
    totals = {"critiques": 0, "verdicts": 0, "accepted": 0}
    for i in range(20):
        sample = Sample(id=f"q{i}", question=f"What is {i} * 7?", gold=str(7 * i), kind="numeric")
        res = asyncio.run(run_episode(method, team, sample, grader, i, 2, "toy"))
        diag = diagnose_episode(res)
        for key in totals:
            totals[key] += diag.summary[key]
    # every critique gets a readable verdict; some persuade and some do not
    assert totals["critiques"] > 0 and totals["verdicts"] == totals["critiques"]
    assert 0 < totals["accepted"] < totals["verdicts"]


def test_reasoning_is_bounded_by_the_token_budget_in_every_reply_shape() -> None:
    from debate.critique import answer_property, structured_schema
    from sweep.engines.pool import reply_schema

    assert reply_schema(256)["properties"]["reasoning"]["maxLength"] == 192  # 64 tokens left for the rest
    assert reply_schema(4096)["properties"]["reasoning"]["maxLength"] == 1000  # never above the default
    assert reply_schema(32)["properties"]["reasoning"]["maxLength"] == 64  # never below a sentence
    base = reply_schema(300)
    for phase in ("initial", "update", "revise"):
        schema = structured_schema(phase, [0], base, "pear", answer_property("numeric"))
        assert schema is not None and schema["properties"]["reasoning"]["maxLength"] == 236, phase
