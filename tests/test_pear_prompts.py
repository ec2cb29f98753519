"""PEAR's and RUMAD's templates: byte-stable, shared prefix first, the kind's answer format, the JSON the
prompts ask for matching the structured-output schemas; and reading critiques and verdicts."""

from __future__ import annotations

import json
import os

import pytest
from golden_prompts import parts

from data.benchmarks.formats import format_block
from data.types import Sample
from debate import prompts
from debate.critique import critique_schema, read_reviews, read_verdicts, revise_schema, structured_schema
from debate.methods import build_method
from debate.state import View

NUM = Sample(id="n", question="What is 6 * 7?", gold="42", kind="numeric")
MC = Sample(id="c", question="Pick the prime.", gold="B", kind="choice", choices=("4", "5", "6"))
MATH = Sample(id="m", question="Simplify x/x.", gold="1", kind="math")
OWN, PEER = View("41", 2, "I added."), View("42", 5, "6 * 7 = 42.")


def user(messages: tuple[prompts.Message, ...]) -> str:
    return messages[-1].content


def test_rendering_is_byte_stable_and_puts_what_is_shared_first() -> None:
    rendered = [
        prompts.initial_messages(NUM, 0),
        prompts.initial_messages(NUM, 3),
        prompts.update_messages(NUM, OWN, [(1, PEER)], 2),
        prompts.critique_messages(NUM, 1, PEER, [(2, OWN)]),
        prompts.revise_messages(NUM, 2, OWN, [(1, PEER, "step 1 is wrong")]),
    ]
    assert rendered[0] == prompts.initial_messages(NUM, 0)  # deterministic
    assert len({m[0].content for m in rendered}) == 1  # one system message for every phase
    problem = prompts.problem_block(NUM)
    answering = [m for i, m in enumerate(rendered) if i != 3]  # every phase but the critique has the rubric
    assert all(user(m).startswith(prompts.CONFIDENCE_RUBRIC + "\n\n") for m in answering)
    for m in rendered:  # the item after the fixed text, then what names the agent
        text = user(m)
        assert text.index(problem) < text.index("You are Agent")
        assert all(f"Agent {k}" not in text[: text.index(problem)] for k in range(1, 6))
    first, fourth = user(rendered[0]), user(rendered[1])
    assert first.endswith("You are Agent 1.") and fourth.endswith("You are Agent 4.")
    assert first.removesuffix("1.") == fourth.removesuffix("4.")  # agents differ in their last tokens only


HEADINGS = {
    "YOUR PRIVATE HISTORY",
    "VISIBLE NEIGHBOR MESSAGES",
    "YOUR CURRENT ANSWER",
    "SOLUTIONS TO REVIEW",
    "YOUR PREVIOUS ANSWER",
    "CRITIQUES YOU RECEIVED",
    "Answer:",
    "Confidence:",
    "Reasoning:",  # a view's labels
}


def test_every_sentence_two_calls_of_a_phase_share_comes_before_the_item() -> None:
    """Fixed text after the PROBLEM block would sit after what differs between calls, where no prefix
    cache reaches it: after the item come only the agent's name, the views, the headings, and the JSON
    shape that names agents."""
    a, b = (OWN, PEER), (View("7", 4, "Guessed."), View("9", 1, "Counted twice."))
    pairs = {
        "update": [prompts.update_messages(NUM, x, [(k, y)], k + 1) for k, (x, y) in enumerate((a, b))],
        "critique": [prompts.critique_messages(NUM, k, x, [(k + 2, y)]) for k, (x, y) in enumerate((a, b))],
        "revise": [
            prompts.revise_messages(NUM, k, x, [(k + 2, y, f"Step {k + 1} slips.")])
            for k, (x, y) in enumerate((a, b))
        ],
        "revise-alone": [prompts.revise_messages(NUM, k, x, []) for k, (x, _) in enumerate((a, b))],
    }
    problem = prompts.problem_block(NUM)
    for phase, (one, two) in pairs.items():
        tails = []
        for m in (one, two):
            tail, ask, shape = user(m).split(problem, 1)[1].partition("Return valid JSON with exactly")
            assert not ask or json.loads(shape.split(":\n", 1)[1]), phase  # the shape, and nothing after it
            tails.append(set(parts(tail)))
        assert tails[0] & tails[1] <= HEADINGS | {"(none)"}, phase


