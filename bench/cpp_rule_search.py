"""How far can any pruning policy over CPP's cues go? A search of the rule space on development items.

A learned pruner that reads no text (`cpp.content: false`) is a table: for each decision, keep or
prune by the reader, the author's seat and the cue cell `confidence_keep` reads (own response or a
peer's, same answer or not, both stated confidences; `debate.policies.pruning.cues_of`). This script
starts from a rule (`confidence_keep` 3/3 skipping agreeing peers by default) and flips one cell of
its table at a time, on the search seeds: every cell the rule visits at least `--min-visits` times,
and with `--by-seat` every (author seat, cell) pair. The flips that gain correct answers on the search
seeds are then taken together and the resulting table is scored on check seeds it was not chosen on,
beside the rule and Full-Debate. What the table gains there bounds what a learner over the same
observations can gain on this population: if the best table found is within noise of the rule, so
is every policy over the cues, whatever its training. Train-split items only (after the training's),
never test items; a measurement for choosing what to declare.

    .venv/bin/python bench/cpp_rule_search.py                  # the honest team, cells only
    .venv/bin/python bench/cpp_rule_search.py --by-seat --adversary 1 --base "3/3 never 1"
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from bench.cpp_dev import SHARED, dev_parser, evaluate, load_dev  # noqa: E402
from data.benchmarks.registry import load_benchmark  # noqa: E402
from debate.methods import Method, build_method  # noqa: E402
from debate.policies.pruning import cues_of  # noqa: E402
from debate.routers.rules import ConfidenceKeep  # noqa: E402
from sweep.engines.pool import local_agents  # noqa: E402
from sweep.train.behaviour import seats  # noqa: E402

# a cell of the table: (author seat or -1 for any, own?, same answer?, reader's confidence, author's)
Cell = tuple[int, int, int, int, int]
BASES = {
    "3/3 skip": {"keep_at": 3, "hide_own_at": 3, "skip_agreeing": True},
    "4/2": {"keep_at": 4, "hide_own_at": 2},
    "3/3 never 1": {"keep_at": 3, "hide_own_at": 3, "never_seat": 1},
}


@dataclass(frozen=True)
class FlippedRule(ConfidenceKeep):
    """`confidence_keep` with the decision of some cells of its table reversed; counts the cells it
    decides on (`visits`), so a scan knows which cells the rule reaches."""

    flips: frozenset[Cell] = frozenset()
    visits: Counter[Cell] = field(default_factory=Counter, compare=False, hash=False)

    def keeps(
        self, agent: int, candidate: int, confidences: tuple[int, ...], answers: tuple[str | None, ...] = ()
    ) -> bool:
        base = super().keeps(agent, candidate, confidences, answers)
        cell = cues_of(agent, candidate, confidences, answers)
        self.visits[(-1, *cell)] += 1
        self.visits[(candidate, *cell)] += 1
        flipped = (-1, *cell) in self.flips or (candidate, *cell) in self.flips
        return not base if flipped else base


def main(argv: Sequence[str] | None = None) -> None:
    p = dev_parser(__doc__, "unused: it trains nothing", "a training key (the team)", name="rule-search")
    p.add_argument("--base", choices=sorted(BASES), default="3/3 skip", help="the rule searched from")
    p.add_argument("--by-seat", action="store_true", help="also flip each cell for one author seat")
    p.add_argument("--adversary", type=int, default=None, help="agents entry N adversarial")
    p.add_argument("--check-seeds", type=int, nargs="+", default=[52, 53])
    p.add_argument("--min-visits", type=int, default=20, help="of a cell on the search seeds")
    args = p.parse_args(argv)
    base_keys = [] if args.adversary is None else [f"agents.{args.adversary}.adversarial=true"]
    setup = load_dev(p, args, base_keys)
    ds = setup.base.datasets[0]
    team = seats(setup, local_agents(setup.base))
    samples = load_benchmark(ds.name, "train", limit=args.items, offset=args.offset, seed=ds.seed)
    shell = build_method("confidence_keep", {**SHARED, **BASES[args.base]})

    def rule(flips: frozenset[Cell] = frozenset()) -> Method:
        return replace(shell, router=FlippedRule(**BASES[args.base], flips=flips))

    def score(method: Method, seeds: Sequence[int]) -> np.ndarray:
        """(episodes, 2): correct, cost."""
        return evaluate(method, team, samples, seeds, setup.base.rounds, ds.name)[0][:, :2]

    full = build_method("fixed", {"topology": "clique", **SHARED})
    start = time.monotonic()
    method = rule()
    base = score(method, args.seeds)
    visits = method.router.visits  # the cells the rule reached on the search seeds
    cells = [c for c, v in visits.items() if v >= args.min_visits and (args.by_seat or c[0] == -1)]
    print(
        f"from confidence_keep {args.base}: {len(cells)} cells visited >= {args.min_visits} times; "
        f"search seeds {args.seeds}, check seeds {args.check_seeds}, {args.items} items"
    )
    print("| flipped cell (seat, own, same, reader conf, author conf) | visits | Δ correct | Δ cost |")
    print("| --- | --- | --- | --- |")
    gains: list[Cell] = []
    for cell in sorted(cells):
        res = score(rule(frozenset([cell])), args.seeds)
        d_correct = int((res[:, 0] - base[:, 0]).sum())
        d_cost = res[:, 1].mean() / base[:, 1].mean() - 1
        if d_correct > 0:
            gains.append(cell)
        print(f"| {cell} | {visits[cell]} | {d_correct:+d} | {d_cost:+.1%} |")
    rows = {
        "Full-Debate": full,
        f"confidence_keep {args.base}": rule(),
        f"the table: {len(gains)} gaining flips": rule(frozenset(gains)),
    }
    print(f"\non the check seeds {args.check_seeds} ({time.monotonic() - start:.0f} s of search)")
    print("| policy | accuracy | vs the rule | cost, % of Full-Debate |\n| --- | --- | --- | --- |")
    out = {label: score(m, args.check_seeds) for label, m in rows.items()}
    rule_acc = out[f"confidence_keep {args.base}"][:, 0].mean()
    for label, res in out.items():
        acc, cost = res.mean(axis=0)
        print(
            f"| {label} | {acc:.3f} | {acc - rule_acc:+.3f} | {cost / out['Full-Debate'][:, 1].mean():.1%} |"
        )


if __name__ == "__main__":
    main()
