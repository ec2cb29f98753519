"""`sweep study CONFIG`: run (or resume) an Optuna study over a debate method's arguments;
`--best` writes a ready-to-run sweep config with the best params for the test split.

Exit codes as for `sweep run`: 0 success; 2 a bad config or usage (one line, nothing run);
1 a failure while running (finished trials and episodes stay stored; rerun to continue)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from sweep import interrupt
from sweep.config.flags import add_engine_flags, add_overrides
from sweep.config.sweep import ConfigError
from sweep.run.preflight import Unreachable, preflight
from sweep.store.ownership import DirLock
from sweep.store.targets import own_dir, replace_file, unwritable
from sweep.study.config import StudySetup, load_study
from sweep.tracking.choice import TrackingChoice, choose_tracking, tracker_for


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the `study` subcommand to `sweep`'s subparsers."""
    s = subparsers.add_parser("study", help="tune a method's arguments with Optuna on one shared engine pool")
    s.add_argument("config", help="study YAML, e.g. examples/study_random_simulated.yaml")
    add_overrides(s, "a study key", "--set n_trials=40 --set sampler.seed=1", base=True)
    s.add_argument("--out", help="output dir (overrides output_dir)")
    add_engine_flags(s)
    s.add_argument(
        "--join", action="store_true", help="if another driver runs this study here, share its trials"
    )
    s.add_argument(
        "--validate", action="store_true", help="check the study config and its space; run nothing"
    )
    s.add_argument(
        "--best",
        nargs="?",
        const="",
        metavar="PATH",
        help="write a sweep config with the best params (the Pareto set) on the test split "
        "to PATH (default <output_dir>/best.yaml) and exit",
    )
    return s


def run(args: argparse.Namespace) -> int:
    """Run the `study` subcommand parsed by `add_parser`; returns the exit code."""
    try:
        setup = load_study(args.config, args.overrides, args.base_overrides, args.out)
        if args.best is None:
            from sweep.run.plan import build_plan

            build_plan(setup.base)  # the datasets load (a missing file is a config error, before any trial)
        if args.validate:
            space = setup.space
            print(
                f"ok: {args.config} is a valid study: {setup.cfg.method.name} over {len(space.params)} "
                f"params ({', '.join(space.names)}), objectives {setup.cfg.objectives}, {setup.storage_url()}"
            )
            return 0
        if args.best is not None:
            from sweep.study.best import write_best

            return write_best(setup, args.best)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)  # plain print: one line, never wrapped
        return 2
    return _run(setup, args)


def _run(setup: StudySetup, args: argparse.Namespace) -> int:
    from sweep.study.runner import StudyRunner

    err = Console(stderr=True, soft_wrap=True)
    locks: list[DirLock] = []
    t = setup.cfg.tracking
    tracking = choose_tracking(
        setup.out, t.enabled, t.uri, t.experiment, no_tracking=args.no_tracking, flag_uri=args.tracking_uri
    )
    try:
        try:
            # Before anything is written: the servers answer; the output dir (new, or a study's) is ours.
            preflight(tracking, args.address or setup.base.ray.address)
            locks.append(own_dir(setup.out, "study", setup.fingerprint(), join=args.join))
            _mark_study(setup)
            for lock in study_locks(setup)[1:]:  # the storage file's, when it lives elsewhere
                try:
                    lock.acquire(args.join)
                except OSError as e:
                    raise unwritable(lock.path.parent, e, "storage") from None
                locks.append(lock)
            runner = StudyRunner(setup, err)
        except (ConfigError, Unreachable) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2 if isinstance(e, ConfigError) else 1
        return _run_locked(setup, args, tracking, runner, err)
    finally:
        for lock in locks:
            lock.release()


def _mark_study(setup: StudySetup) -> None:
    """Write `study.resolved.yaml` whole, before any other file: a driver joining at this moment
    reads the dir as a study's (`sweep.store.targets.dir_kind`), never as the base sweep's, whose
    `config.resolved.yaml` the study also writes."""
    text = yaml.safe_dump(setup.cfg.model_dump(mode="json"), sort_keys=False)
    try:
        replace_file(setup.out / "study.resolved.yaml", text.encode("utf-8"))
    except OSError as e:
        raise unwritable(setup.out, e, "output_dir") from None


