"""Does CPP's reward rank the best rule above the trained policy? The learner trails `confidence_keep`
3/3 skipping agreeing peers at the same cost (docs/methods/cpp.md). Two causes tell apart here:

- the optimiser falls short: the rule earns a higher mean return than the trained policy under the very
  reward the policy was trained on, so a better optimiser could reach it;
- the reward points elsewhere: the trained policy earns at least the rule's return, so more optimisation
  of this reward would not bring the rule's accuracy at its cost.

Every method runs the same development items (items of the training split after the ones trained on,
never test items) and seeds; each episode is scored by `debate.cpp_reward.returns` under the training's
reward, with each action's own before and after (`debate.action_states`, the training's probes) when
the training used them, else the round's pair. The episode's return is the sum of its actions' rewards
with the `final` and `keep_cost` terms (`collect`'s "return", what picks the best checkpoint). Paired
differences against the rule, with their standard error over episodes.

    .venv/bin/python bench/cpp_return_gap.py --name seat-cues-bias-as-kc015-s0 --set cpp.author_seat=true \\
        --set cpp.confidence_cues=true --set cpp.author_bias=true --set reward.keep_cost=0.15 --set pg.action_states=true

`--name` and `--set` name a training of bench/cpp_dev.py (its output dir and keys); this script reads
its checkpoints and trains nothing.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from bench.cpp_dev import SHARED, dev_parser, load_dev  # noqa: E402
from data.benchmarks.registry import load_benchmark  # noqa: E402
from data.grading.graders import grader_for  # noqa: E402
from debate.action_states import action_correctness  # noqa: E402
from debate.cpp_reward import CppReward, returns  # noqa: E402
from debate.episode import Agent, run_episode  # noqa: E402
from debate.methods import Method, build_method  # noqa: E402
from sweep.engines.pool import local_agents  # noqa: E402
from sweep.train.behaviour import seats  # noqa: E402
from sweep.train.pg_config import PGConfig  # noqa: E402


def score(
    method: Method,
    team: list[Agent],
    samples: list,
    seeds: Sequence[int],
    rounds: int,
    dataset: str,
    reward: CppReward,
    probe: bool,
) -> np.ndarray:
    """(episodes, 3): correct, cost, return under `reward` (each action's own pair with `probe`)."""

    async def one(seed: int, s: object) -> tuple[float, float, float]:
        grader = grader_for(s)
        r = await run_episode(method, team, s, grader, seed, rounds, dataset)
        states = await action_correctness(method, team, s, grader, seed, dataset, r) if probe else None
        rewards, _ = returns(r.trajectory, reward, states)
        return float(r.correct), r.cost, float(rewards.sum())

    async def run() -> list[tuple[float, float, float]]:
        return list(await asyncio.gather(*(one(seed, s) for seed in seeds for s in samples)))

    return np.array(asyncio.run(run()))


def main(argv: Sequence[str] | None = None) -> None:
    p = dev_parser(
        __doc__,
        "a bench/cpp_dev.py training: its output dir under --out",
        "the training's keys, as bench/cpp_dev.py",
    )
    args = p.parse_args(argv)
    out = Path(args.out) / args.name
    setup = load_dev(p, args, [])
    for file in (out / "policy.npz", out / "checkpoints" / "best.npz"):
        if not file.is_file():
            p.error(f"--name: {file} is missing; train it first with bench/cpp_dev.py --name {args.name}")
    ds = setup.base.datasets[0]
    probe = setup.section("pg", PGConfig).action_states
    team = seats(setup, local_agents(setup.base))
    samples = load_benchmark(ds.name, "train", limit=args.items, offset=args.offset, seed=ds.seed)
    rule = "confidence_keep 3/3, skip agreeing"
    rows = {
        rule: build_method(
            "confidence_keep", {**SHARED, "keep_at": 3, "hide_own_at": 3, "skip_agreeing": True}
        ),
        "confidence_keep 4/2": build_method("confidence_keep", SHARED),
        "keep all (Full-Debate)": build_method("random_prune", {**SHARED, "p": 1.0}),
        "random pruning p=0.5": build_method("random_prune", {**SHARED, "p": 0.5}),
        "CPP (best eval)": build_method(
            "cpp", {**SHARED, "checkpoint": str(out / "checkpoints" / "best.npz")}
        ),
        "CPP (final)": build_method("cpp", {**SHARED, "checkpoint": str(out / "policy.npz")}),
    }
    pair = "each action's own pair" if probe else "the round's pair"
    print(
        f"{args.name}: reward {setup.rewards.to_dict()} on {pair}; "
        f"{args.items} development items x seeds {args.seeds}"
    )
    print("| method | accuracy | cost, % of keep all | return | return − rule's (± s.e.) |")
    print("| --- | --- | --- | --- | --- |")
    got = {
        label: score(m, team, samples, args.seeds, setup.base.rounds, ds.name, setup.rewards, probe)
        for label, m in rows.items()
    }
    full_cost = got["keep all (Full-Debate)"][:, 1].mean()
    for label, res in got.items():
        diff = res[:, 2] - got[rule][:, 2]
        se = diff.std(ddof=1) / np.sqrt(len(diff))
        print(
            f"| {label} | {res[:, 0].mean():.3f} | {res[:, 1].mean() / full_cost:.1%} | "
            f"{res[:, 2].mean():+.3f} | {diff.mean():+.3f} ± {se:.3f} |"
        )


if __name__ == "__main__":
    main()
