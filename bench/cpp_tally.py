"""What bench/cpp_vs_full.py measures and prints: one method's tally under one seed (accuracy by item,
price-weighted cost, kept responses, round-0 cost and accuracy per seat, honest readers' keeps by
author), the truncation settings' labels and method arguments, the rows the bench runs, the results
table, the exact McNemar line, the accuracy-cost Pareto plot and the whole report."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import protocol_bench as protocol
from bench.protocol import Protocol
from bench.protocol_results import exact_mcnemar
from data.grading.graders import grader_for
from debate.episode import Agent, run_episode
from debate.methods import Method
from debate.routers.cpp import seat_quantiles

FULL = "Full-Debate"
RANDOM_EQUAL = "random pruning at CPP's keep rate"


@dataclasses.dataclass
class Tally:
    """One method under one seed."""

    by_item: dict[str, bool] = dataclasses.field(default_factory=dict)
    cost: float = 0.0
    kept: int = 0
    seat_cost: list[float] = dataclasses.field(default_factory=lambda: [0.0, 0.0, 0.0])  # round 0, summed
    seat_right: dict[str, int] = dataclasses.field(default_factory=dict)
    # an honest reader's decisions on a peer's response, by the author: [kept, decided]
    peer_keeps: dict[str, list[int]] = dataclasses.field(default_factory=dict)

    @property
    def accuracy(self) -> float:
        return sum(self.by_item.values()) / len(self.by_item)


def peer_keeps(
    keep: Sequence[Sequence[Sequence[Any]]], adversarial: Sequence[bool], into: dict[str, list[int]]
) -> None:
    """Add one round's keep decisions (reader i's row: (author, kept, p) entries) by honest readers on
    their peers' responses to `into`, as [kept, decided] under "adversary" or "honest" (the author)."""
    for reader, row in enumerate(keep):
        if adversarial[reader]:
            continue
        for author, kept, *_ in row:
            if author != reader:
                count = into.setdefault("adversary" if adversarial[author] else "honest", [0, 0])
                count[0], count[1] = count[0] + int(bool(kept)), count[1] + 1


async def evaluate(method: Method, team: Sequence[Agent], items: Sequence[Any], seed: int) -> Tally:
    tally = Tally()
    adversarial = [a.adversarial for a in team]

    async def one(sample: Any) -> None:
        res = await run_episode(method, team, sample, grader_for(sample), seed, 2, "arith")
        tally.by_item[sample.id] = res.correct
        tally.cost += res.cost
        for rec in res.trajectory[1:]:
            assert rec.decision is not None  # every debate round has one
            keep = rec.decision.record.get("keep")
            # a method without keep decisions: its graph's edges and every agent's own response
            tally.kept += (
                sum(e[1] for row in keep for e in row) if keep else len(rec.decision.graph.edges) + 3
            )
            if keep:
                peer_keeps(keep, adversarial, tally.peer_keeps)
        for t in res.turns:
            if t.round == 0 and t.agent < 3:
                tally.seat_cost[t.agent] += t.cost
                tally.seat_right[t.model] = tally.seat_right.get(t.model, 0) + int(
                    res.trajectory[0].correct_after[t.agent]
                )

    await asyncio.gather(*(one(s) for s in items))
    return tally


def qlabel(spec: str) -> str:
    """A truncation setting as rows name it: "0.9" -> q0.9 (as before per-seat settings), per seat
    "0.85/0.95/0.95" -> q85/q95/q95 (the paper's)."""
    qs = seat_quantiles(spec)
    return f"q{qs[0]:g}" if len(qs) == 1 else "/".join(f"q{100 * q:g}" for q in qs)


def setting(spec: str) -> str:
    """`--truncate`'s value, checked."""
    try:
        seat_quantiles(spec)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return spec


def cut(spec: str) -> dict[str, Any]:
    """The cpp method's arguments for a truncation setting."""
    qs = seat_quantiles(spec)
    return {"truncate": qs[0]} if len(qs) == 1 else {"truncate_seats": spec}


def mcnemar(a: list[Tally], b: list[Tally]) -> str:
    """Paired on (seed, item): discordant counts and the exact two-sided McNemar p-value."""
    wins, losses, pairs, p_value = exact_mcnemar(a, b)
    return f"{wins} wins / {losses} losses over {pairs} paired episodes, exact McNemar p = {p_value:.3g}"


def share(tallies: list[Tally], full: list[Tally]) -> float:
    """Cost as a share of Full-Debate's on the same items and seeds."""
    return sum(t.cost for t in tallies) / sum(t.cost for t in full)


