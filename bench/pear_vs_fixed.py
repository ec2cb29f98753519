"""PEAR against its three ablations, random routing at the same in-degree k, and the fixed clique and
ring, on the simulated agent population: accuracy (mean ± std over seeds), tokens and calls per task,
and the debate diagnostics. In-process (asyncio, no Ray, no MLflow, nothing written), every method
under the `critique_revise` protocol as in PEAR's comparisons, with paired McNemar tests (every method
shares round 0 and the items). Simulated agents: not a claim about LLMs.

    .venv/bin/python bench/pear_vs_fixed.py                 # 5 seeds x 200 arith items, 3 rounds
    .venv/bin/python bench/pear_vs_fixed.py --seeds 10 --items 500 --rounds 5

`examples/pear_simulated.yaml` runs the same grid through `sweep run`.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from actors.registry import build_backend  # noqa: E402
from data.benchmarks.registry import load_benchmark  # noqa: E402
from data.grading.graders import grader_for  # noqa: E402
from data.types import Sample  # noqa: E402
from debate.diagnostics import diagnose_episode  # noqa: E402
from debate.episode import Agent, run_episode  # noqa: E402
from debate.methods import Method, build_method  # noqa: E402

# The team of examples/pear_simulated.yaml: mixed skill, calibrated confidence, one model per seat.
TEAM = {
    "sim-a": {"skill": 0.80, "calibration": 0.85},
    "sim-b": {"skill": 0.65, "calibration": 0.85},
    "sim-c": {"skill": 0.55, "calibration": 0.85},
    "sim-d": {"skill": 0.45, "calibration": 0.85},
    "sim-e": {"skill": 0.35, "calibration": 0.85},
}
CR = {"protocol": "critique_revise"}
METHODS: list[tuple[str, str, dict[str, Any]]] = [
    ("PEAR", "pear", {}),
    ("PEAR w/o T", "pear", {"use_t": False}),
    ("PEAR w/o I", "pear", {"use_i": False}),
    ("PEAR w/o L", "pear", {"use_l": False}),
    # Controls beyond the list: the same candidates picked uniformly (pear_uniform), and the
    # default scores with argmax selection (at temperature 0.7 the softmax is nearly uniform).
    ("PEAR uniform (all α = 0)", "pear", {"alpha_t": 0.0, "alpha_i": 0.0, "alpha_l": 0.0}),
    ("PEAR temperature 0", "pear", {"selection_temperature": 0.0}),
    # rho from the revisions' ACCEPT verdicts (the paper's text) instead of answer adoption (its code)
    ("PEAR influence = accept", "pear", {"influence": "accept"}),
    ("random k=2", "random", {"k": 2, **CR}),
    ("fixed clique", "fixed", {"topology": "clique", **CR}),
    ("fixed ring", "fixed", {"topology": "ring", **CR}),
]
DIAGNOSTICS = ("w2r", "r2w", "acceptance", "cross_ans", "src_conf", "influence_entropy")


@dataclass
class Tally:
    """One method under one seed."""

    correct: int = 0
    correct0: int = 0
    tokens: int = 0
    calls: int = 0
    episodes: int = 0

    def __post_init__(self) -> None:
        self.diag: dict[str, list[float]] = {k: [] for k in DIAGNOSTICS}
        self.by_item: dict[str, bool] = {}  # for paired comparisons


async def run_seed(
    method: Method, team: Sequence[Agent], items: Sequence[Sample], seed: int, rounds: int
) -> Tally:
    tally = Tally()

    async def one(sample: Sample) -> None:
        grader = grader_for(sample)
        res = await run_episode(method, team, sample, grader, seed, rounds, "arith")
        diag = diagnose_episode(res)
        tally.correct += res.correct
        tally.by_item[sample.id] = res.correct
        tally.correct0 += res.round_correct[0]
        tally.tokens += res.prompt_tokens + res.completion_tokens
        tally.calls += res.calls
        tally.episodes += 1
        for key in DIAGNOSTICS:
            if (value := diag.summary[key]) is not None:
                tally.diag[key].append(value)

    await asyncio.gather(*(one(s) for s in items))
    return tally


def _mean_std(values: Sequence[float]) -> str:
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.3f} ± {std:.3f}"


def table(results: dict[str, list[Tally]]) -> str:
    head = "| method | accuracy (mean ± std over seeds) | round-0 acc | tokens/task | calls/task | "
    head += " | ".join(DIAGNOSTICS) + " |"
    rows = [head, "|" + " --- |" * (5 + len(DIAGNOSTICS))]
    for label, tallies in results.items():
        n = sum(t.episodes for t in tallies)
        diag = [
            statistics.mean(v) if (v := [x for t in tallies for x in t.diag[k]]) else float("nan")
            for k in DIAGNOSTICS
        ]
        rows.append(
            f"| {label} | {_mean_std([t.correct / t.episodes for t in tallies])} | "
            f"{sum(t.correct0 for t in tallies) / n:.3f} | {sum(t.tokens for t in tallies) / n:.0f} | "
            f"{sum(t.calls for t in tallies) / n:.1f} | " + " | ".join(f"{d:.3f}" for d in diag) + " |"
        )
    return "\n".join(rows)


def mcnemar(a: list[Tally], b: list[Tally]) -> str:
    """Paired on (seed, item): discordant counts and the exact two-sided McNemar p-value."""
    pairs = [(x.by_item[i], y.by_item[i]) for x, y in zip(a, b, strict=True) for i in x.by_item]
    wins, losses = sum(p and not q for p, q in pairs), sum(q and not p for p, q in pairs)
    n, k = wins + losses, min(wins, losses)
    p_value = min(1.0, 2 * sum(math.comb(n, j) for j in range(k + 1)) / 2**n) if n else 1.0
    return f"{wins} wins / {losses} losses over {len(pairs)} paired episodes, exact McNemar p = {p_value:.3g}"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    items = load_benchmark("arith", "test", limit=args.items)
    team = [Agent(name, build_backend("simulated", name, spec)) for name, spec in TEAM.items()]
    results: dict[str, list[Tally]] = {}
    start = time.perf_counter()
    for label, name, margs in METHODS:
        method = build_method(name, margs)
        results[label] = [
            asyncio.run(run_seed(method, team, items, s, args.rounds)) for s in range(args.seeds)
        ]
    skills = ", ".join(str(spec["skill"]) for spec in TEAM.values())
    print(
        f"simulated population (skills {skills}; calibration 0.85), "
        f"arith test[:{args.items}], {args.rounds} rounds, seeds 0..{args.seeds - 1}, k = 2, "
        f"protocol critique_revise; {time.perf_counter() - start:.0f} s\n"
    )
    print(table(results))
    print()
    pairs = [("PEAR", "random k=2"), ("PEAR", "PEAR uniform (all α = 0)"), ("PEAR", "fixed clique"),
             ("PEAR uniform (all α = 0)", "random k=2"), ("PEAR temperature 0", "random k=2"),
             ("PEAR temperature 0", "PEAR uniform (all α = 0)")]  # fmt: skip
    for a, b in pairs:
        print(f"- {a} vs {b}: {mcnemar(results[a], results[b])}")


if __name__ == "__main__":
    main()
