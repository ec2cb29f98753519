"""Where a debate's price-weighted cost goes: one method on a sweep config's team, split by seat,
round and prompt / completion tokens (the engine's counts, the config's prices). It says how much a
router that hides responses can save at most: a prompt's fixed part (instructions, the question)
is paid whatever it shows, and round 0 and every output are paid by every method that keeps its calls.

    .venv/bin/python bench/cost_split.py examples/cpp_calibrated.yaml --reasoning-chars 0 600
    .venv/bin/python bench/cost_split.py examples/cpp_calibrated.yaml --method '{"name": "random_prune", "args": {"p": 0.5}}'
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from data.benchmarks.registry import load_benchmark  # noqa: E402
from data.grading.graders import grader_for  # noqa: E402
from debate.episode import run_episode  # noqa: E402
from debate.methods import build_method  # noqa: E402
from sweep.config.sweep import load_config  # noqa: E402
from sweep.engines.pool import local_agents  # noqa: E402


def split(config: str, method: dict, items: int, seed: int) -> tuple[float, float, Counter, list[str]]:
    """(accuracy, cost a task, cost by (seat, round, "in" | "out") as a share of the total, the seats'
    models)."""
    cfg = load_config(config)
    agents = local_agents(cfg)
    team = [agents[m] for m in cfg.team()]
    ds = cfg.datasets[0]
    samples = load_benchmark(ds.name, ds.split, limit=items, seed=ds.seed)
    built = build_method(method["name"], method.get("args") or {})
    parts: Counter = Counter()
    right = 0

    async def run() -> None:
        nonlocal right
        for s in samples:
            res = await run_episode(built, team, s, grader_for(s), seed, cfg.rounds, ds.name)
            right += res.correct
            for t in res.turns:
                a = team[t.agent]
                parts[(t.agent, t.round, "in")] += a.price_in * t.prompt_tokens / 1e6
                parts[(t.agent, t.round, "out")] += a.price_out * t.completion_tokens / 1e6

    asyncio.run(run())
    total = sum(parts.values())
    shares = Counter({k: v / total for k, v in parts.items()})
    return right / len(samples), total / len(samples), shares, [a.model for a in team]


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", help="a sweep config: its team, prices, first dataset and rounds")
    p.add_argument(
        "--method", default='{"name": "fixed", "args": {"topology": "clique"}}', help="JSON {name, args}"
    )
    p.add_argument(
        "--reasoning-chars",
        type=int,
        nargs="+",
        default=[600],
        help="the method's reasoning_chars, one run each",
    )
    p.add_argument("--items", type=int, default=200)
    p.add_argument("--seed", type=int, default=100)
    args = p.parse_args(argv)
    method = json.loads(args.method)
    for chars in args.reasoning_chars:
        m = {**method, "args": {**(method.get("args") or {}), "reasoning_chars": chars}}
        acc, per_task, parts, models = split(args.config, m, args.items, args.seed)
        rounds = sorted({k[1] for k in parts})
        print(
            f"\n{m['name']} {m['args']}: accuracy {acc:.3f}, {1000 * per_task:.3f} m$ a task "
            f"({args.items} items, seed {args.seed})"
        )
        print("| seat | " + " | ".join(f"round {r} prompt | round {r} output" for r in rounds) + " |")
        print("| --- " * (1 + 2 * len(rounds)) + "|")
        for i, model in enumerate(models):
            cells = [f"{parts[(i, r, io)]:.1%}" for r in rounds for io in ("in", "out")]
            print(f"| {i} ({model}) | " + " | ".join(cells) + " |")
        ins = sum(v for k, v in parts.items() if k[2] == "in")
        print(f"prompts {ins:.1%}, outputs {1 - ins:.1%}")


if __name__ == "__main__":
    main()
