"""Try a CPP training variant before declaring it: train (as `sweep train`, in-process, resuming from
its checkpoints) and evaluate on development items — items of the training split after the ones it
trains on, never test items — beside Full-Debate and three `confidence_keep` rules, on the same items
and seeds. What a protocol then declares is run on the test items by bench/cpp_vs_full.py.

    .venv/bin/python bench/cpp_dev.py --name main                         # the training config as is
    .venv/bin/python bench/cpp_dev.py --name local --set reward.beta=0 --set reward.gamma=0
    .venv/bin/python bench/cpp_dev.py --name adv --adversary 1      # Adv-CPP: agents entry 1 adversarial

With `--adversary N` the base sweep's agents entry N (one seat: `agents.N.adversarial=true`, as the
cpp bench's Adv-CPP trainings) is adversarial in training and evaluation (Adv-CPP), the
`never_keep` rule on it runs beside, and the keep probabilities are also given by whose response is
decided on: whether the policy learned to prune the adversary.

Every row: accuracy (and its difference from Full-Debate), price-weighted cost as a share of
Full-Debate's, kept responses per episode (of n x n per debate round); then the final policy's keep
probability by kind of decision (the kinds of bench/cpp_credit.py): whether it learned to tell them
apart, or only a keep rate.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from bench.cpp_credit import DU_WHOLE, kind  # noqa: E402
from data.benchmarks.registry import load_benchmark  # noqa: E402
from data.grading.graders import grader_for  # noqa: E402
from data.types import Sample  # noqa: E402
from debate.episode import Agent, run_episode  # noqa: E402
from debate.methods import Method, build_method  # noqa: E402
from sweep.config.sweep import ConfigError  # noqa: E402
from sweep.engines.pool import local_agents  # noqa: E402
from sweep.train.behaviour import seats  # noqa: E402
from sweep.train.config import TrainSetup, load_train  # noqa: E402
from sweep.train.pg import train  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# cpp-v5-du-prompts' training: the main method, the hashed encoder, whole replies, Du et al.'s prompts
BASE_SET = ["cpp.encoder=hashed", "method.args.reasoning_chars=0", "method.args.prompt_style=rumad"]
SHARED = {"protocol": "update", **DU_WHOLE}


def evaluate(
    method: Method, team: list[Agent], samples: list[Sample], seeds: Sequence[int], rounds: int, dataset: str
) -> tuple[np.ndarray, dict[str, list[float]]]:
    """(episodes, 3): correct, cost, kept responses (nan for a method that decides none), over seeds x
    samples; and each keep decision's probability by kind (`bench.cpp_credit.kind`) and, under
    "author: ...", by whether the response's author is adversarial."""
    by_kind: dict[str, list[float]] = defaultdict(list)

    async def run() -> list[tuple[float, float, float]]:
        out = []
        for seed in seeds:
            for s in samples:
                r = await run_episode(method, team, s, grader_for(s), seed, rounds, dataset)
                kept, decided = 0, False
                for t, rec in enumerate(r.trajectory[1:], start=1):
                    keep = rec.decision.record.get("keep") if rec.decision else None
                    views = r.state.views[t - 1]
                    for i, row in enumerate(keep or []):
                        for j, k, p in row:
                            decided, kept = True, kept + int(k)
                            agrees = views[j].answer == views[i].answer
                            by_kind[kind(t, j == i, views[j].confidence, agrees)].append(float(p))
                            who = "adversary" if team[j].adversarial else "honest"
                            by_kind[f"author: {who}, {'own' if j == i else 'peer'}"].append(float(p))
                out.append((float(r.correct), r.cost, float(kept) if decided else math.nan))
        return out

    return np.array(asyncio.run(run())), by_kind