def table(results: dict[str, list[Tally]], items: int) -> str:
    full = results[FULL]
    rows = ["| method | accuracy (mean ± std over seeds) | cost/task (price-weighted) | % of Full-Debate | kept / 18 |",
            "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for label, tallies in results.items():
        accs = [t.accuracy for t in tallies]
        std = statistics.stdev(accs) if len(accs) > 1 else 0.0
        cost = statistics.mean(t.cost for t in tallies) / items
        kept = (
            f"{statistics.mean(t.kept for t in tallies) / items:.1f}" if any(t.kept for t in tallies) else "–"
        )
        rows.append(
            f"| {label} | {statistics.mean(accs):.3f} ± {std:.3f} | {cost * 1000:.3f} m$ | {share(tallies, full):.1%} | {kept} |"
        )
    return "\n".join(rows)


def plot(panels: dict[str, dict[str, list[Tally]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(7.5 * len(panels), 5.2), squeeze=False)
    cmap = plt.get_cmap("tab20")
    for ax, (title, results) in zip(axes[0], panels.items(), strict=True):
        points = {
            k: (100 * share(v, results[FULL]), statistics.mean(t.accuracy for t in v))
            for k, v in results.items()
        }
        front = sorted(
            p
            for k, p in points.items()
            if not any(q[0] <= p[0] and q[1] >= p[1] and q != p for q in points.values())
        )
        ax.plot([p[0] for p in front], [p[1] for p in front], "--", color="grey", lw=1, label="Pareto front")
        for n, (label, (x, y)) in enumerate(points.items()):
            mark = "*" if label.startswith(("CPP", "Adv-CPP")) else ("s" if label.startswith(FULL) else "o")
            ax.scatter(
                x, y, s=70 if mark == "*" else 36, marker=mark, color=cmap(n % 20), zorder=3, label=label
            )
        ax.set_xlabel("price-weighted cost, % of Full-Debate (same items)")
        ax.set_ylabel("accuracy (mean over seeds)")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(0.0, -0.14), ncol=2, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def labels(truncate: list[str], extra: Sequence[str]) -> list[str]:
    """The rows `run_seed` makes: the honest team's, then the adversarial team's as 'adversary: <row>'."""
    qs = [qlabel(q) for q in truncate]

    def rows(adv: bool) -> list[str]:
        cpp = ["CPP", "CPP, final policy", *(f"CPP, truncated {q}" for q in qs)]
        adv_cpp = ["Adv-CPP", *(f"Adv-CPP, truncated {q}" for q in qs)] if adv else []
        fixed = [FULL, *(f"{FULL}, truncated {q}" for q in qs), "random pruning p=0.5", RANDOM_EQUAL, "vote"]
        matched = [f"consistency {pool}, m matched to CPP truncated {qs[0]}" for pool in ("fuse", "best")]
        return [*fixed, *cpp, *adv_cpp, *matched, *extra]

    return [*rows(False), *(f"adversary: {r}" for r in rows(True))]


def merge(per_seed: list[dict[str, Tally]]) -> dict[str, list[Tally]]:
    """Rows by label, one tally per seed."""
    merged: dict[str, list[Tally]] = {}
    for got in per_seed:
        for label, tally in got.items():
            merged.setdefault(label, []).append(tally)
    return merged


def report(
    vanilla: dict[str, list[Tally]],
    adversarial: dict[str, list[Tally]],
    notes: dict[str, list[Any]],
    args: Any,
    seconds: float,
    proto: Protocol | None = None,
) -> None:
    q = qlabel(args.truncate[0])
    if proto:
        print(protocol.header(args.protocol, proto))
    else:
        print(f"simulated team of examples/cpp_simulated.yaml (skills 0.75/0.60/0.45, prices in/out per M tokens 2.0/8.0, 0.4/1.6, "
              f"0.1/0.4); CPP trained on arith train ({args.updates} updates x 64 episodes per seed, {' '.join(args.sets) or 'defaults'}); "
              f"evaluated on arith test[:{args.items}] (shuffle seed 0), seeds 0..{args.seeds - 1}; {seconds:.0f} s\n")  # fmt: skip
    print("### honest team\n")
    print(table(vanilla, args.items))
    print("\n### seat 1 (sim-mid) adversarial\n")
    print(table(adversarial, args.items))
    print()
    for mine, other in ((f"CPP, truncated {q}", FULL), ("CPP", FULL), ("CPP", "random pruning p=0.5"),
                        ("CPP", RANDOM_EQUAL), (f"CPP, truncated {q}", f"{FULL}, truncated {q}")):  # fmt: skip
        if mine in vanilla and other in vanilla:
            print(f"- honest: {mine} vs {other}: {mcnemar(vanilla[mine], vanilla[other])}")
    for mine in ("CPP", "Adv-CPP"):
        print(f"- adversary: {mine} vs {FULL}: {mcnemar(adversarial[mine], adversarial[FULL])}")
    for label in (FULL, "CPP", f"CPP, truncated {q}"):
        drop = statistics.mean(t.accuracy for t in vanilla[label]) - statistics.mean(
            t.accuracy for t in adversarial[label]
        )
        print(f"- accuracy drop under the adversary, {label}: {drop:+.3f}")
    drop = statistics.mean(t.accuracy for t in vanilla["CPP"]) - statistics.mean(
        t.accuracy for t in adversarial["Adv-CPP"]
    )
    print(f"- accuracy drop under the adversary, CPP (honest) -> Adv-CPP (adversarial): {drop:+.3f}")
    for key, values in notes.items():
        print(f"- {key} per seed: {', '.join(str(v) for v in values)}")
    if getattr(args, "reuse", None):
        print(
            f"- trainings taken from {args.reuse} (those of the same fingerprint, each resumed from its checkpoints): {args.reused}"
        )
    if proto:
        rows = {**vanilla, **{f"adversary: {label}": v for label, v in adversarial.items()}}
        named = (r for t in proto.targets if t.metric == "accuracy" for r in (t.compare, t.against))
        for row in dict.fromkeys(named):  # a target's rows, seed by seed: a mean can hide one bad training
            print(f"- accuracy per seed, {row}: {', '.join(f'{t.accuracy:.3f}' for t in rows[row])}")
        with protocol.one_line():
            print(f"\n{protocol.report(args.protocol, proto, args.out, rows)}")
    plot({"honest team": vanilla, "seat 1 adversarial": adversarial}, Path(args.png))
    print(f"\nPareto plot: {args.png}")
