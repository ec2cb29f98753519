"""CPP trained from scratch against Full-Debate and the heterogeneous baselines on the simulated team of
examples/cpp_simulated.yaml (3 models of different skill, verbosity and price; 3 agents x 2 debate
rounds), with and without one adversarial seat. Per seed: CPP's policy gradient trains a policy
(examples/train_cpp_simulated.yaml, `pg.seed` = the seed) on arith's train split, and again with the
adversarial seat in the team (Adv-CPP); then every method runs on the same arith test items under that
seed, on the honest team and on the team whose seat 1 (sim-mid) is adversarial:

- Full-Debate (fixed clique), and Full-Debate with CPP's early-round truncation (CPP's network made to
  keep everything, `threshold` ~ 0, with the same caps);
- CPP (thresholded policy; the policy its training kept as best by the periodic evaluation on
  training items — model selection never sees the test items — and, once, its final policy), and CPP
  with truncation at the `--truncate` settings (App. C): a quantile for every seat ("0.9"), or one
  per seat ("0.85/0.95/0.95", the paper's q85/q95/q95; labelled so);
- random pruning, p = 0.5 (CPP's Random), and p = CPP's measured keep rate (equal edges);
- vote (one answer per model); consistency fuse and best with m matched to CPP-with-truncation's
  measured cost (`debate.baselines.matched_m`; best = the model with the best round-0 accuracy);
- under the adversary, also Adv-CPP.

Reported: accuracy (mean ± std over seeds), price-weighted cost per task and as % of Full-Debate on the
same items, kept responses per episode (of 18), exact McNemar tests on paired (seed, item) episodes,
accuracy drops under the adversary, how often CPP's and Adv-CPP's honest readers keep the adversary's
response and an honest peer's (per seed), and an accuracy-cost Pareto plot. In-process (asyncio, no Ray, no
MLflow); the trainings are the ones `sweep train` runs (`sweep.train.pg.train`) and resume from their
checkpoints. Simulated agents: not a claim about LLMs.

    .venv/bin/python bench/cpp_vs_full.py                       # 5 seeds, 80 updates each
    .venv/bin/python bench/cpp_vs_full.py --seeds 2 --updates 10 --items 50   # a quick look
    .venv/bin/python bench/cpp_vs_full.py --protocol bench/protocols/NAME.yaml --out runs/NAME
                                                # seeds, items, training, targets: bench/protocols/README.md
    .venv/bin/python bench/cpp_vs_full.py --protocol ... --out runs/NAME --reuse runs/EARLIER
                                                # an earlier run's trainings where fingerprints match
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import multiprocessing
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from bench import protocol_bench as protocol  # noqa: E402
from bench.cpp_restarts import choose, reuse  # noqa: E402
from bench.cpp_tally import (  # noqa: E402
    FULL,
    RANDOM_EQUAL,
    Tally,
    cut,
    evaluate,
    labels,
    merge,
    qlabel,
    report,
    setting,
)
from bench.protocol import RESTART_STRIDE, Protocol  # noqa: E402
from data.benchmarks.registry import load_benchmark  # noqa: E402
from debate.baselines import Consistency, matched_m, strongest  # noqa: E402
from debate.episode import Agent  # noqa: E402
from debate.methods import build_method  # noqa: E402
from sweep.config.errors import ConfigError  # noqa: E402
from sweep.engines.pool import local_agents  # noqa: E402
from sweep.train.config import load_train  # noqa: E402
from sweep.train.pg import train  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "train_cpp_simulated.yaml"
# The README's figures of this bench were measured on population v1: the training config's own base
# is now the calibrated population (examples/cpp_calibrated.yaml), so the bench names v1's.
V1_BASE = "sweep=cpp_simulated.yaml"


def training_dir(seed: int, adversarial: bool, restart: int = 0) -> str:
    """The dir name of one training under --out: `vanilla-<seed>` or `adv-<seed>`, `-r<r>` for r > 0."""
    return ("adv" if adversarial else "vanilla") + f"-{seed}" + (f"-r{restart}" if restart else "")


def setup_and_agents(
    seed: int,
    updates: int,
    out: str,
    sets: list[str],
    adversarial: bool,
    proto: Protocol | None = None,
    restart: int = 0,
) -> tuple[Any, dict[str, Agent]]:
    """One training's setup (under a protocol: its config, overrides and seed; restart r > 0 trains
    with seed + RESTART_STRIDE r, in its own dir) and its agents."""
    extra = [
        f"overrides=[datasets.0.split=train, datasets.0.limit=1000, 'seeds=[0]', concurrency=64{', agents.1.adversarial=true' if adversarial else ''}]"
    ]
    tag = training_dir(seed, adversarial, restart)
    trained = seed + RESTART_STRIDE * restart
    own: tuple[Path, list[str], list[str]] = (
        CONFIG,
        [V1_BASE, f"pg.seed={trained}", f"pg.updates={updates}", *extra, *sets],
        [],
    )
    config, keys, base = own if proto is None else proto.training(trained, adversarial)
    if proto is not None and adversarial:
        base = [*base, "agents.1.adversarial=true"]
    setup = load_train(config, ["tracking.enabled=false", *keys], base, f"{out}/{tag}")
    return setup, local_agents(setup.base)


def train_seed(*job: Any) -> Any:
    """One training (`setup_and_agents`' arguments; resumes from its checkpoints); in a worker process."""
    setup, agents = setup_and_agents(*job)
    return train(setup, agents, console=Console(stderr=True, quiet=True))


def accuracy_on(
    policy: str, team: list[Agent], items: Sequence[Any], seeds: Sequence[int], shared: Mapping[str, Any]
) -> float:
    """A CPP policy's mean accuracy over `seeds` on `items` (the restarts' choice, under `adv_choice`)."""
    method = build_method("cpp", {**shared, "checkpoint": policy})
    return statistics.mean(asyncio.run(evaluate(method, team, items, s)).accuracy for s in seeds)


def teams(agents: dict[str, Agent]) -> tuple[list[Agent], list[Agent]]:
    honest = [agents["sim-strong"], agents["sim-mid"], agents["sim-cheap"]]
    return honest, [honest[0], dataclasses.replace(honest[1], adversarial=True), honest[2]]


def run_seed(
    seed: int,
    policies: tuple[str, str, str],
    items: list[Any],
    agents: dict[str, Agent],
    truncate: list[str],
    notes: dict[str, list[Any]],
    extra: Sequence[tuple[str, str, dict[str, Any]]] = (),
    shared: Mapping[str, Any] | None = None,
) -> dict[str, dict[str, Tally]]:
    """Every method on both teams under one seed; `policies`: CPP's best-evaluated and final policy,
    Adv-CPP's best-evaluated policy; `extra`: a protocol's baselines (label, method, args, with its
    method_args); `shared`: a protocol's method_args, given to every other method too."""
    policy, final, adv_policy = policies
    build = lambda name, a=None: build_method(name, {**(shared or {}), **(a or {})})  # noqa: E731
    cpp = {"checkpoint": policy}
    out: dict[str, dict[str, Tally]] = {}
    for name, team in zip(("vanilla", "adversarial"), teams(agents), strict=True):
        got: dict[str, Tally] = {}
        ev = lambda m, t=team: asyncio.run(evaluate(m, t, items, seed))  # noqa: E731
        got[FULL] = ev(build("fixed", {"topology": "clique"}))
        for q in truncate:
            got[f"{FULL}, truncated {qlabel(q)}"] = ev(build("cpp", {**cpp, "threshold": 1e-9, **cut(q)}))
        got["CPP"] = ev(build("cpp", cpp))
        got["CPP, final policy"] = ev(build("cpp", {"checkpoint": final}))
        for q in truncate:
            got[f"CPP, truncated {qlabel(q)}"] = ev(build("cpp", {**cpp, **cut(q)}))
        if name == "adversarial":
            got["Adv-CPP"] = ev(build("cpp", {"checkpoint": adv_policy}))
            for q in truncate:
                got[f"Adv-CPP, truncated {qlabel(q)}"] = ev(
                    build("cpp", {"checkpoint": adv_policy, **cut(q)})
                )
        rate = round(got["CPP"].kept / (18 * len(items)), 2)
        got["random pruning p=0.5"] = ev(build("random_prune", {"p": 0.5}))
        got[RANDOM_EQUAL] = ev(build("random_prune", {"p": rate}))
        notes.setdefault(f"{name}: {RANDOM_EQUAL}, p", []).append(rate)
        got["vote"] = ev(build("vote"))
        target = got[f"CPP, truncated {qlabel(truncate[0])}"].cost / len(items)
        seat = [c / len(items) for c in got[FULL].seat_cost]
        keys = [(a.model, a.adversarial) for a in team]
        best = strongest({m: r / len(items) for m, r in got[FULL].seat_right.items()})
        for pool in ("fuse", best):
            m = matched_m(seat, Consistency(pool=pool).members(keys), target)
            label = f"consistency {'fuse' if pool == 'fuse' else 'best'}, m matched to CPP truncated {qlabel(truncate[0])}"
            got[label] = ev(build("consistency", {"m": m, "pool": pool}))
            notes.setdefault(f"{name}: {label}: m" + ("" if pool == "fuse" else " (best model)"), []).append(
                m if pool == "fuse" else f"{m} ({pool})"
            )
        for label, method, margs in extra:
            got[label] = ev(build_method(method, margs))  # margs hold the method_args already
        for label in ("CPP", "Adv-CPP") if name == "adversarial" else ():
            for author, (kept, decided) in sorted(got[label].peer_keeps.items()):
                key = f"{name}: {label}, honest readers keep the {'adversary' if author == 'adversary' else 'honest peer'}'s response, share"
                notes.setdefault(key, []).append(round(kept / max(1, decided), 2))
        out[name] = got
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, help="trainings per team, seeds 0..N-1 (default 5)")
    parser.add_argument("--updates", type=int, help="policy-gradient updates per training (default 80)")
    parser.add_argument("--items", type=int, help="arith test items evaluated per seed (default 200)")
    parser.add_argument(
        "--truncate",
        type=setting,
        nargs="+",
        help="truncation settings, each a quantile or one per seat (0.85/0.95/0.95); the first sets the matched cost; default 0.9 0.75",
    )
    parser.add_argument("--out", default=str(ROOT / "runs" / "bench_cpp"), help="trainings (resumable)")
    parser.add_argument("--png", help="the plot (default: pareto.png in --out)")
    parser.add_argument(
        "--set", dest="sets", action="append", default=[], help="a training key, e.g. reward.k=0.5"
    )
    parser.add_argument("--jobs", type=int, default=2, help="trainings in parallel processes")
    parser.add_argument("--protocol", help="a pre-registered protocol (bench/protocols/README.md)")
    parser.add_argument(
        "--reuse",
        help="an earlier run's --out: its training dirs stand in for the same trainings (fingerprint checked on resume)",
    )
    args = parser.parse_args(argv)
    args.png = args.png or str(Path(args.out) / "pareto.png")
    start = time.perf_counter()
    with protocol.one_line():
        proto = protocol.from_flags(
            args, "cpp", "arith", seeds=5, updates=80, items=200, truncate=["0.9", "0.75"]
        )
    seeds = proto.train_seeds if proto else list(range(args.seeds))
    test_seeds = proto.test_seeds if proto else seeds  # each training's evaluation seed
    items = protocol.test_items(proto, "arith", "test", args.items)
    extra = proto.baseline_rows() if proto else []
    own, restarts = (proto.restarts, proto.adv_restarts) if proto else (1, 1)
    jobs = [(s, args.updates, args.out, args.sets, False, proto, r) for s in seeds for r in range(own)]
    jobs += [(s, args.updates, args.out, args.sets, True, proto, r) for s in seeds for r in range(restarts)]
    choice, honest = (proto.adv_choice, proto.choice) if proto else (None, None)
    on, on_honest = (
        load_benchmark(c.dataset, c.split, c.items, c.offset, c.shuffle_seed) if c else []
        for c in (choice, honest)
    )
    with protocol.one_line():  # each training's setup, once: the protocol's checks and --reuse read them
        setups = [setup_and_agents(*job)[0] for job in jobs] if proto or args.reuse else []
    if proto:
        with protocol.one_line():
            for key, n, c in (("restarts", own, honest), ("adv_restarts", restarts, choice)):
                if n > 1 and c is None and any(s.cfg.eval_every == 0 for s in setups):
                    raise ConfigError(
                        f"{key}: choosing a restart needs evaluations; set eval_every > 0 in train.set"
                    )
                if c is not None and c.dataset != "arith":
                    name = key.replace("restarts", "choice")
                    raise ConfigError(f"{name}.dataset: this bench evaluates on arith, not '{c.dataset}'")
            rows = labels(args.truncate, [label for label, _, _ in extra])
            protocol.begin(args.protocol, proto, args.out, setups, items, rows, ("accuracy", "cost"), 2,
                           args.updates, on, on_honest)  # fmt: skip
    if args.reuse:
        with protocol.one_line():
            wanted = {Path(s.out).name: s.fingerprint() for s in setups}
            args.reused = f"{len(reuse(args.reuse, args.out, wanted))} of {len(jobs)}"
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        outcomes = list(pool.map(train_seed, *zip(*jobs, strict=True)))
    print(f"trained {len(jobs)} policies ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    vanilla, adversarial = [], []
    notes: dict[str, list[Any]] = {}  # the report's per-seed lines
    for i, (seed, test_seed) in enumerate(zip(seeds, test_seeds, strict=True)):
        _, agents = setup_and_agents(seed, args.updates, args.out, args.sets, False, proto)
        mine = outcomes[own * i : own * (i + 1)]
        tried = outcomes[len(seeds) * own + restarts * i : len(seeds) * own + restarts * (i + 1)]
        shared = proto.method_args if proto else {}
        picked = []
        for runs, team, c, where, who in (
            (mine, teams(agents)[0], honest, on_honest, "vanilla: CPP"),
            (tried, teams(agents)[1], choice, on, "adversarial: Adv-CPP"),
        ):

            def accuracy(
                path: str, t: list[Agent] = team, w: Any = where, c: Any = c, m: Any = shared
            ) -> float:
                return accuracy_on(path, t, w, c.seeds if c else [], m)

            pick, key, note = choose(runs, c is not None, accuracy, who)
            if key:
                notes.setdefault(key, []).append(note)
            picked.append(runs[pick])
        mine, adv = picked
        policies = (str(mine.best or mine.policy), str(mine.policy), str(adv.best or adv.policy))
        got = run_seed(
            test_seed,
            policies,
            items,
            agents,
            args.truncate,
            notes,
            extra,
            proto.method_args if proto else None,
        )
        vanilla.append(got["vanilla"])
        adversarial.append(got["adversarial"])
        print(f"seed {seed}: CPP {got['vanilla']['CPP'].accuracy:.3f}, Full-Debate {got['vanilla'][FULL].accuracy:.3f} "
              f"({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)  # fmt: skip
    report(merge(vanilla), merge(adversarial), notes, args, time.perf_counter() - start, proto)


if __name__ == "__main__":
    main()