def dev_parser(
    doc: str | None, name_help: str, set_help: str, name: str | None = None
) -> argparse.ArgumentParser:
    """The options every development-items script shares: the training (config, name, keys, output
    dir) and the development items (offset in the train split, count, seeds). `name`: the default
    name of a script that trains nothing; else --name is required."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="examples/train_cpp_main.yaml")
    p.add_argument("--name", required=name is None, default=name, help=name_help)
    p.add_argument("--set", action="append", default=[], help=set_help)
    p.add_argument("--out", default="runs/cpp-dev")
    p.add_argument("--offset", type=int, default=1000, help="first development item of the train split")
    p.add_argument("--items", type=int, default=500)
    p.add_argument("--seeds", type=int, nargs="+", default=[50, 51])
    return p


def load_dev(p: argparse.ArgumentParser, args: argparse.Namespace, base: list[str]) -> TrainSetup:
    """The training `args` name (BASE_SET, then --set; `base` on the base sweep), refused in one line
    when it does not load or when the development items overlap the items it trains on."""
    try:
        setup = load_train(
            str(ROOT / args.config),
            ["tracking.enabled=false", *BASE_SET, *args.set],
            base,
            str(Path(args.out) / args.name),
        )
    except ConfigError as e:
        p.error(str(e))
    ds = setup.base.datasets[0]
    if ds.split != "train" or (ds.limit or 0) > args.offset:
        p.error(f"--offset: the training reads {ds.split}[:{ds.limit}]; development items must come after it")
    return setup


def main(argv: Sequence[str] | None = None) -> None:
    p = dev_parser(
        __doc__, "the variant's name: its output dir under --out", "a training key, as sweep train --set"
    )
    p.add_argument("--adversary", type=int, default=None, help="agents entry N adversarial (Adv-CPP)")
    args = p.parse_args(argv)
    out = Path(args.out) / args.name
    base = [] if args.adversary is None else [f"agents.{args.adversary}.adversarial=true"]
    setup = load_dev(p, args, base)
    adversaries = sorted(setup.base.adversaries())
    if args.adversary is not None and len(adversaries) != 1:
        p.error(
            f"--adversary: agents entry {args.adversary} makes {len(adversaries)} adversarial seats; give an entry of one seat"
        )
    ds = setup.base.datasets[0]
    agents = local_agents(setup.base)
    start = time.monotonic()
    train(setup, agents, console=Console(stderr=True, quiet=True))
    took = time.monotonic() - start
    team = seats(setup, agents)  # adversarial seats marked, as the training's behaviour step marks them
    samples = load_benchmark(ds.name, "train", limit=args.items, offset=args.offset, seed=ds.seed)
    rows = {
        "Full-Debate": build_method("fixed", {"topology": "clique", **SHARED}),
        "confidence_keep 4/2": build_method("confidence_keep", SHARED),
        "confidence_keep 3/3": build_method("confidence_keep", {**SHARED, "keep_at": 3, "hide_own_at": 3}),
        # the cheapest rule at Full-Debate's accuracy on the test items (docs/methods/cpp.md)
        "confidence_keep 3/3, skip agreeing": build_method(
            "confidence_keep", {**SHARED, "keep_at": 3, "hide_own_at": 3, "skip_agreeing": True}
        ),
        **(
            {}
            if args.adversary is None
            else {
                "never keep the adversary": build_method("never_keep", {**SHARED, "seat": adversaries[0]}),
                # the best rule told the adversary's seat on the test items (docs/methods/cpp.md)
                "confidence_keep 3/3, never keeping it": build_method(
                    "confidence_keep",
                    {**SHARED, "keep_at": 3, "hide_own_at": 3, "never_seat": adversaries[0]},
                ),
            }
        ),
        "CPP (best eval)": build_method(
            "cpp", {**SHARED, "checkpoint": str(out / "checkpoints" / "best.npz")}
        ),
        "CPP (final)": build_method("cpp", {**SHARED, "checkpoint": str(out / "policy.npz")}),
    }
    print(
        f"{args.name} {args.set}: trained in {took:.0f} s; {args.items} development items, seeds {args.seeds}"
    )
    print(
        "| method | accuracy | vs Full-Debate | cost, % of Full-Debate | kept |\n| --- | --- | --- | --- | --- |"
    )
    full, policy = None, {}
    for label, method in rows.items():
        res, policy = evaluate(method, team, samples, args.seeds, setup.base.rounds, ds.name)
        full = res if full is None else full
        acc, cost, kept = res.mean(axis=0)
        share = f"{cost / full[:, 1].mean():.1%}"
        kept_cell = "–" if math.isnan(kept) else f"{kept:.1f}"
        print(f"| {label} | {acc:.3f} | {acc - full[:, 0].mean():+.3f} | {share} | {kept_cell} |")
    print(
        "\nthe final policy's keep probability by kind of decision\n| decision | mean p | sd |\n| --- | --- | --- |"
    )
    for name in sorted(policy):
        print(f"| {name} | {np.mean(policy[name]):.3f} | {np.std(policy[name]):.3f} |")


if __name__ == "__main__":
    main()
