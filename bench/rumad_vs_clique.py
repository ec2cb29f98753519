"""RUMAD trained from scratch against the baselines of its Table 2 on the simulated population (6 agents
of mixed skill, 6 rounds, B = 12; the team of examples/rumad_simulated.yaml): per seed, PPO trains a
controller (examples/train_rumad_simulated.yaml with `ppo.seed` = the seed) on MMLU's rumad:dev items,
then every method runs on the same rumad:test items under that seed — the trained controller (its
distribution's mean), full debate (clique), random activation at the same budget, S-MAD (star, ring),
group debate, the untrained controller (`init_seed` = the seed) and self-consistency of the team's
best model (by its round-0 accuracy in the clique's episodes) with m matched to the best-evaluated
policy's tokens per task. Reported: accuracy (mean ± std over
seeds), tokens/task and activations/task, with exact McNemar tests on paired (seed, item) episodes,
and the training curves as a PNG. The trained controller is reported twice: its final policy, and the
policy its training kept as best by the periodic evaluation of its mean on training items
(`checkpoints/best.npz`: model selection on rumad:dev, never on the test items). In-process (asyncio, no Ray, no MLflow); the trainings are the ones
`sweep train` runs (`sweep.train.ppo.train`) and resume from their checkpoints if interrupted.
Simulated agents: not a claim about LLMs.

    .venv/bin/python bench/rumad_vs_clique.py                      # 5 seeds, 150 updates each
    .venv/bin/python bench/rumad_vs_clique.py --seeds 2 --updates 20 --items 100   # a quick look
    .venv/bin/python bench/rumad_vs_clique.py --protocol bench/protocols/NAME.yaml --out runs/NAME
                                                # seeds, items, training, targets: bench/protocols/README.md
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from actors.registry import build_backend  # noqa: E402
from bench import protocol_bench as protocol  # noqa: E402
from bench.protocol import Protocol  # noqa: E402
from bench.protocol_results import exact_mcnemar  # noqa: E402
from data.grading.graders import grader_for  # noqa: E402
from debate.baselines import Consistency, matched_m, strongest  # noqa: E402
from debate.episode import Agent, run_episode  # noqa: E402
from debate.methods import Method, build_method  # noqa: E402
from sweep.engines.pool import build_agents  # noqa: E402
from sweep.train.config import load_train  # noqa: E402
from sweep.train.ppo import train  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "train_rumad_simulated.yaml"
# The README's figures of this bench were measured on population v1: the training config's own base
# is now the calibrated population (examples/rumad_calibrated.yaml), so the bench names v1's.
V1_BASE = "sweep=rumad_simulated.yaml"
R = {"prompt_style": "rumad"}
BASELINES: list[tuple[str, str, dict[str, Any]]] = [
    ("clique (MAD)", "fixed", {"topology": "clique", **R}),
    ("random activation, B = 12", "random_activation", {"budget": 12, "per_round": 2, "k": 5, **R}),
    ("S-MAD star", "smad", {"structure": "star", **R}),
    ("S-MAD ring", "smad", {"structure": "ring", **R}),
    ("GD (groups of 3)", "gd", {"group_size": 3, **R}),
]
TRAINED, BEST, UNTRAINED = (
    "RUMAD trained (final), B = 12",
    "RUMAD trained (best eval), B = 12",
    "RUMAD untrained, B = 12",
)
# the team's best model alone (by its round-0 accuracy in the clique's episodes), as many samples as
# come nearest the best-evaluated policy's tokens per task (`debate.baselines.matched_m`)
MATCHED = "consistency best, m matched to RUMAD (best eval)"


@dataclass
class Tally:
    """One method under one seed."""

    by_item: dict[str, bool] = field(default_factory=dict)
    tokens: int = 0
    activations: int = 0
    seat_tokens: dict[int, int] = field(default_factory=dict)  # round 0's, by seat
    seat_right: dict[str, int] = field(default_factory=dict)  # round 0's right answers, by model

    @property
    def accuracy(self) -> float:
        return sum(self.by_item.values()) / len(self.by_item)


async def evaluate(method: Method, team: Sequence[Agent], items: Sequence[Any], seed: int) -> Tally:
    tally = Tally()

    async def one(sample: Any) -> None:
        res = await run_episode(method, team, sample, grader_for(sample), seed, 6, "mmlu")
        tally.by_item[sample.id] = res.correct
        tally.tokens += res.prompt_tokens + res.completion_tokens
        tally.activations += sum(len(r.active) for r in res.trajectory[1:])
        for t in res.turns:
            if t.round == 0 and res.trajectory:
                tally.seat_tokens[t.agent] = (
                    tally.seat_tokens.get(t.agent, 0) + t.prompt_tokens + t.completion_tokens
                )
                right = int(res.trajectory[0].correct_after[t.agent])
                tally.seat_right[t.model] = tally.seat_right.get(t.model, 0) + right

    await asyncio.gather(*(one(s) for s in items))
    return tally


def matched_consistency(
    clique: Tally, learner: Tally, team: Sequence[Agent], items: int, shared: Mapping[str, Any] | None = None
) -> Method:
    """Self-consistency of the team's best model (by round-0 accuracy in the clique's episodes), with
    m samples whose round-0 tokens come nearest the learner's tokens per task; `shared`: a protocol's
    method_args."""
    best = strongest({m: right / items for m, right in clique.seat_right.items()})
    seat = [clique.seat_tokens.get(i, 0) / items for i in range(len(team))]
    keys = [(a.model, a.adversarial) for a in team]
    m = matched_m(seat, Consistency(pool=best).members(keys), learner.tokens / items)
    return build_method("consistency", {**(shared or {}), "m": m, "pool": best, **R})


def mcnemar(a: list[Tally], b: list[Tally]) -> str:
    """Paired on (seed, item): discordant counts and the exact two-sided McNemar p-value."""
    wins, losses, pairs, p_value = exact_mcnemar(a, b)
    return f"{wins} wins / {losses} losses over {pairs} paired episodes, exact McNemar p = {p_value:.3g}"


def table(results: dict[str, list[Tally]], items: int) -> str:
    clique = statistics.mean(t.tokens for t in results["clique (MAD)"]) / items
    rows = ["| method | accuracy (mean ± std over seeds) | tokens/task | vs clique | activations/task |",
            "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for label, tallies in results.items():
        accs = [t.accuracy for t in tallies]
        std = statistics.stdev(accs) if len(accs) > 1 else 0.0
        tokens = statistics.mean(t.tokens for t in tallies) / items
        acts = statistics.mean(t.activations for t in tallies) / items
        rows.append(
            f"| {label} | {statistics.mean(accs):.3f} ± {std:.3f} | {tokens:.0f} | {tokens / clique - 1:+.1%} | {acts:.1f} |"
        )
    return "\n".join(rows)


def plot(histories: dict[int, list[dict[str, float]]], path: Path) -> None:
    """Top: the sampled rollouts each update (faint) and their 10-update running mean; bottom: the
    policy's mean (what evaluation runs) on the training's fixed evaluation items, every 10 updates."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rows = [
        [("return", "return, sampled rollouts"), ("accuracy", "accuracy, sampled rollouts"), ("tokens_per_task", "tokens/task, sampled")],
        [("eval.return", "return, policy mean (eval)"), ("eval.accuracy", "accuracy, policy mean (eval)"),
         ("eval.activations", "activations/episode, policy mean (eval; B = 12)")],
    ]  # fmt: skip
    fig, axes = plt.subplots(2, 3, figsize=(13, 6))
    for r, row in enumerate(rows):
        for ax, (key, title) in zip(axes[r], row, strict=True):
            for i, (seed, h) in enumerate(sorted(histories.items())):
                pts = [(x["update"], x[key]) for x in h if key in x]
                if not pts:
                    continue
                u, v = np.array(pts).T
                color = f"C{i}"
                if r == 0:
                    ax.plot(u, v, lw=0.5, alpha=0.25, color=color)
                if r == 0 and len(v) >= 10:  # fewer updates: no running mean (a shorter run's plot failed)
                    v = np.convolve(v, np.ones(10) / 10, mode="valid")
                    u = u[9:]
                ax.plot(u, v, lw=1.2, color=color, label=f"seed {seed}", marker="o" if r else None, ms=2.5)
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("PPO update", fontsize=8)
            ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(
        "RUMAD training on the simulated population (6 agents, 6 rounds, B = 12; 64 episodes per update)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def setup_and_agents(
    seed: int, updates: int, out: str, sets: list[str], proto: Protocol | None = None
) -> tuple[Any, dict[str, Agent]]:
    """One seed's training setup (under a protocol: its config, overrides and seed) and its agents."""
    own: tuple[Path, list[str], list[str]] = (
        CONFIG,
        [V1_BASE, f"ppo.seed={seed}", f"ppo.updates={updates}", *sets],
        [],
    )
    config, keys, base = own if proto is None else proto.training(seed)
    setup = load_train(config, keys, base, f"{out}/seed-{seed}")
    specs = {m: setup.base.models[m] for m in setup.base.team()}
    agents = build_agents(
        specs, {m: build_backend(s.engine, s.model or m, dict(s.args)) for m, s in specs.items()}, None
    )
    return setup, agents


