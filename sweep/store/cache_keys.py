"""The call cache's keys: the hash of the canonical JSON of what decides a completion."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from actors.base import ChatRequest
from debate.spec import canonical_json, hash_text
from debate.spec import part_json as _part

_str = json.encoder.encode_basestring_ascii  # what the canonical encoder does with a str


def request_key(model_identity: Mapping[str, Any], request: ChatRequest) -> str:
    """What decides a completion. `hints` are left out on purpose: real engines never see them,
    and the simulated engine's hints are a function of the messages it is sent."""
    return KeyMaker(model_identity)(request)


class KeyMaker:
    """`request_key` for one model: the key is the hash of the canonical JSON of {"messages",
    "model", "sampling", "schema"}; the model's part is canonicalised once, not once per call."""

    def __init__(self, model_identity: Mapping[str, Any]) -> None:
        self._model = f',"model":{canonical_json(dict(model_identity))},"sampling":'

    def __call__(self, request: ChatRequest) -> str:
        # The canonical JSON written out directly (the same bytes: keys in sorted order), without a
        # list of pairs and a dict per call; every str through the encoder's own C function.
        messages = ",".join(f"[{_str(m.role)},{_str(m.content)}]" for m in request.messages)
        sampling = (
            f'{{"max_tokens":{_part(request.max_tokens)},"seed":{_part(request.seed)},'
            f'"temperature":{_part(request.temperature)},"top_p":{_part(request.top_p)}}}'
        )
        schema = "null" if request.json_schema is None else canonical_json(request.json_schema)
        return hash_text(f'{{"messages":[{messages}]{self._model}{sampling},"schema":{schema}}}', 32)
