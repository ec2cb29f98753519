"""Which of CPP's keep decisions help, and does CPP's reward say so? Under random pruning every keep
decision is a coin flip, so, per kind of decision, the difference between the episodes that kept and
those that pruned is the decision's causal effect at that operating point: on the reader's own answer
after its round and on the final vote. Beside each, the mean return (`debate.cpp_reward.returns`) of
keeping less that of pruning, under each reward: the direction a policy gradient would push that kind
of decision. A reward teaches a pruner only where its direction matches the effect.

Kinds of decision (what CPP's policy can read in the response it decides on): the round, the reader's
own response or a peer's, the response's stated confidence (<= 3 or >= 4), and whether a peer's answer
agrees with the reader's. `--p 0.9` measures near Full-Debate (most kept), `--p 0.5` at random pruning.
Last, whether the policy's reading of a response can tell what its stated confidence tells: the AUC
for "the response is right" of the confidence, and of a linear probe on the hashed encoding of the
response as the policy reads it (no author), fitted on four folds and scored on the fifth.
Train-split items only: a measurement for choosing what to declare, never a look at test items.

    .venv/bin/python bench/cpp_credit.py                      # examples/cpp_calibrated.yaml, p 0.5 and 0.9
    .venv/bin/python bench/cpp_credit.py --items 200 --seeds 0  # a quick look
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from actors.encoders import HashedEncoder  # noqa: E402
from data.benchmarks.registry import load_benchmark  # noqa: E402
from data.grading.graders import grader_for  # noqa: E402
from debate.cpp_reward import CppReward, index, kept_matrix, order, returns  # noqa: E402
from debate.episode import run_episode  # noqa: E402
from debate.methods import build_method  # noqa: E402
from debate.routers.cpp import response_text  # noqa: E402
from debate.trajectory import EpisodeResult  # noqa: E402
from sweep.config.sweep import load_config  # noqa: E402
from sweep.engines.pool import local_agents  # noqa: E402

# Every method's arguments by default: cpp-v5-du-prompts' method_args (Du et al. prompts, whole replies)
DU_WHOLE = {"prompt_style": "rumad", "reasoning_chars": 0}

# The rewards compared: the main method's (Table 1 with its keep-what-fixed-you contrast), the
# symmetric reading CPP trained with before (a flip credited to whatever was decided), and the
# two-stage ablation's second stage at its sparsest (k = 0: keeping what stayed right earns nothing).
REWARDS = {
    "Table 1 (prune_flip 0, k 1)": CppReward(prune_flip=0.0, k=1.0),
    "prune_flip 1, k 1": CppReward(prune_flip=1.0, k=1.0),
    "prune_flip 0, k 0": CppReward(prune_flip=0.0, k=0.0),
}


@dataclass(frozen=True)
class Row:
    """One keep decision of one episode."""

    kind: str
    kept: bool
    final: bool  # the episode's final vote is right
    reader: bool  # the deciding agent's answer is right after its round
    gains: tuple[float, ...]  # its return under each of REWARDS, in order


def kind(t: int, own: bool, confidence: int, agrees: bool) -> str:
    """The decision's kind, as the tables name it."""
    who = "own" if own else "peer"
    level = "conf <= 3" if confidence <= 3 else "conf >= 4"
    tail = "" if own else (", agrees" if agrees else ", differs")
    return f"round {t}, {who}, {level}{tail}"


def rows_of(result: EpisodeResult, rewards: Sequence[CppReward]) -> list[Row]:
    """Every keep decision of a pruning episode (a router whose records hold `keep`)."""
    g = [returns(result.trajectory, w)[1] for w in rewards]
    n, out = result.state.n, []
    for t, rec in enumerate(result.trajectory[1:], start=1):
        kept, views = kept_matrix(rec), result.state.views[t - 1]
        for i in range(n):
            for k, j in enumerate(order(i, n)):
                agrees = views[j].answer is not None and views[j].answer == views[i].answer
                gains = tuple(float(x[index(t, i, k, n)]) for x in g)
                label = kind(t, j == i, views[j].confidence, agrees)
                out.append(Row(label, bool(kept[i, k]), result.correct, rec.correct_after[i], gains))
    return out


def effect(kept: Iterable[bool], outcome: Iterable[float]) -> tuple[float, float]:
    """(mean outcome when kept less when pruned, its standard error); nan when a side is empty."""
    pairs = list(zip(kept, outcome, strict=True))
    a = [y for k, y in pairs if k]
    b = [y for k, y in pairs if not k]
    if not a or not b:
        return math.nan, math.nan

    def mean_var(xs: list[float]) -> tuple[float, float]:
        m = sum(xs) / len(xs)
        return m, sum((x - m) ** 2 for x in xs) / len(xs)

    (ma, va), (mb, vb) = mean_var(a), mean_var(b)
    return ma - mb, math.sqrt(va / len(a) + vb / len(b))