@pytest.mark.parametrize(
    "sample,phrase",
    [(NUM, "final numeric value"), (MC, "letter of the best option"), (MATH, "mathematical expression")],
)
def test_each_kind_gets_its_answer_format(sample: Sample, phrase: str) -> None:
    for style in prompts.STYLES:
        text = user(prompts.initial_messages(sample, 0, style))
        assert sample.question in text and format_block(sample.kind, style) in text
        assert phrase in text if style == "pear" else "\\boxed{answer}" in text
    if sample.choices:
        assert "Options:\nA. 4\nB. 5\nC. 6" in user(prompts.initial_messages(sample))


def test_the_json_asked_for_matches_the_schemas() -> None:
    shape = json.loads(prompts.REPLY_SHAPE)
    assert list(shape) == prompts.REPLY_SCHEMA["required"]
    assert prompts.REPLY_SHAPE in user(prompts.initial_messages(NUM))
    assert prompts.REPLY_SHAPE in user(prompts.update_messages(NUM, OWN, [], 0))
    revise = user(prompts.revise_messages(NUM, 0, OWN, [(2, PEER, "c"), (4, PEER, "d")]))
    asked = json.loads(revise.split("exactly these keys:\n", 1)[1].split("\n", 1)[0])
    schema = revise_schema([2, 4])
    assert list(asked) == schema["required"] and list(asked["critique_response"]) == ["3", "5"]
    assert schema["properties"]["critique_response"]["required"] == ["3", "5"]
    critique = user(prompts.critique_messages(NUM, 0, OWN, [(1, PEER), (3, PEER)]))
    asked = json.loads(critique.split("exactly this shape:\n", 1)[1].split("\n", 1)[0])
    item = critique_schema([1, 3])["properties"]["reviews"]["items"]
    assert list(asked["reviews"][0]) == item["required"] and item["properties"]["target"] == {"enum": [2, 4]}
    assert asked["reviews"][0]["target"] == 2


def test_revise_without_critiques_asks_for_a_self_check() -> None:
    text = user(prompts.revise_messages(NUM, 0, OWN, []))
    assert "CRITIQUES YOU RECEIVED\n(none)" in text and "check your reasoning once more" in text
    assert '"critique_response": {}' in text


def test_rumad_templates() -> None:
    start = prompts.initial_messages(NUM, 0, "rumad")
    assert start[0].content.startswith("Welcome to the debate!")
    assert user(start).startswith("Can you answer the following question as accurately as possible?")
    assert "Explain your answer." in user(start)
    debate = prompts.update_messages(NUM, OWN, [(1, PEER)], 0, "rumad")
    assert [m.role for m in debate] == ["system", "user", "assistant", "user"]
    assert debate[1] == start[1]  # the first turn is round 0's prompt: a shared prefix across rounds
    assert debate[2].content == "I added.\nThe answer is \\boxed{41}.\nConfidence: 2"  # as Table 7 asks
    assert user(debate).startswith("These are the solutions from other agents:")
    assert "importance" not in user(debate)
    weighted = prompts.update_messages(NUM, OWN, [(1, PEER)], 0, "rumad", weights={1: 0.75})
    assert "Agent 2 (importance 0.75):" in user(weighted) and "with their indicated importance" in user(
        weighted
    )
    with pytest.raises(ValueError, match="no 'critique' template"):
        prompts.critique_messages(NUM, 0, OWN, [(1, PEER)], "rumad")
    assert "Confidence: N" in user(start) and "JSON" not in user(start)
    generated = '{"answer": 41} I added it up.'
    extended = prompts.update_messages(NUM, OWN, [(1, PEER)], 0, "rumad", own_text=generated)
    assert extended[2].content == generated and extended[:2] == start  # the conversation goes on as it was


