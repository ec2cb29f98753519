"""`sweep validate|plan|run CONFIG`: check a sweep config, show its expanded grid, run it.

Exit codes: 0 success; 2 bad config or usage (one line naming the field and the fix, nothing
written); 1 a failure while running."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from sweep import interrupt
from sweep.config.flags import add_engine_flags, add_overrides, positive
from sweep.config.sweep import ConfigError, SweepConfig, load_config
from sweep.run.preflight import TrackingFailed, Unreachable, preflight
from sweep.store.cache import CacheBusy
from sweep.store.repair import DiskFull
from sweep.store.targets import own_dir
from sweep.tracking.choice import OFF, TrackingChoice, choose_tracking

COMMANDS = ("validate", "plan", "run")


_positive = positive("--limit 5")


def with_limit(cfg: SweepConfig, n: int) -> SweepConfig:
    """`cfg` with at most `n` items per dataset (the first n of the subset the dataset entry picks)."""
    datasets = [ds.model_copy(update={"limit": min(ds.limit or n, n)}) for ds in cfg.datasets]
    return cfg.model_copy(update={"datasets": datasets})


def _dry_run(cfg: SweepConfig, plan: Any) -> str:
    """What `sweep run` would do now, read from the output dir without writing to it."""
    from sweep.store.results import ResultStore

    out_dir = Path(cfg.output_dir).resolve()
    stored = ResultStore.peek_ids(out_dir)
    todo = [t for t in plan.tasks if t.episode_id not in stored]
    return (
        f"dry run: {len(plan.tasks)} episodes planned, {len(plan.tasks) - len(todo)} already stored in "
        f"{out_dir}, {len(todo)} to run (up to {plan.calls()} model calls for the whole plan); "
        "nothing was started or written"
    )


def _with_config(sub: Any, name: str, help: str) -> argparse.ArgumentParser:
    s = sub.add_parser(name, help=help)
    s.add_argument("config", help="sweep YAML, e.g. examples/quickstart.yaml")
    add_overrides(s, "a config value", "--set rounds=3 --set datasets.0.limit=5")
    s.add_argument("--out", help="output dir (overrides output_dir)")
    s.add_argument(
        "--limit", type=_positive, metavar="N", help="at most N items of each dataset (a quick look)"
    )
    return s


def add_parser(sub: Any) -> None:
    """`validate`, `plan` and `run`, each on a sweep config with `--set`, `--out` and `--limit`."""
    _with_config(sub, "validate", "check a config; changes nothing")
    plan_cmd = _with_config(
        sub, "plan", "show the expanded grid with episode and call counts; changes nothing"
    )
    plan_cmd.add_argument(
        "--estimate",
        nargs="?",
        const="",
        metavar="CURVE",
        help="also estimate tokens, wall time and (GPU engines) GPU-hours, each model on its engine's "
        "profile (llama_cpp: measured on a CPU; vllm: a batch curve; simulated: latency_s), or all on CURVE",
    )
    run_cmd = _with_config(sub, "run", "run every episode not stored yet, then log to MLflow")
    add_engine_flags(run_cmd)
    run_cmd.add_argument(
        "--dry-run",
        action="store_true",
        help="say what would run (episodes stored and to run, model calls); start and write nothing",
    )
    run_cmd.add_argument(
        "--join",
        action="store_true",
        help="if another driver owns the output dir, help it: run only episodes nobody has claimed",
    )
    run_cmd.add_argument(
        "--drivers",
        type=_positive,
        default=1,
        metavar="N",
        help="driver processes on this machine: this one and N-1 local --join workers (in-process engines only)",
    )


def run(args: argparse.Namespace) -> int:
    """Validate, plan or run `args.config`; the exit code."""
    # Off a terminal rich assumes 80 columns; logs (ray job logs, CI) read better unwrapped.
    out = Console(soft_wrap=True) if sys.stdout.isatty() else Console(width=160, soft_wrap=True)
    err = Console(stderr=True, soft_wrap=True)
    try:
        cfg = load_config(args.config, args.overrides, args.out)
        if args.limit is not None:
            cfg = with_limit(cfg, args.limit)
        from sweep.run.plan import build_plan

        plan = build_plan(cfg)  # the datasets load: an offset past the end is a config error too
        if args.command == "validate":
            out.print(f"ok: {args.config} is a valid sweep config (sweep id {cfg.identity()})")
            return 0
        if args.command == "plan":
            out.print(_plan_table(cfg, plan))
            out.print(
                f"{len(plan.groups)} groups, {len(plan.tasks)} episodes, up to {plan.calls()} model calls"
            )
            pending = [e.name for e in cfg.methods if e.name == "consistency" and e.args.get("match")]
            if pending:
                out.print(
                    f"+ {len(pending)} consistency entries matched to another method's cost: planned once it has run"
                )
            if args.estimate is not None:
                from sweep.run.estimate import estimate, estimate_lines, load_curve

                for line in estimate_lines(estimate(cfg, load_curve(args.estimate), plan)):
                    out.print(line, highlight=False)
            return 0
        if args.dry_run:
            out.print(_plan_table(cfg, plan))
            out.print(_dry_run(cfg, plan))
            return 0
        t = cfg.tracking
        tracking = choose_tracking(
            Path(cfg.output_dir),
            t.enabled,
            t.uri,
            t.experiment,
            no_tracking=args.no_tracking,
            flag_uri=args.tracking_uri,
        )
        if not tracking.on:  # the resolved config says so (`sweep report` reads it)
            cfg = cfg.model_copy(update={"tracking": t.model_copy(update={"enabled": False})})
        # Before anything is written: the servers answer, and the output dir is ours (or joined).
        from sweep.run.drivers import check_drivers

        check_drivers(cfg, args.drivers, args.address)
        preflight(tracking, args.address or cfg.ray.address)
        lock = own_dir(Path(cfg.output_dir).resolve(), "sweep", cfg.identity(), join=args.join)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)  # plain print: one line, never wrapped
        return 2
    except Unreachable as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    try:
        return _run(cfg, plan, args, tracking, out, err, lock)
    finally:
        lock.release()


def _run(
    cfg: SweepConfig,
    plan: Any,
    args: argparse.Namespace,
    tracking: TrackingChoice,
    out: Console,
    err: Console,
    lock: Any,
) -> int:
    from sweep.run import costmatch
    from sweep.run.runner import run_sweep
    from sweep.run.summary import summary_table
    from sweep.store.results import ResultStore

    interrupt.install()  # cleanup (engines, Ray, the lock) runs on SIGTERM too
    try:
        if any(costmatch.is_pending(e) for e in cfg.methods):  # run what they match first, then settle them
            first = costmatch.without_pending(cfg)
            run_sweep(first, tracking=OFF, address=args.address, console=err, lock=lock)
            cfg = costmatch.settle(cfg, ResultStore(Path(cfg.output_dir).resolve()))
            plan = None  # the settled entries are planned now (run_sweep builds it)
            err.print(
                "matched: " + "; ".join(f"{e.name}({e.args})" for e in cfg.methods if e.name == "consistency")
            )
        outcome = run_sweep(
            cfg, plan, tracking=tracking, address=args.address, console=err, lock=lock, drivers=args.drivers
        )
    except KeyboardInterrupt:
        err.print("interrupted: finished episodes are stored; rerun the same command to continue")
        return 1
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Exception as e:
        known = isinstance(e, DiskFull | TrackingFailed | CacheBusy)  # their messages say what to do
        print(f"error: {e}" if known else f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    from actors.registry import engine_traits

    simulated = all(engine_traits(cfg.models[m].engine).simulated for m in cfg.team())
    if outcome.summary:  # a worker's is empty: the owner summarises the sweep
        out.print(summary_table(outcome.summary, simulated))
        from sweep.run.debate_effect import print_effects

        print_effects(out, cfg, plan, outcome.out_dir)  # the vote per round, answers debate changed
    out.print(
        f"episodes: {outcome.planned} planned, {outcome.skipped} already stored, "
        f"{outcome.stats.done if outcome.stats else 0} run now"
    )
    out.print(f"results: {outcome.out_dir}/episodes, {outcome.out_dir}/turns (Parquet)")
    if outcome.tracking_uri:
        from sweep.tracking.ui import hint

        line = hint(outcome.tracking_uri, outcome.parent_run_id, outcome.out_dir)
        out.print(line, highlight=False, markup=False)
    if outcome.stats and outcome.stats.failures:
        err.print(
            f"[red]{len(outcome.stats.failures)} episode(s) failed[/]; rerun to retry them. First: "
            f"{outcome.stats.failures[0]}",
            highlight=False,
        )
        return 1
    return 0


def _plan_table(cfg: SweepConfig, plan: object) -> Table:
    from sweep.run.plan import Plan
    from sweep.run.summary import plan_labels, row_key

    assert isinstance(plan, Plan)
    labels = plan_labels(plan)  # the labels the run's summary and `sweep report` show
    table = Table(title=f"plan: {cfg.name} (sweep id {cfg.identity()})")
    for col in ("method", "dataset", "seed", "agents", "rounds", "episodes", "calls"):
        table.add_column(col)
    for g in plan.groups:
        n = len(g.samples)
        table.add_row(
            labels[row_key(g)],
            f"{g.dataset.name}/{g.dataset.split}",
            str(g.seed),
            str(len(g.seats)),
            str(g.rounds),
            str(n),
            str(n * g.calls()),
        )
    return table
