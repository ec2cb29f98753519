"""Reading the two replies of the `critique_revise` protocol: a source's critiques of its targets
(PEAR template E.5) and a target's ACCEPT / REJECT verdict on each critique it received (E.4).

Agents are named to the model 1-based ("Agent 3" is agent index 2); every function here takes and
returns 0-based indices. Model output is hostile input: the JSON is read by `debate.lenient_json` (depth
and work capped), every regex runs in linear time on a bounded window, and nothing is evaluated.
Neither reader raises. The JSON schemas of both replies (for engines with structured output) are
here too, next to the readers that accept them.

Reviews (`read_reviews`), first match wins:
1. an object with `reviews` (or `critiques`): a list of `{"target": id, "step_loc", "correction",
   "assessment"}` objects (matched by id, else by position when there is one per target), a list of
   strings (one per target, in the order the targets were shown — the simulated agents' shape), or an
   object keyed by target id;
2. otherwise the whole reply, cut to `MAX_CRITIQUE_CHARS`, is every target's critique, and the reply
   counts as unparsed (the protocol still goes on: prose is a critique too).

Verdicts (`read_verdicts`), first match wins per critic:
1. `critique_response` (or `critique_responses`, `verdicts`, `decisions`) as an object keyed by agent id
   (`"3"`, `"Agent 3"`) whose values are `{"decision": ...}` objects or bare strings, or as a list of
   `{"source"|"agent"|"critic"|"from": id, "decision": ...}` objects;
2. prose: "ACCEPT ... Agent 3" / "Agent 3 ... REJECT" within one clause;
3. one critic and no other agent named: a lone ACCEPT or REJECT word in the reply is its verdict.
A critic with no readable verdict is absent from the result (unknown, not rejected).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from debate.lenient_json import Num, Str, Value, find_object, unescape
from debate.prompts import REPLY_PROPERTIES

MAX_CRITIQUE_CHARS = 1200  # one critique as passed on to its target
_MAX_SCAN = 20000  # characters of a reply the prose fallbacks look at
_REVIEW_KEYS = ("reviews", "critiques", "review", "critique")
_VERDICT_KEYS = ("critique_response", "critique_responses", "verdicts", "decisions", "verdict")
_ID_KEYS = ("target", "source", "agent", "critic", "from", "id", "agent_id")
_DECISION_KEYS = ("decision", "verdict", "response", "status")
_DIGITS = re.compile(r"\d{1,4}")
_DECISION = re.compile(r"(?i)\b(accept|reject)(?:s|ed|ing)?\b")
_NAMED = re.compile(r"(?i)\bagent\s*#?\s*(\d{1,4})")


def _text(value: Value) -> str:
    if isinstance(value, Str):
        return (unescape(value.body, latex=False) if value.quoted else value.body).strip()
    if isinstance(value, Num):
        return value.text
    return ""


def _agent_id(value: Value | str, valid: Sequence[int]) -> int | None:
    """The 0-based index named by a 1-based id ("3", 3, "Agent 3"), if it is one of `valid`."""
    raw = value if isinstance(value, str) else _text(value)
    m = _DIGITS.search(raw[:40])
    if m is None:
        return None
    index = int(m.group()) - 1
    return index if index in valid else None


def _decision(value: Value) -> str | None:
    """ACCEPT / REJECT from a verdict value (an object with a decision field, or a string)."""
    if isinstance(value, dict):
        value = next((value[k] for k in _DECISION_KEYS if k in value), None)
    m = _DECISION.search(_text(value)[:80])
    return m.group(1).upper() if m else None


def _review_text(value: Value) -> str:
    """One review as prose: its assessment, first incorrect step and correction."""
    if not isinstance(value, dict):
        return _text(value)
    parts = []
    for key, label in (
        ("assessment", "Assessment"),
        ("step_loc", "First incorrect step"),
        ("correction", "Correction"),
    ):
        body = _text(value.get(key))
        if body:
            parts.append(f"{label}: {body}")
    others = [
        _text(v) for k, v in value.items() if k not in ("assessment", "step_loc", "correction", *_ID_KEYS)
    ]
    parts += [o for o in others if o]
    return ". ".join(p.rstrip(".") for p in parts)


def _cut(text: str) -> str:
    return text.strip()[:MAX_CRITIQUE_CHARS]


def read_reviews(text: str, targets: Sequence[int]) -> tuple[dict[int, str], bool]:
    """(critique per target, whether the reply had the structured shape). Every target gets a text."""
    found = find_object(text[:_MAX_SCAN])
    reviews: Value = None
    if found is not None:
        reviews = next((found[0][k] for k in _REVIEW_KEYS if k in found[0]), None)
    out: dict[int, str] = {}
    if isinstance(reviews, dict):
        for key, value in reviews.items():
            t = _agent_id(key, targets)
            if t is not None and t not in out:
                out[t] = _cut(_review_text(value))
    elif isinstance(reviews, list):
        unmatched = []
        for value in reviews:
            ids = [value[k] for k in _ID_KEYS if isinstance(value, dict) and k in value]
            t = _agent_id(ids[0], targets) if ids else None
            if t is not None and t not in out:
                out[t] = _cut(_review_text(value))
            else:
                unmatched.append(value)
        if not out and len(unmatched) == len(targets):  # no usable ids: one per target, in order
            out = {t: _cut(_review_text(v)) for t, v in zip(targets, unmatched, strict=True)}
    out = {t: body for t, body in out.items() if body}
    if out:
        return {t: out.get(t, "No critique was written for your solution.") for t in targets}, True
    return {t: _cut(text) or "(empty critique)" for t in targets}, False


def read_verdicts(text: str, sources: Sequence[int]) -> dict[int, str]:
    """ACCEPT / REJECT per critic (0-based) that the reply gives a readable verdict for."""
    text = text[:_MAX_SCAN]
    verdicts: dict[int, str] = {}
    found = find_object(text)
    block: Value = None
    if found is not None:
        block = next((found[0][k] for k in _VERDICT_KEYS if k in found[0]), None)
    if isinstance(block, dict):
        for key, value in block.items():
            s = _agent_id(key, sources)
            if s is not None and (d := _decision(value)) is not None:
                verdicts.setdefault(s, d)
    elif isinstance(block, list):
        for value in block:
            ids = [value[k] for k in _ID_KEYS if isinstance(value, dict) and k in value]
            s = _agent_id(ids[0], sources) if ids else None
            if s is not None and (d := _decision(value)) is not None:
                verdicts.setdefault(s, d)
    if _DECISION.search(text) is None:  # no decision word anywhere: no prose verdict either (cheap)
        return verdicts
    for s in sources:
        if s not in verdicts and (d := _prose_verdict(text, s + 1)) is not None:
            verdicts[s] = d
    if not verdicts and len(sources) == 1:
        named = {int(m.group(1)) for m in _NAMED.finditer(text)}
        words = {m.group(1).upper() for m in _DECISION.finditer(text)}
        if named <= {sources[0] + 1} and len(words) == 1:
            verdicts[sources[0]] = words.pop()
    return verdicts


def _prose_verdict(text: str, agent_id: int) -> str | None:
    """ "I accept Agent 3's correction" / "Agent 3: REJECT" — decision and id in one clause."""
    name = rf"agent\s*#?\s*{agent_id}(?!\d)"
    gap = r"(?:(?!accept|reject|agent)[^.;\n]){0,60}?"  # no other decision or agent in between
    after = re.compile(rf"(?i)\b(accept|reject)(?:s|ed|ing)?\b{gap}\b{name}")
    before = re.compile(rf"(?i)\b{name}\b{gap}\b(accept|reject)(?:s|ed|ing)?\b")
    hits = [(m.start(), m.group(1).upper()) for rx in (after, before) for m in rx.finditer(text)]
    return min(hits)[1] if hits else None


# -- structured output per phase -------------------------------------------------------------------
def _verdict_schema() -> dict[str, Any]:
    reason = {"type": "string", "maxLength": 300}
    return {
        "type": "object",
        "properties": {"decision": {"enum": ["ACCEPT", "REJECT"]}, "reason": reason},
        "required": ["decision", "reason"],
    }


def critique_schema(targets: Sequence[int]) -> dict[str, Any]:
    """E.5's shape, one review per target (ids 1-based, exactly the targets shown)."""
    review = {
        "type": "object",
        "properties": {
            "target": {"enum": [t + 1 for t in targets]},
            "step_loc": {"type": "string", "maxLength": 400},
            "correction": {"type": "string", "maxLength": 600},
            "assessment": {"enum": ["Strong", "Acceptable", "Flawed"]},
        },
        "required": ["target", "step_loc", "correction", "assessment"],
    }
    reviews = {"type": "array", "items": review, "minItems": len(targets), "maxItems": len(targets)}
    return {"type": "object", "properties": {"reviews": reviews}, "required": ["reviews"]}


