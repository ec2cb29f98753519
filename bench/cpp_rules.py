"""The best simple rule over what CPP's policy reads, found on development items: `confidence_keep`
over its two thresholds, with and without `skip_agreeing` (prune a peer whose answer is the reader's
own), beside Full-Debate, on the same items and seeds. A learner is only as good as the best such
rule; choosing it here, on training-split items after those CPP trains on (train[:1000]), keeps the
test items for declared protocols.

    .venv/bin/python bench/cpp_rules.py                   # examples/cpp_calibrated.yaml, 32 rules
    .venv/bin/python bench/cpp_rules.py --hide 2 3 --keep 3 4
    .venv/bin/python bench/cpp_rules.py --adversary 1     # agents entry 1 adversarial: every rule is
                                                          # also told its seat (never_seat), beside never_keep

Every row: accuracy and its difference from Full-Debate, price-weighted cost as a share of
Full-Debate's, kept responses per episode, and whether the rule is on the accuracy-cost Pareto front
(no other row is at least as cheap and as accurate, and better on one).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from bench.cpp_dev import SHARED, evaluate  # noqa: E402
from data.benchmarks.registry import load_benchmark  # noqa: E402
from debate.methods import build_method  # noqa: E402
from sweep.config.errors import ConfigError  # noqa: E402
from sweep.config.sweep import load_config  # noqa: E402
from sweep.engines.pool import local_agents  # noqa: E402


def pareto(points: Sequence[tuple[float, float]]) -> list[bool]:
    """Per (accuracy, cost): whether no other point is at least as good on both and better on one."""
    return [not any(c2 <= c and a2 >= a and (c2 < c or a2 > a) for a2, c2 in points) for a, c in points]


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="examples/cpp_calibrated.yaml", help="team, prices, dataset, rounds")
    p.add_argument("--hide", type=int, nargs="+", default=[0, 1, 2, 3], help="hide_own_at values")
    p.add_argument("--keep", type=int, nargs="+", default=[3, 4, 5, 6], help="keep_at values")
    p.add_argument("--offset", type=int, default=1000, help="first development item of the train split")
    p.add_argument("--items", type=int, default=500)
    p.add_argument("--seeds", type=int, nargs="+", default=[50, 51])
    p.add_argument(
        "--method-args", default=json.dumps(SHARED), help="JSON arguments of every method (a protocol's)"
    )
    p.add_argument("--adversary", type=int, help="agents entry N adversarial (one seat)")
    args = p.parse_args(argv)
    try:
        cfg = load_config(
            args.config, [] if args.adversary is None else [f"agents.{args.adversary}.adversarial=true"]
        )
    except ConfigError as e:
        p.error(str(e))
    if args.adversary is not None and len(cfg.adversaries()) != 1:
        p.error(
            f"--adversary: agents entry {args.adversary} makes {len(cfg.adversaries())} adversarial seats; give an entry of one seat"
        )
    agents, told = (
        local_agents(cfg),
        {"never_seat": min(cfg.adversaries())} if args.adversary is not None else {},
    )
    team = [replace(agents[m], adversarial=i in cfg.adversaries()) for i, m in enumerate(cfg.team())]
    ds = cfg.datasets[0]
    samples = load_benchmark(ds.name, "train", limit=args.items, offset=args.offset, seed=ds.seed)
    shared = {"protocol": "update", **json.loads(args.method_args)}
    rows = {"Full-Debate": build_method("fixed", {"topology": "clique", **shared})}
    if told:
        rows["never keep the adversary"] = build_method("never_keep", {**shared, "seat": told["never_seat"]})
    for hide in args.hide:
        for keep in args.keep:
            for skip in (False, True):
                rule = {"keep_at": keep, "hide_own_at": hide, "skip_agreeing": skip, **told}
                rows[
                    f"{keep}/{hide}{', skip agreeing' if skip else ''}{', told the seat' if told else ''}"
                ] = build_method("confidence_keep", {**shared, **rule})
    results = {
        k: evaluate(m, team, samples, args.seeds, cfg.rounds, ds.name)[0].mean(axis=0)
        for k, m in rows.items()
    }
    full_acc, full_cost = results["Full-Debate"][0], results["Full-Debate"][1]
    front = pareto([(r[0], r[1]) for r in results.values()])
    print(
        f"{ds.name} train items {args.offset}..{args.offset + args.items - 1}, seeds {args.seeds}; "
        f"rules as confidence_keep keep_at/hide_own_at"
        + (f"; seat {told['never_seat']} adversarial" if told else "")
    )
    print("| rule | accuracy | vs Full-Debate | cost, % of Full-Debate | kept | Pareto |")
    print("| --- | --- | --- | --- | --- | --- |")
    order = sorted(zip(results.items(), front, strict=True), key=lambda x: x[0][1][1])
    for (label, (acc, cost, kept)), on_front in order:
        kept_cell = "–" if math.isnan(kept) else f"{kept:.1f}"  # nan: no keep decisions
        print(
            f"| {label} | {acc:.3f} | {acc - full_acc:+.3f} | {cost / full_cost:.1%} | {kept_cell} | "
            f"{'yes' if on_front else ''} |"
        )


if __name__ == "__main__":
    main()
