"""The prompts' parts before the prefix-reuse reordering: every template of both families, rendered
for a few inputs and cut into sentences (`parts`). `tests/test_prompt_parts.py` checks that the
templates as they are give the same multiset of parts — the same instructions word for word, only in
another order — against `tests/golden/prompt_parts.json`, written by `python tests/golden_prompts.py
--write` from the code before the reordering."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
GOLDEN = ROOT / "tests" / "golden" / "prompt_parts.json"


def parts(text: str) -> list[str]:
    """Sentences and lines of `text`, stripped, without empty ones (a multiset: order is what moves)."""
    return sorted(
        p.strip() for line in text.split("\n") for p in re.split(r"(?<=[.:!?])\s+", line) if p.strip()
    )


def cases() -> dict[str, Any]:
    """name -> the messages of one rendering, as (role, text)."""
    from data.types import Sample
    from debate import prompts
    from debate.state import View

    num = Sample(id="n", question="What is 6 * 7?\nShow it.", gold="42", kind="numeric")
    mc = Sample(id="c", question="Pick the prime.", gold="B", kind="choice", choices=("4", "5", "6"))
    own, peer, other = (
        View("41", 2, "I added.\nTwice."),
        View("42", 5, "6 * 7 = 42."),
        View(None, 1, "unsure"),
    )
    out: dict[str, Any] = {}
    for name, sample in (("num", num), ("mc", mc)):
        for style in prompts.STYLES:
            out[f"initial/{style}/{name}"] = prompts.initial_messages(sample, 2, style)
            out[f"update/{style}/{name}"] = prompts.update_messages(
                sample, own, [(0, peer), (3, other)], 1, style
            )
            out[f"update-alone/{style}/{name}"] = prompts.update_messages(sample, own, [], 1, style)
        out[f"update-weights/rumad/{name}"] = prompts.update_messages(
            sample, own, [(0, peer)], 1, "rumad", {0: 0.7}
        )
        out[f"critique/{name}"] = prompts.critique_messages(sample, 1, own, [(0, peer), (2, other)])
        out[f"revise/{name}"] = prompts.revise_messages(
            sample, 2, own, [(0, peer, "Step 2 is wrong."), (1, other, "")]
        )
        out[f"revise-alone/{name}"] = prompts.revise_messages(sample, 2, own, [])
    return {k: [[m.role, m.content] for m in v] for k, v in out.items()}


def fingerprint() -> dict[str, dict[str, Any]]:
    """name -> {"roles": the message roles in order, "parts": every message's parts, as counts}."""
    result = {}
    for name, messages in cases().items():
        counts = Counter(p for _, text in messages for p in parts(text))
        result[name] = {"roles": [r for r, _ in messages], "parts": dict(sorted(counts.items()))}
    return result


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--write", action="store_true")
    if p.parse_args().write:
        GOLDEN.write_text(json.dumps(fingerprint(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(len(fingerprint()), "renderings", file=sys.stderr)
