"""The reader's strict-JSON shortcut returns exactly what the lenient reader returns, whatever the
object, its keys' spelling, the text around it or the characters in it."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from debate import lenient_json
from debate.parsing import parse_reply

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.text(max_size=30),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
keys = st.sampled_from(
    ["answer", "Answer", "final answer", "final-answer", "confidence", "reasoning", "x", ""]
)
objects = st.dictionaries(keys | st.text(max_size=8), values, max_size=6)
around = st.sampled_from(["", "Sure.\n", "```json\n", "{bad\n", 'prose {"a": 1} then '])
after = st.sampled_from(["", "\n```", "\nDone.", ' {"answer": 9}', "}"])


@settings(max_examples=1500, deadline=None)
@given(objects, around, after, st.booleans(), st.sampled_from([None, 2]))
def test_the_shortcut_agrees_with_the_reader(
    obj: dict, before: str, tail: str, ascii_only: bool, indent: int | None
) -> None:
    text = before + json.dumps(obj, ensure_ascii=ascii_only, indent=indent) + tail
    assert lenient_json.find_object(text) == lenient_json._find_object(text)


def test_the_shortcut_is_taken_for_a_plain_reply() -> None:
    text = '```json\n{"reasoning": "6 * 7 = 42.", "Answer": 42, "confidence": 5}\n```'
    assert lenient_json._strict_object(text, text.index("{")) is not None
    reply = parse_reply(text)
    assert (reply.answer, reply.confidence, reply.reasoning) == ("42", 5, "6 * 7 = 42.")
    assert lenient_json._strict_object('{"a": "x\\\\y"}', 0) is None  # an escape: the reader decides
