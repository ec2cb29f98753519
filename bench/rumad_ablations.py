"""RUMAD's ablations on the simulated population of bench/rumad_vs_clique.py: the controller trained
without agent activation (`activation: false`: every agent speaks every round, weights and visibility
only — Table 3's "w/o agent activation"), with the Beta head (Table 3's "β distribution"), and without
each reward term (its weights set to 0), each trained from scratch per seed like the full controller
and evaluated (the best-evaluated policy of each training, as kept by its periodic evaluation on
rumad:dev) on the same rumad:test items. In-process; trainings resume from their checkpoints.
Simulated agents: not a claim about LLMs.

    .venv/bin/python bench/rumad_ablations.py --seeds 2 --updates 100 --jobs 2
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared pieces of rumad_vs_clique.py

from rumad_vs_clique import ROOT, Tally, evaluate, mcnemar, setup_and_agents, train_seed  # noqa: E402

from data.benchmarks.registry import load_benchmark  # noqa: E402
from debate.methods import build_method  # noqa: E402

VARIANTS: list[tuple[str, list[str]]] = [
    ("RUMAD (full)", []),
    ("w/o agent activation", ["method.args.activation=false"]),
    ("β distribution (Beta head)", ["policy.head=beta"]),
    ("w/o accuracy reward", ["reward.alpha_accuracy=0", "reward.beta_accuracy=0"]),
    ("w/o consensus reward", ["reward.alpha_consensus=0", "reward.beta_consensus=0"]),
    ("w/o progress reward", ["reward.alpha_progress=0"]),
    ("w/o efficiency reward", ["reward.alpha_efficiency=0", "reward.beta_efficiency=0"]),
    ("w/o improvement reward", ["reward.alpha_improvement=0", "reward.beta_improvement=0"]),
    ("w/o sparsity reward", ["reward.alpha_sparsity=0"]),
]


def slug(label: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in label.lower()).strip("-")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--updates", type=int, default=100)
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--out", default=str(ROOT / "runs" / "bench_rumad_ablations"))
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    items = load_benchmark("mmlu", "rumad:test", limit=args.items, seed=0)
    jobs = [
        (s, args.updates, f"{args.out}/{slug(label)}", sets)
        for label, sets in VARIANTS
        for s in range(args.seeds)
    ]
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        outcomes = list(pool.map(train_seed, *zip(*jobs, strict=True)))
    results: dict[str, list[Tally]] = {}
    for (seed, updates, out, sets), outcome in zip(jobs, outcomes, strict=True):
        setup, agents = setup_and_agents(seed, updates, out, sets)
        label = next(lbl for lbl, s in VARIANTS if s == sets)
        method = build_method(
            "rumad", {**setup.cfg.method.args, "checkpoint": str(outcome.best or outcome.policy)}
        )
        team = [agents[m] for m in setup.base.team()]
        results.setdefault(label, []).append(asyncio.run(evaluate(method, team, items, seed)))
    print(
        f"ablations of RUMAD (B = 12) on the simulated population; {args.updates} PPO updates x 64 episodes per "
        f"training, seeds 0..{args.seeds - 1}, mmlu rumad:test[:{args.items}]; {time.perf_counter() - start:.0f} s\n"
    )
    print("| variant | accuracy (mean over seeds) | tokens/task | activations/task | vs full (paired) |")
    print("| --- | --- | --- | --- | --- |")
    full = results["RUMAD (full)"]
    for label, tallies in results.items():
        acc = statistics.mean(t.accuracy for t in tallies)
        tokens = statistics.mean(t.tokens for t in tallies) / args.items
        acts = statistics.mean(t.activations for t in tallies) / args.items
        versus = "—" if tallies is full else mcnemar(tallies, full).replace(" paired episodes", "")
        print(f"| {label} | {acc:.3f} | {tokens:.0f} | {acts:.1f} | {versus} |")


if __name__ == "__main__":
    main()
