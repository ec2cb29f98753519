"""Does a protocol's choice among CPP's restarts rank them as other held-out items do?

After a cpp bench run with `restarts` and `choice` (bench/protocols/README.md), each honest restart's
best policy is scored on the protocol's choice items and seeds, and again on other items and seeds
that neither the trainings nor the test hold (by default the development items of
docs/methods/cpp.md: arith train 1000-1499 after the shuffle by seed 0, seeds 50 and 51). Printed:
each restart's two accuracies, per train seed whether both sets pick the same restart, and the
correlation of the restarts' differences (each score less its seed's mean) between the two sets.
A choice whose ranking does not repeat on other items picks by its own items' noise.

    .venv/bin/python bench/cpp_restart_agreement.py \\
        --protocol bench/protocols/cpp-v5-seat-cues-bias-as-kc015-blind-own-r3-acc.yaml \\
        --out runs/cpp-v5-seat-cues-bias-as-kc015-blind-own-r3-acc
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ is not an installed package

from bench import protocol_bench as protocol  # noqa: E402
from bench.cpp_vs_full import accuracy_on, setup_and_agents, teams, training_dir  # noqa: E402
from bench.protocol import RESTART_STRIDE  # noqa: E402
from data.benchmarks.registry import load_benchmark  # noqa: E402
from sweep.config.errors import ConfigError  # noqa: E402


def policy_of(out: Path, seed: int, restart: int) -> str:
    """The best policy (else the final one) of honest restart `restart` of train seed `seed`."""
    tag = training_dir(seed, False, restart)
    for path in (out / tag / "checkpoints" / "best.npz", out / tag / "policy.npz"):
        if path.is_file():
            return str(path)
    raise ConfigError(f"--out: {out / tag} holds no policy; give the cpp bench run's --out")


def centred(scores: Sequence[Sequence[float]]) -> list[float]:
    """Every score less its own seed's mean, flattened (seed by seed)."""
    return [s - statistics.mean(row) for row in scores for s in row]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--protocol", required=True, help="a protocol with restarts and choice")
    parser.add_argument("--out", required=True, help="the cpp bench run's --out")
    parser.add_argument("--offset", type=int, default=1000, help="the other items: arith train from here")
    parser.add_argument("--items", type=int, default=500, help="how many other items")
    parser.add_argument("--seeds", type=int, nargs="+", default=[50, 51], help="the other items' seeds")
    args = parser.parse_args(argv)
    with protocol.one_line():
        p = protocol.load_protocol(args.protocol)
        if p.choice is None:
            raise ConfigError("--protocol: it declares no `choice` among CPP's restarts; give one that does")
        c = p.choice
        chosen_on = load_benchmark(c.dataset, c.split, c.items, c.offset, c.shuffle_seed)
        other = load_benchmark("arith", "train", args.items, args.offset, 0)
        if {str(i.id) for i in other} & {str(i.id) for i in chosen_on}:
            raise ConfigError("--offset: the other items overlap the choice items; give items past them")
        out = Path(args.out)
        policies = [[policy_of(out, s, r) for r in range(p.restarts)] for s in p.train_seeds]
    on_choice, on_other = [], []
    print("| train seed | restart (its seed) | choice items | other items |\n| --- | --- | --- | --- |")
    for seed, paths in zip(p.train_seeds, policies, strict=True):
        _, agents = setup_and_agents(seed, 0, args.out, [], False, p)
        team = teams(agents)[0]
        a = [accuracy_on(x, team, chosen_on, c.seeds, p.method_args) for x in paths]
        b = [accuracy_on(x, team, other, args.seeds, p.method_args) for x in paths]
        on_choice.append(a)
        on_other.append(b)
        for r, (x, y) in enumerate(zip(a, b, strict=True)):
            print(f"| {seed} | r{r} ({seed + RESTART_STRIDE * r}) | {x:.3f} | {y:.3f} |")
    same = sum(a.index(max(a)) == b.index(max(b)) for a, b in zip(on_choice, on_other, strict=True))
    r = statistics.correlation(centred(on_choice), centred(on_other))
    print(f"\nthe same restart best on both sets: {same} of {len(policies)} train seeds")
    print(f"correlation of the restarts' differences (score less its seed's mean) between the sets: {r:+.2f}")
    print(
        f"other items: arith train[{args.offset}:{args.offset + args.items}] (shuffle seed 0), seeds {args.seeds}"
    )


if __name__ == "__main__":
    main()
