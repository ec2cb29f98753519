"""Fingerprints of the shipped simulated examples: per episode its id, final and per-round answers,
token counts and a digest of every call's text. `tests/test_golden_examples.py` compares the code as
it is with `tests/golden/examples.json`, written by `python tests/golden_examples.py --write` before a
refactor of the episode loop, so a refactor that changes any episode shows up as a test failure."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "examples.json"
ITEMS = 4  # items per dataset: ids do not depend on `limit`, so a short prefix is the same episodes
# (example, overrides): the sweeps as shipped, and the studies' base sweeps under their method defaults
EXAMPLES: list[tuple[str, list[str]]] = [
    ("simulated.yaml", []),
    ("pear_simulated.yaml", []),
    ("study_pear_simulated.yaml", []),
    ("study_random_simulated.yaml", []),
]


def _config(name: str) -> Any:
    from sweep.config.sweep import load_config
    from sweep.study.config import load_study

    path = ROOT / "examples" / name
    if name.startswith("study_"):
        setup = load_study(str(path), [], [], "/tmp/unused-golden-out")
        raw = setup.base.model_dump(mode="json")
        raw["methods"] = [{"name": setup.cfg.method.name, "args": dict(setup.cfg.method.args)}]
    else:
        raw = load_config(str(path)).model_dump(mode="json")
    for ds in raw["datasets"]:
        ds["limit"] = min(ds.get("limit") or ITEMS, ITEMS)
    from sweep.config.sweep import validate

    return validate(raw)


async def _episodes(cfg: Any) -> list[dict[str, Any]]:
    from actors.registry import build_backend
    from data.grading.graders import grader_for
    from debate.episode import run_episode
    from sweep.engines.pool import build_agents
    from sweep.run.plan import build_plan

    plan = build_plan(cfg)
    used = sorted({m for t in plan.tasks for m in t.group.seats})
    backends = {
        m: build_backend(cfg.models[m].engine, cfg.models[m].model or m, dict(cfg.models[m].args))
        for m in used
    }
    agents = build_agents({m: cfg.models[m] for m in used}, backends, None)
    rows = []
    for t in plan.tasks:
        g = t.group
        res = await run_episode(
            g.method,
            [agents[m] for m in g.seats],
            t.sample,
            grader_for(t.sample),
            g.seed,
            g.rounds,
            g.dataset.name,
        )
        digest = hashlib.sha256("\x00".join(x.text for x in res.turns).encode()).hexdigest()[:16]
        rows.append(
            {
                "id": t.episode_id,
                "final": res.final_answer,
                "rounds": res.round_answers,
                "prompt_tokens": res.prompt_tokens,
                "completion_tokens": res.completion_tokens,
                "calls": res.calls,
                "texts": digest,
            }
        )
    return rows


def fingerprints() -> dict[str, list[dict[str, Any]]]:
    return {name: asyncio.run(_episodes(_config(name))) for name, _ in EXAMPLES}


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--write", action="store_true")
    a = p.parse_args()
    got = fingerprints()
    if a.write:
        GOLDEN.write_text(json.dumps(got, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print({k: len(v) for k, v in got.items()}, file=sys.stderr)