def test_structured_output_schema_per_phase_and_style() -> None:
    base = dict(prompts.REPLY_SCHEMA)
    assert structured_schema("initial", [], base) == base and structured_schema("update", [1], base) == base
    assert structured_schema("critique", [1], base) == critique_schema([1])
    assert structured_schema("revise", [0, 2], base) == revise_schema([0, 2])
    assert structured_schema("revise", [0], None) is None  # the seat does not use structured output
    assert structured_schema("initial", [], base, "rumad") is None  # RUMAD asks for free text


def test_methods_choose_a_template_family() -> None:
    assert build_method("fixed", {}).prompt_style == "pear"
    assert build_method("random", {"prompt_style": "rumad"}).prompt_style == "rumad"
    assert build_method("cot", {"prompt_style": "rumad"}).prompt_style == "rumad"
    with pytest.raises(ValueError, match="prompt_style 'rumad' has no critique/revise"):
        build_method("pear", {"prompt_style": "rumad"})
    with pytest.raises(ValueError, match="unknown prompt_style"):
        build_method("fixed", {"prompt_style": "du"})
    with pytest.raises(ValueError, match="unknown protocol"):
        build_method("fixed", {"protocol": "debate"})


# -- reading the replies ---------------------------------------------------------------------------
def test_reviews_by_id_by_position_and_as_prose() -> None:
    structured = json.dumps(
        {"reviews": [{"target": 4, "step_loc": "s2", "correction": "use 7", "assessment": "Flawed"}]}
    )
    reviews, ok = read_reviews(structured, [1, 3])
    assert ok and "use 7" in reviews[3] and "No critique" in reviews[1]
    reviews, ok = read_reviews('```json\n{"critiques": ["fine", "wrong sum"], "answer": "3"}\n```', [0, 2])
    assert ok and reviews == {0: "fine", 2: "wrong sum"}
    reviews, ok = read_reviews("{'reviews': {'Agent 2': {'assessment': 'Strong'}}}", [1])
    assert ok and reviews == {1: "Assessment: Strong"}
    reviews, ok = read_reviews("Agent 2 forgot to carry the one.", [1, 2])
    assert not ok and reviews[1] == reviews[2] == "Agent 2 forgot to carry the one."


@pytest.mark.parametrize(
    "text,sources,expected",
    [
        ('{"answer": "4", "critique_response": {"3": {"decision": "ACCEPT", "reason": "x"}, "5": {"decision": "reject"}}}', [2, 4], {2: "ACCEPT", 4: "REJECT"}),
        ('{"answer": "4", "critique_response": {"Agent 3": "Accepted"}}', [2, 4], {2: "ACCEPT"}),
        ('{"answer": "4", "critique_response": [{"source": 5, "decision": "REJECT"}]}', [2, 4], {4: "REJECT"}),
        ("I accept Agent 3's correction but reject Agent 5's claim. Answer: 4", [2, 4], {2: "ACCEPT", 4: "REJECT"}),
        ("Agent 5: REJECT. Agent 3: ACCEPT.", [2, 4], {2: "ACCEPT", 4: "REJECT"}),
        ("I ACCEPT the critique. Answer: 4", [2], {2: "ACCEPT"}),
        ("I ACCEPT the critique. Answer: 4", [2, 4], {}),  # whose? unknown, not guessed
        ("Agent 13 made me accept it.", [2], {}),  # a lone word, but about another agent
        ('{"answer": "4", "critique_response": {"9": {"decision": "ACCEPT"}}}', [2, 4], {}),  # not a critic
        ('{"answer": "4", "critique_response": {"9": {"decision": "ACCEPT"}}}', [2], {2: "ACCEPT"}),  # the only one
        ("no verdicts here", [0, 1], {}),
    ],
)  # fmt: skip
def test_verdicts(text: str, sources: list[int], expected: dict[int, str]) -> None:
    assert read_verdicts(text, sources) == expected


def test_readers_survive_hostile_input() -> None:
    nasty = "{" * 5000 + '"critique_response": ' + "[" * 3000 + "ACCEPT agent 1 " * 2000
    assert read_verdicts(nasty, [0]) in ({0: "ACCEPT"}, {})
    reviews, ok = read_reviews(nasty, [0])
    assert not ok and len(reviews[0]) <= 1200
    assert read_verdicts(os.urandom(3000).decode("latin-1"), [0, 1, 2]) is not None