def study_locks(setup: StudySetup) -> list[DirLock]:
    """The output dir's lock, and one next to a storage file that lives elsewhere."""
    locks = [DirLock.for_output(setup.out, setup.fingerprint())]
    url = setup.storage_url()
    local = url.removeprefix("journal:") if url.startswith("journal:") else None
    if url.startswith("sqlite:///"):
        local = url.removeprefix("sqlite:///").split("?")[0]
    if local and setup.out not in Path(local).resolve().parents:
        path = Path(local).resolve()
        locks.append(DirLock(path.with_name(path.name + ".owner"), f"storage {url}", setup.fingerprint()))
    return locks


def _run_locked(
    setup: StudySetup, args: argparse.Namespace, tracking: TrackingChoice, runner: Any, err: Console
) -> int:
    from sweep.engines.pool import EnginePool
    from sweep.run.runner import write_resolved_config

    interrupt.install()  # cleanup (engines, Ray, the locks) runs on SIGTERM too
    write_resolved_config(setup.base, setup.out)  # after `_mark_study`: the dir already reads as a study's
    runner.tracker = _tracker(setup, tracking, runner)
    status, code = "FINISHED", 0
    try:
        with EnginePool(setup.base, setup.base.team(), args.address, err) as pool:
            outcome = runner.run(pool.agents, pool.simulated)
        err.print(f"episodes: {outcome.episodes_run} run now; trials finished here: {len(outcome.ran)}")
    except KeyboardInterrupt:
        err.print("interrupted: finished trials and episodes are stored; rerun the same command to continue")
        status, code = "KILLED", 1
    except Exception as e:  # noqa: BLE001 - the CLI's last line of defence: one line, exit 1
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        status, code = "FAILED", 1
    try:
        _report(setup, runner, status, err)
    except Exception as e:  # noqa: BLE001 - e.g. the tracking server went away; the study is stored
        print(
            f"error: reporting failed ({type(e).__name__}: {str(e)[:200]}); the study is stored, "
            "rerun to log it, or pass --no-tracking",
            file=sys.stderr,
        )
        code = 1
    return code


def _tracker(setup: StudySetup, tracking: TrackingChoice, runner: Any) -> Any:
    """The study's MLflow logger, or its null twin with tracking off."""
    from sweep.study.tracking import NullStudyTracker, StudyTracker

    return tracker_for(
        tracking, lambda uri: StudyTracker(uri, setup, runner.study, runner.lock), NullStudyTracker
    )


def _report(setup: StudySetup, runner: Any, status: str, err: Console) -> None:
    """Plots, the MLflow parent's summary, and the best trial (or Pareto set) on stdout."""
    from sweep.study.tracking import write_plots

    out = Console(soft_wrap=True) if sys.stdout.isatty() else Console(width=160, soft_wrap=True)
    plots, skipped = write_plots(runner.study, setup.cfg.objectives, setup.out / "plots")
    for note in skipped:
        err.print(f"plot skipped: {note}", highlight=False)
    tracker = runner.tracker
    tracker.sync(runner.study, set(runner.outcome.ran))
    tracker.finish(runner.study, plots, status)
    if tracker.uri is not None:
        from sweep.tracking.ui import hint

        out.print(hint(tracker.uri, tracker.parent_id, setup.out), highlight=False, markup=False)
    out.print(_best_table(runner.study, setup))
    from sweep.study.progress import tie_notes
    from sweep.study.silence import silence_notes
    from sweep.study.storage import best_trials

    trials = runner.study.get_trials(deepcopy=False)
    notes = tie_notes(trials, setup.cfg.objectives)
    if setup.training is not None:
        notes += silence_notes(trials, best_trials(runner.study), len(setup.base.team()))
    for note in notes:
        out.print(note, highlight=False, markup=False)
    out.print(f"study: {setup.cfg.name} in {setup.storage_url()}; plots in {setup.out / 'plots'}")


def _best_table(study: Any, setup: StudySetup) -> Table:
    from sweep.study.tracking import study_summary

    summary = study_summary(study, setup.cfg.objectives)
    rows = summary.get("pareto", summary.get("best", []))
    counts = ", ".join(f"{v} {k.lower()}" for k, v in sorted(summary["trials"].items()))
    table = Table(
        title=f"{'Pareto set' if 'pareto' in summary else 'best trial'} of {setup.cfg.name} ({counts})"
    )
    for col in ("trial", *setup.cfg.objectives, "params"):
        table.add_column(col)
    for r in rows:
        params = ", ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r["params"].items()
        )
        table.add_row(str(r["number"]), *(f"{r['values'][o]:.4g}" for o in setup.cfg.objectives), params)
    return table


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m sweep.study.cli study CONFIG ...`, until `sweep` itself has the subcommand."""
    parser = argparse.ArgumentParser(prog="sweep")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
