"""Fingerprints of the simulated engine's own population ("v1", configured by the engine's arguments)
over small sweeps that reach every part of it: mixed skill and calibration, prices, verbosity and
malformed replies, an adversarial seat, the `update` and `critique_revise` protocols, RUMAD's prompts,
CPP's output caps, choice, math and arithmetic items. Per episode: its id, per-round votes, final
answer, cost and, per call, (agent, round, phase, answer, confidence, prompt tokens, completion
tokens, parsed, sha1 of the text). The engine stores no finish reason in a turn; a cut reply differs
in its text, which the sha1 covers.

`tests/test_population_v1.py` compares the code as it is with `tests/corpus/v1_episodes.jsonl`,
written from the code before the calibrated populations (issue 31) by

    python tests/v1_fixture.py --write tests/corpus/v1_episodes.jsonl

so a change to the simulated engine or the episode loop that changes any v1 episode is a failure."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

CORPUS = Path(__file__).resolve().parent / "corpus" / "v1_episodes.jsonl"
ITEMS = 4  # items per dataset; ids do not depend on `limit`
SEEDS = [0, 1]
SYNTHETIC = frozenset({"arith"})  # datasets generated in-process: no shared benchmark copy needed

CHECKPOINT = "<checkpoint>"  # replaced by the path of `write_checkpoint`'s file
# Per seat of the "cpp" team: completion tokens on "validation" items (truncation caps their quantiles).
LENGTHS = ((90, 120, 150, 200), (150, 220, 260, 330), (240, 300, 380, 460))
_ARITH = {"name": "arith", "split": "test", "limit": ITEMS}
_MATH = {"name": "math500", "split": "test", "limit": ITEMS}
_GPQA = {"name": "gpqa_diamond", "split": "cpp:test", "limit": ITEMS}
_MMLU = {"name": "mmlu", "split": "rumad:test", "limit": ITEMS}


def _sim(**args: Any) -> dict[str, Any]:
    return {"engine": "simulated", "args": args}


# name -> a sweep config without output_dir (simulated engine, in-process).
CONFIGS: dict[str, dict[str, Any]] = {
    # A mixed-skill team under `update`: every topology family and both single-agent baselines.
    "mixed": {
        "models": {
            "strong": {**_sim(skill=0.75, calibration=0.85, verbosity=4), "price_in": 2.0, "price_out": 8.0},
            "mid": {
                **_sim(skill=0.6, calibration=0.8, malformed_rate=0.15),
                "price_in": 0.4,
                "price_out": 1.6,
            },
            "weak": {
                **_sim(skill=0.45, calibration=0.7, stubbornness=0.3),
                "price_in": 0.1,
                "price_out": 0.4,
            },
        },
        "agents": ["strong", "mid", {"model": "weak", "count": 2}],
        "datasets": [_ARITH, _MATH, _GPQA],
        "methods": [
            "cot",
            {"name": "cot_sc", "args": {"m": 3}},
            {"name": "fixed", "args": {"topology": "clique"}},
            {"name": "fixed", "args": {"topology": "ring"}},
            {"name": "random", "args": {"k": 2}},
        ],
        "rounds": 2,
    },
    # CPP's heterogeneous priced team with an adversarial seat: the untrained policy, output caps
    # (a checkpoint of fixed weights and output lengths), random pruning, one answer per model, the clique.
    "cpp": {
        "models": {
            "sim-strong": {
                **_sim(skill=0.75, calibration=0.85, verbosity=6),
                "price_in": 2.0,
                "price_out": 8.0,
            },
            "sim-mid": {**_sim(skill=0.6, calibration=0.8, verbosity=10), "price_in": 0.4, "price_out": 1.6},
            "sim-cheap": {
                **_sim(skill=0.45, calibration=0.75, verbosity=15, malformed_rate=0.1),
                "price_in": 0.1,
                "price_out": 0.4,
            },
        },
        "agents": [
            {"model": "sim-strong"},
            {"model": "sim-mid", "adversarial": True},
            {"model": "sim-cheap"},
        ],
        "datasets": [_ARITH, _GPQA],
        "methods": [
            {"name": "fixed", "args": {"topology": "clique"}},
            {"name": "cpp", "args": {"encoder": "hashed"}},  # the untrained policy
            {"name": "cpp", "args": {"checkpoint": CHECKPOINT, "truncate": 0.75}},
            {"name": "random_prune", "args": {"p": 0.5}},
            "vote",
        ],
        "rounds": 2,
    },
    # PEAR under critique_revise, and the clique under the same protocol.
    "pear": {
        "models": {
            "sim-a": _sim(skill=0.8, calibration=0.85),
            "sim-b": _sim(skill=0.55, calibration=0.85, malformed_rate=0.1),
            "sim-c": _sim(skill=0.35, calibration=0.6, verbosity=2),
        },
        "agents": ["sim-a", "sim-b", "sim-c"],
        "datasets": [_ARITH, _MATH],
        "methods": ["pear", {"name": "fixed", "args": {"topology": "clique", "protocol": "critique_revise"}}],
        "rounds": 2,
    },
    # RUMAD's prompts (weights in the prompts), the untrained controller and a sparse baseline.
    "rumad": {
        "models": {f"sim-{i}": _sim(skill=s, calibration=0.85) for i, s in enumerate([0.8, 0.6, 0.5, 0.3])},
        "agents": ["sim-0", "sim-1", "sim-2", "sim-3"],
        "datasets": [_MMLU, _ARITH],
        "methods": [
            {"name": "rumad", "args": {"budget": 6, "prompt_style": "rumad"}},
            {"name": "smad", "args": {"structure": "star", "prompt_style": "rumad"}},
        ],
        "rounds": 3,
    },
}


def write_checkpoint(path: Path) -> None:
    """A CPP policy for the "cpp" team with weights from a fixed numpy stream (not torch's init, so the
    file, and the episode ids that hash it, stay the same across torch versions)."""
    from debate.policies import checkpoint
    from debate.policies.fuseglu import build, weights_of
    from debate.policies.pruning import PruningArch

    arch = PruningArch(
        3, hidden=16, seat_models=("sim-strong", "sim-mid", "sim-cheap"), output_lengths=LENGTHS
    )
    rng = np.random.default_rng(31)
    shapes = {k: v.shape for k, v in sorted(weights_of(build(arch, 0)).items())}
    weights = {k: (0.1 * rng.standard_normal(shape)).astype(np.float32) for k, shape in shapes.items()}
    checkpoint.save_checkpoint(path, arch.to_dict(), weights, {"fixture": "v1"})


def config(name: str, datasets: set[str] | None = None, checkpoint: Path | None = None) -> Any:
    """`CONFIGS[name]` validated, keeping only the datasets named in `datasets` (None: all);
    `checkpoint` replaces `CHECKPOINT` in method arguments."""
    from sweep.config.sweep import validate

    text = json.dumps(CONFIGS[name])
    raw = json.loads(text.replace(json.dumps(CHECKPOINT), json.dumps(str(checkpoint))))
    raw["datasets"] = [d for d in raw["datasets"] if datasets is None or d["name"] in datasets]
    return validate({"name": f"v1-{name}", "seeds": SEEDS, "tracking": {"enabled": False}, **raw})


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _turn(x: Any) -> list[Any]:
    """One call: agent, round, phase, answer, confidence, prompt/completion tokens, parsed, text sha1."""
    tokens = [x.prompt_tokens, x.completion_tokens]
    return [x.agent, x.round, x.phase, x.answer, x.confidence, *tokens, x.parsed, _sha1(x.text)]


async def _records(name: str, cfg: Any, policy: Path) -> list[dict[str, Any]]:
    from sweep.engines.pool import local_agents
    from sweep.run.plan import build_plan
    from sweep.run.scheduler import run_one

    plan = build_plan(cfg)
    used = sorted({m for t in plan.tasks for m in t.group.seats})
    agents = local_agents(cfg, used)
    rows = []
    for t in plan.tasks:
        res, _ = await run_one(t, agents)
        rows.append(
            {
                "config": name,
                "episode_id": t.episode_id,
                "method": t.group.method.label.replace(str(policy), CHECKPOINT),
                "dataset": t.group.dataset.name,
                "item": t.sample.id,
                "seed": t.group.seed,
                "round_answers": res.round_answers,
                "final_answer": res.final_answer,
                "correct": res.correct,
                "cost": round(res.cost, 12),
                "turns": [_turn(x) for x in res.turns],
            }
        )
    return rows


def records(name: str, datasets: set[str] | None = None) -> list[dict[str, Any]]:
    """The fingerprint of every episode of `CONFIGS[name]` (on `datasets` only, when given)."""
    with tempfile.TemporaryDirectory(prefix="v1-fixture-") as tmp:
        policy = Path(tmp) / "policy.npz"
        write_checkpoint(policy)
        return asyncio.run(_records(name, config(name, datasets, policy), policy))


def read_corpus(path: Path = CORPUS) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write", metavar="JSONL", help="write the records here (else print counts only)")
    a = p.parse_args()
    import actors.simulated

    print(f"engine: {actors.simulated.__file__}", file=sys.stderr)
    rows = [r for name in CONFIGS for r in records(name)]
    if a.write:
        text = "".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in rows)
        Path(a.write).write_text(text, encoding="utf-8")
    print(f"{len(rows)} episodes, {sum(len(r['turns']) for r in rows)} turns", file=sys.stderr)


if __name__ == "__main__":
    main()
