"""parse_reply on the messy output small models really write, and on hostile input."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from debate.lenient_json import MAX_DEPTH, find_object
from debate.parsing import Reply, parse_reply

# (reply text, answer, confidence, source)
CASES: list[tuple[str, str | None, int | None, str]] = [
    ('{"reasoning": "10 - 3 = 7", "answer": "7", "confidence": 5}', "7", 5, "json"),
    ('JSON:\n{\n  "answer": 3,\n  "confidence": 1\n}\n\nSara had 10 candies and ate 7.', "3", 1, "json"),
    ('```json\n{"reasoning": "x", "answer": "18", "confidence": 4}\n```', "18", 4, "json"),
    ('```json\n{"answer": "B", "confidence": 3}\n```\nLet me know if you need more help!', "B", 3, "json"),
    ('Sure! Here is my answer:\n\n{"answer": "42", "confidence": 4}', "42", 4, "json"),
    ("{'answer': 'B', 'confidence': '4'}", "B", 4, "json"),
    ("{'reasoning': 'Sara's candies: 10, she ate 3', 'answer': 7, 'confidence': 4}", "7", 4, "json"),
    ('{"answer": "12", "confidence": 4,}', "12", 4, "json"),
    ('{"answer": 18, "confidence": 2}', "18", 2, "json"),
    ('{"answer": 18.0, "confidence": 2}', "18.0", 2, "json"),
    ('{"answer": -0.5, "confidence": 2}', "-0.5", 2, "json"),
    ('{"answer": "5", "confidence": "4/5"}', "5", 4, "json"),
    ('{"answer": "5", "confidence": 4.0}', "5", 4, "json"),
    ('{"answer": "5", "confidence": "3 out of 5"}', "5", 3, "json"),
    ('{"answer": "5", "confidence": 4.5}', "5", None, "json"),
    ('{"answer": "5", "confidence": 9}', "5", None, "json"),
    ('{"answer": "5", "confidence": "4/10"}', "5", None, "json"),
    ('{"answer": "5", "confidence": "high"}', "5", None, "json"),
    ('{"reasoning": "easy", "answer": "5"}', "5", None, "json"),
    ('{"Reasoning": "r", "Answer": "C", "Confidence": 3}', "C", 3, "json"),
    ('{"ANSWER": "D", "CONFIDENCE": 1}', "D", 1, "json"),
    ('{"final answer": "9", "confidence": 2}', "9", 2, "json"),
    ("{answer: 42, confidence: 5}", "42", 5, "json"),
    ('{"answer": "3"\n"confidence": 4}', "3", 4, "json"),
    ("{'answer': 'yes', 'confidence': 4, 'done': True}", "yes", 4, "json"),
    ('I tried {"step": 1} first.\n{"answer": "C", "confidence": 2}\n{"answer": "D"}', "C", 2, "json"),
    ('{"reasoning": "r", "answer": "4", "confidence": 4', "4", 4, "json"),
    ('{"answer": "\\\\frac{1}{2}", "confidence": 5}', "\\frac{1}{2}", 5, "json"),
    ('{"answer": "\\frac{1}{2}", "confidence": 5}', "\\frac{1}{2}", 5, "json"),
    ('{"answer": "2\\times 3", "confidence": 5}', "2\\times 3", 5, "json"),
    ("So the total is $\\boxed{72}$.", "72", None, "boxed"),
    ("We get \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}", None, "boxed"),
    ("First \\boxed{3}, no wait: \\boxed{\\sqrt{\\frac{1}{4}}}", "\\sqrt{\\frac{1}{4}}", None, "boxed"),
    ("The set is \\boxed{\\{1, 2\\}}", "\\{1, 2\\}", None, "boxed"),
    ("Final answer: \\boxed{12}\nConfidence: 4", "12", 4, "boxed"),
    ("Unclosed \\boxed{7 and then nothing", None, None, "none"),
    ("Let me think. 6 * 7 = 42.\nAnswer: 42\nConfidence: 4", "42", 4, "answer_line"),
    ("The final answer is 42.", "42", None, "answer_line"),
    ("**Answer:** B\n**Confidence:** 5/5", "B", 5, "answer_line"),
    ("Answer:\n17", "17", None, "answer_line"),
    ("The answer is (C). My confidence is 3 out of 5.", "(C)", 3, "answer_line"),
    ('{"reasoning": "1.1.1.1', None, None, "none"),
    ('{"reasoning": "She said "yes", ok", "answer": "B", "confidence": 4}', "B", 4, "answer_line"),
    ('{"reasoning": "6 times 7", "answer": 4', None, None, "none"),
    ('```json\n{"reasoning": "6 times 7", "answer": "4', None, None, "none"),
    ("I am not sure how to solve this.", None, None, "none"),
    ("Confidence: 4", None, 4, "none"),
    ("", None, None, "none"),
    ('{"answer": null, "confidence": 3}\nThe answer is 5', "5", 3, "answer_line"),
    ('{"answer": "", "confidence": 3} \\boxed{8}', "8", 3, "boxed"),
]


@pytest.mark.parametrize(("text", "answer", "confidence", "source"), CASES)
def test_messy_replies(text: str, answer: str | None, confidence: int | None, source: str) -> None:
    reply = parse_reply(text)
    assert (reply.answer, reply.confidence, reply.source) == (answer, confidence, source)


def test_reasoning_comes_from_the_field_else_the_surrounding_prose() -> None:
    assert parse_reply('{"reasoning": "a\\nb", "answer": "1"}').reasoning == "a\nb"
    with_prose = parse_reply('JSON:\n```json\n{"answer": 3, "confidence": 1}\n```\n\nSara had 10 candies.')
    assert with_prose.reasoning == "Sara had 10 candies."
    steps = parse_reply('{"reasoning": ["add 2", "then 3"], "answer": "5"}')
    assert steps.reasoning == "add 2\nthen 3"
    assert parse_reply("Some thoughts.\nAnswer: 4").reasoning == "Some thoughts.\nAnswer: 4"
    assert parse_reply('{"answer": "1"}').reasoning == ""


def test_extra_keeps_other_scalar_and_list_keys() -> None:
    text = (
        '{"answer": "B", "confidence": 4, "Verdicts": ["ACCEPT", "REJECT"], "n": 3, "p": 0.5,'
        ' "ok": false, "note": "x", "nested": {"a": 1}, "mixed": [1, {"b": 2}], "gone": null}'
    )
    reply = parse_reply(text)
    assert reply.extra == {"verdicts": ["ACCEPT", "REJECT"], "n": 3, "p": 0.5, "ok": False, "note": "x"}
    assert isinstance(reply.extra["n"], int)


def test_first_object_with_an_answer_wins_else_the_first_object() -> None:
    assert parse_reply('{"answer": "A"} {"answer": "B"}').answer == "A"
    no_answer = parse_reply('{"critique": "weak"} {"other": 1} then \\boxed{5}')
    assert no_answer.extra == {"critique": "weak"}
    assert (no_answer.answer, no_answer.source) == ("5", "boxed")


def test_round_trips_what_json_dumps_writes() -> None:
    payload = {"reasoning": 'He said "hi" \\ then\nleft \U0001f600', "answer": "\u00bd", "confidence": 3}
    reply = parse_reply(json.dumps(payload))
    assert (reply.reasoning, reply.answer, reply.confidence) == (payload["reasoning"], "\u00bd", 3)
    assert parse_reply(json.dumps(payload, ensure_ascii=False, indent=2)).answer == "\u00bd"


def test_text_beyond_max_chars_is_ignored() -> None:
    text = "x" * 50 + '{"answer": "7", "confidence": 5}'
    assert parse_reply(text, max_chars=40).source == "none"
    assert parse_reply(text, max_chars=200).answer == "7"
    assert parse_reply(text, max_chars=0) == Reply(None, None, "", "none", {})


def test_nesting_beyond_the_depth_limit_fails_to_parse_without_raising() -> None:
    shallow = '{"a": ' * (MAX_DEPTH - 1) + "1" + "}" * (MAX_DEPTH - 1)
    deep = '{"a": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)
    found = find_object(shallow)
    assert found is not None and found[1:] == (0, len(shallow))
    found = find_object(deep)
    assert found is not None and found[1] == len('{"a": ')  # the outermost is one level too deep
    boxed = "\\boxed{" + "{" * (MAX_DEPTH + 5) + "}" * (MAX_DEPTH + 6)
    assert parse_reply(boxed).source == "none"


@pytest.mark.parametrize(
    "hostile",
    [
        "{" * 200_000,
        '{"a":' * 50_000,
        "{'a" * 10_000,
        "\\boxed{" * 20_000,
        '{"a": [1, ' * 5_000,
        "answer: " * 20_000,
        "confidence: " * 20_000,
        '"' * 100_000,
        "{" + " " * 100_000 + "'",
    ],
)
def test_hostile_input_returns_quickly(hostile: str) -> None:
    start = time.perf_counter()
    reply = parse_reply(hostile)
    assert time.perf_counter() - start < 2.0
    assert reply.source in {"json", "boxed", "answer_line", "none"}


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("{}[]\"':,\\ \n0123456789abnftuxAnswer.boxed/")), max_size=200))
def test_never_raises_on_json_like_noise(text: str) -> None:
    _check_invariants(parse_reply(text))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.integers(min_value=-5, max_value=400))
def test_never_raises_on_arbitrary_text(text: str, max_chars: int) -> None:
    _check_invariants(parse_reply(text, max_chars=max_chars))


@settings(max_examples=150, deadline=None)
@given(
    answer=st.one_of(
        st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=30), st.integers(-(10**6), 10**6)
    ),
    confidence=st.integers(1, 5),
    reasoning=st.text(max_size=80),
)
def test_well_formed_json_is_read_exactly(answer: str | int, confidence: int, reasoning: str) -> None:
    text = json.dumps({"reasoning": reasoning, "answer": answer, "confidence": confidence})
    reply = parse_reply(text)
    written = str(answer).strip()
    if written.lower() in {"", "null", "none", "n/a"}:  # no answer in the object: the fallbacks may run
        assert reply.source != "json"
    else:
        assert (reply.answer, reply.source) == (written, "json")
    assert reply.confidence == confidence
    assert reply.reasoning == reasoning.strip()


def _check_invariants(reply: Reply) -> None:
    assert reply.source in {"json", "boxed", "answer_line", "none"}
    assert reply.confidence is None or 1 <= reply.confidence <= 5
    assert (reply.answer is None) == (reply.source == "none")
    assert reply.answer is None or (reply.answer == reply.answer.strip() and reply.answer != "")
    assert isinstance(reply.reasoning, str)
    assert all(isinstance(k, str) for k in reply.extra)


def test_a_list_or_object_where_one_answer_is_expected_gives_no_answer() -> None:
    # cut-off JSON falls back to the answer line: a list there is several answers, not its first item
    assert parse_reply('{"answer": [4, 2, 1, 2, 3], "confidence": 3').answer is None
    assert parse_reply('{"reasoning": "r", "answer": {"a": 1}, "confidence": 3').answer is None
    assert parse_reply('{"answer": 42, "confidence": 3').answer == "42"