def table(rows: Sequence[Row], names: Sequence[str]) -> tuple[list[str], int, list[int]]:
    """The markdown table; (lines, the kinds whose effect on the reader is clear (|effect| > 2 se),
    per reward how many of those it points the same way)."""
    by: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by[r.kind].append(r)
    head = ["decision", "n", "kept", "effect on the final vote", "effect on the reader's answer", *names]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    clear, agree = 0, [0] * len(names)
    for name in sorted(by):
        rs = by[name]
        kept = [r.kept for r in rs]
        fin, fin_se = effect(kept, [float(r.final) for r in rs])
        rd, rd_se = effect(kept, [float(r.reader) for r in rs])
        dirs = [effect(kept, [r.gains[w] for r in rs])[0] for w in range(len(names))]
        if abs(rd) > 2 * rd_se:
            clear += 1
            for w, d in enumerate(dirs):
                agree[w] += int(math.copysign(1, rd) == math.copysign(1, d))
        cells = [
            name,
            str(len(rs)),
            f"{sum(kept) / len(rs):.2f}",
            f"{fin:+.3f} ± {fin_se:.3f}",
            f"{rd:+.3f} ± {rd_se:.3f}",
            *(f"{d:+.3f}" for d in dirs),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines, clear, agree


def auc(score: np.ndarray, label: np.ndarray) -> float:
    """The area under the ROC curve (Mann-Whitney's U from average ranks: ties count half)."""
    values, inverse, counts = np.unique(score, return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts  # ranks before each distinct value
    ranks = (first + (counts + 1) / 2)[inverse]
    pos, neg = int(label.sum()), int((~label).sum())
    return float((ranks[label].sum() - pos * (pos + 1) / 2) / (pos * neg))


def logistic_fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 25) -> np.ndarray:
    """L2-penalised logistic regression by Newton's method; weights with the intercept last."""
    x1 = np.c_[x, np.ones(len(x))]
    w = np.zeros(x1.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-x1 @ w))
        grad = x1.T @ (p - y) + l2 * w
        hess = (x1 * (p * (1 - p))[:, None]).T @ x1 + l2 * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    return w


def probe(x: np.ndarray, y: np.ndarray, folds: int = 5) -> float:
    """Held-out AUC of a logistic probe of `y` on `x`: each fold scored by a fit on the others."""
    score = np.zeros(len(y))
    part = np.arange(len(y)) % folds
    for f in range(folds):
        w = logistic_fit(x[part != f], y[part != f].astype(float))
        score[part == f] = np.c_[x[part == f], np.ones((part == f).sum())] @ w
    return auc(score, y)


def encoder_probe(result_rows: Sequence[tuple[str, int, bool]]) -> tuple[float, float, int]:
    """(AUC of the stated confidence, held-out AUC of a probe on the hashed encoding — as CPP's policy
    reads the response — for whether the response is right, responses) over (text, confidence, right)."""
    enc = HashedEncoder()
    x = np.stack([enc.encode_one(text) for text, _, _ in result_rows])
    conf = np.array([c for _, c, _ in result_rows], dtype=float)
    y = np.array([r for _, _, r in result_rows], dtype=bool)
    return auc(conf, y), probe(x, y), len(y)


def collect(
    config: str, p: float, items: int, seeds: Sequence[int], split: str, args: dict
) -> tuple[list[Row], list[tuple[str, int, bool]]]:
    """Random pruning at keep rate `p` on the config's team and first dataset's `split`: its keep
    decisions, and every response decided on (the text CPP's policy reads, its confidence, whether
    it is right)."""
    cfg = load_config(config)
    agents = local_agents(cfg)
    team = [agents[m] for m in cfg.team()]
    ds = cfg.datasets[0]
    samples = load_benchmark(ds.name, split, limit=items, seed=ds.seed)
    method = build_method("random_prune", {"protocol": "update", **args, "p": p})
    rewards = list(REWARDS.values())
    rows: list[Row] = []
    responses: list[tuple[str, int, bool]] = []

    async def run() -> None:
        for seed in seeds:
            for s in samples:
                res = await run_episode(method, team, s, grader_for(s), seed, cfg.rounds, ds.name)
                rows.extend(rows_of(res, rewards))
                for rec in res.trajectory[:-1]:
                    for j, view in enumerate(res.state.views[rec.round]):
                        text = response_text(view, j, tag=False)
                        responses.append((text, view.confidence, rec.correct_after[j]))

    asyncio.run(run())
    return rows, responses


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="examples/cpp_calibrated.yaml", help="team, prices, dataset, rounds")
    p.add_argument("--p", type=float, nargs="+", default=[0.5, 0.9], help="random pruning's keep rates")
    p.add_argument("--items", type=int, default=1000)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--split", default="train", help="never the test split: this chooses what to declare")
    p.add_argument(
        "--method-args",
        default=json.dumps(DU_WHOLE),
        help="JSON arguments of every method (a protocol's method_args)",
    )
    args = p.parse_args(argv)
    if args.split == "test":
        p.error("--split: measure on train or validation items; test items are for declared protocols")
    names = list(REWARDS)
    for rate in args.p:
        rows, responses = collect(
            args.config, rate, args.items, args.seeds, args.split, json.loads(args.method_args)
        )
        lines, clear, agree = table(rows, [f"return keep − prune: {n}" for n in names])
        print(
            f"\nrandom pruning p = {rate}: {len(rows)} decisions, {args.items} {args.split} items, seeds {args.seeds}"
        )
        print("\n".join(lines))
        print(
            f"kinds of decision whose effect on the reader's answer exceeds 2 se: {clear}; a reward's direction agrees on:"
        )
        for name, n in zip(names, agree, strict=True):
            print(f"- {name}: {n} of {clear}")
        by_conf, by_text, count = encoder_probe(responses)
        print(
            f"whether a response is right ({count} responses decided on): AUC of its stated confidence "
            f"{by_conf:.3f}; of a logistic probe on its hashed encoding (5-fold, held out) {by_text:.3f}"
        )


if __name__ == "__main__":
    main()