def train_seed(seed: int, updates: int, out: str, sets: list[str], proto: Protocol | None = None) -> Any:
    """One seed's training (resumes from its checkpoints); in a worker process with --jobs."""
    setup, agents = setup_and_agents(seed, updates, out, sets, proto)
    return train(setup, agents, console=Console(stderr=True, quiet=True))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, help="trainings, seeds 0..N-1 (default 5)")
    parser.add_argument("--updates", type=int, help="PPO updates per training (default 150)")
    parser.add_argument("--items", type=int, help="rumad:test items evaluated per seed (default 300)")
    parser.add_argument("--out", default=str(ROOT / "runs" / "bench_rumad"), help="trainings (resumable)")
    parser.add_argument("--png", help="the plot (default: curves.png in --out)")
    parser.add_argument(
        "--set", dest="sets", action="append", default=[], help="a training key, e.g. reward.alpha_sparsity=0"
    )
    parser.add_argument("--jobs", type=int, default=1, help="trainings in parallel processes")
    parser.add_argument("--protocol", help="a pre-registered protocol (bench/protocols/README.md)")
    args = parser.parse_args(argv)
    args.png = args.png or str(Path(args.out) / "curves.png")
    start = time.perf_counter()
    with protocol.one_line():
        proto = protocol.from_flags(args, "rumad", "mmlu", seeds=5, updates=150, items=300)
    seeds = proto.train_seeds if proto else list(range(args.seeds))
    test_seeds = proto.test_seeds if proto else seeds  # each training's evaluation seed
    items = protocol.test_items(proto, "mmlu", "rumad:test", args.items)
    shared = dict(proto.method_args) if proto else {}  # given to every method the bench runs
    baselines = [
        *((label, name, proto.args(a) if proto else a) for label, name, a in BASELINES),
        *(proto.baseline_rows() if proto else []),
    ]
    results: dict[str, list[Tally]] = {
        TRAINED: [],
        BEST: [],
        **{label: [] for label, _, _ in baselines},
        UNTRAINED: [],
        MATCHED: [],
    }
    if proto:
        with protocol.one_line():
            setups = [setup_and_agents(s, args.updates, args.out, [], proto)[0] for s in seeds]
            rows = [TRAINED, BEST, *(label for label, _, _ in baselines), UNTRAINED, MATCHED]
            protocol.begin(
                args.protocol, proto, args.out, setups, items, rows, ("accuracy", "tokens"), 6, args.updates
            )
    histories: dict[int, list[dict[str, float]]] = {}
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        outcomes = list(
            pool.map(
                train_seed,
                *zip(*[(s, args.updates, args.out, args.sets, proto) for s in seeds], strict=True),
            )
        )
    print(f"trained {len(seeds)} seeds ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    for seed, test_seed, outcome in zip(seeds, test_seeds, outcomes, strict=True):
        setup, agents = setup_and_agents(seed, args.updates, args.out, args.sets, proto)
        histories[seed] = outcome.history
        team = [agents[m] for m in setup.base.team()]
        router = dict(setup.cfg.method.args)
        methods = {
            TRAINED: build_method("rumad", {**router, "checkpoint": str(outcome.policy)}),
            BEST: build_method("rumad", {**router, "checkpoint": str(outcome.best or outcome.policy)}),
            **{label: build_method(name, margs) for label, name, margs in baselines},
            UNTRAINED: build_method("rumad", {**router, "init_seed": seed}),
        }
        for label, method in methods.items():
            results[label].append(asyncio.run(evaluate(method, team, items, test_seed)))
        matched = matched_consistency(
            results["clique (MAD)"][-1], results[BEST][-1], team, len(items), shared
        )
        results[MATCHED].append(asyncio.run(evaluate(matched, team, items, test_seed)))
        print(f"seed {seed}: trained accuracy {results[TRAINED][-1].accuracy:.3f}, clique {results['clique (MAD)'][-1].accuracy:.3f} "
              f"({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)  # fmt: skip
    plot(histories, Path(args.png))
    print(
        protocol.header(args.protocol, proto)
        if proto
        else f"simulated population (skills 0.8 0.7 0.6 0.5 0.4 0.3, calibration 0.85), 6 rounds; trained on mmlu rumad:dev "
        f"({args.updates} PPO updates x 64 episodes per seed), evaluated on mmlu rumad:test[:{args.items}] (shuffle seed 0); "
        f"seeds 0..{args.seeds - 1}; {time.perf_counter() - start:.0f} s\n"
    )
    print(table(results, args.items))
    print()
    others = ["clique (MAD)", "random activation, B = 12", UNTRAINED, MATCHED]
    others += [b.label for b in proto.baselines] if proto else []
    for mine in (TRAINED, BEST):
        for other in others:
            print(f"- {mine} vs {other}: {mcnemar(results[mine], results[other])}")
    if proto:
        with protocol.one_line():
            print(f"\n{protocol.report(args.protocol, proto, args.out, results)}")
    print(f"\ntraining curves: {args.png}")


if __name__ == "__main__":
    main()