def revise_schema(sources: Sequence[int]) -> dict[str, Any]:
    """REPLY_SCHEMA plus E.4's `critique_response`, one verdict per critic (keys are 1-based ids)."""
    ids = [str(s + 1) for s in sources]
    response = {"type": "object", "properties": {i: _verdict_schema() for i in ids}, "required": ids}
    props = {**REPLY_PROPERTIES, "critique_response": response}
    return {"type": "object", "properties": props, "required": list(props)}


_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def answer_property(kind: str, n_choices: int = 0) -> dict[str, Any]:
    """The reply's `answer` under structured output, typed by the item's answer kind: a JSON number
    (numeric), one of the option letters (choice), a bounded string (math: LaTeX has no shape to
    check)."""
    if kind == "choice" and 0 < n_choices <= len(_LETTERS):
        return {"enum": list(_LETTERS[:n_choices])}
    if kind == "numeric":
        # A JSON number, not a string with a pattern: llama.cpp's grammar converter (0.3.36) refuses
        # every pattern we tried, and a number cannot be a list or a copy of the prompt's placeholder.
        return {"type": "number"}
    return {"type": "string", "maxLength": 200}


def _typed(schema: dict[str, Any], answer: dict[str, Any] | None, base: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` with the item's answer type, and the seat's bound on `reasoning` (from `base`)."""
    props = dict(schema.get("properties", {}))
    if "reasoning" in props and "reasoning" in base.get("properties", {}):
        props["reasoning"] = base["properties"]["reasoning"]
    if answer is not None and "answer" in props:
        props["answer"] = answer
    return {**schema, "properties": props}


def structured_schema(
    phase: str,
    ids: Sequence[int],
    base: Mapping[str, Any] | None,
    style: str = "pear",
    answer: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The JSON schema for one call when the seat uses structured output (`base`, its reply schema;
    None when it does not): critiques and revisions have their own shapes, and RUMAD's free-text
    prompts get none. `answer` (`answer_property`) types the reply's answer for the item."""
    if base is None or style != "pear":
        return None
    if phase == "critique":
        return critique_schema(ids)
    if phase == "revise":
        return _typed(revise_schema(ids), answer, base)
    return _typed(dict(base), answer, base)
