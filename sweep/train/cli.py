"""`sweep train CONFIG`: train (or resume training) a router's policy with PPO on the engine pool.

Exit codes as for `sweep run`: 0 success; 2 a bad config or usage, an output dir another command
owns or that holds another kind of output, a damaged or foreign training state (one line, nothing
started); 1 a failure while training, a full disk included (the last recorded update stays on disk;
rerun to resume from it)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import yaml
from rich.console import Console

from sweep import interrupt
from sweep.config.flags import add_engine_flags, add_overrides
from sweep.config.sweep import ConfigError
from sweep.store.repair import is_disk_full
from sweep.store.targets import own_dir, replace_file, unwritable
from sweep.train.config import TrainSetup, load_train

_RERUN = "rerun the same command to resume from the last recorded update"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the `train` subcommand to `sweep`'s subparsers."""
    s = subparsers.add_parser(
        "train", help="train a router's policy (RUMAD: PPO; CPP: policy gradient) on debate rollouts"
    )
    s.add_argument("config", help="training YAML, e.g. examples/train_rumad_simulated.yaml")
    add_overrides(s, "a training key", "--set ppo.updates=50 --set reward.alpha_sparsity=0", base=True)
    s.add_argument("--out", help="output dir (overrides output_dir)")
    add_engine_flags(s)
    s.add_argument("--validate", action="store_true", help="check the training config; run nothing")
    return s


def run(args: argparse.Namespace) -> int:
    """Run the `train` subcommand parsed by `add_parser`; returns the exit code."""
    try:
        setup = load_train(args.config, args.overrides, args.base_overrides, args.out)
        from sweep.run.plan import build_plan

        build_plan(setup.base)  # the datasets load: a missing file is a config error, before Ray starts
        if args.validate:
            print(
                f"ok: {args.config} is a valid training ({setup.cfg.method.name}, fingerprint {setup.fingerprint()})"
            )
            return 0
        lock = own_dir(setup.out, "train", setup.fingerprint())  # before anything is written
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)  # plain print: one line, never wrapped
        return 2
    try:
        return _owned(setup, args)
    finally:
        lock.release()


def _owned(setup: TrainSetup, args: argparse.Namespace) -> int:
    """The training, once its output dir is ours: the recorded state checked, then the run."""
    from sweep.train import state

    try:
        state.clean_temps(setup.out)  # a killed training's: nobody else writes here while we hold it
        resume = state.load(setup)  # damaged, or another config's: refused before Ray starts
        if resume is not None:
            state.restore(resume, setup.out)  # the policy it names: there and the one recorded
        _write_configs(setup)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a full disk: _write_configs words every other failure as Unwritable
        _no_space(e.filename or setup.out, "rerun")
        return 1
    return _run(setup, args)


def _no_space(where: object, then: str) -> None:
    print(f"error: no space left on the device while writing {where}; free space and {then}", file=sys.stderr)


def _write_configs(setup: TrainSetup) -> None:
    """The training's config, then the base sweep's: in this order, so a dir cut short between the two
    still reads as a training (`sweep.store.targets.dir_kind`), never as a sweep. Each whole or not at all."""
    from sweep.run.runner import CONFIG_FILE, write_resolved_config

    text = yaml.safe_dump(setup.cfg.model_dump(mode="json"), sort_keys=False)
    for target in (setup.out / "train.resolved.yaml", setup.out / CONFIG_FILE):
        try:  # each through a temp file of its own, removed on failure (`sweep.store.targets.replace_file`)
            if target.name == CONFIG_FILE:
                write_resolved_config(setup.base, setup.out)
            else:
                replace_file(target, text.encode("utf-8"))
        except OSError as e:
            if is_disk_full(e):
                raise
            raise unwritable(target, e, "output_dir") from None


def _tracker(setup: TrainSetup, args: argparse.Namespace) -> Any:
    """The training's MLflow logger, or its null twin: the command's one tracking choice."""
    from sweep.tracking.choice import choose_tracking, tracker_for
    from sweep.train.tracking import NullTrainTracker, TrainTracker

    t = setup.cfg.tracking
    choice = choose_tracking(
        setup.out, t.enabled, t.uri, t.experiment, no_tracking=args.no_tracking, flag_uri=args.tracking_uri
    )
    return tracker_for(choice, lambda uri: TrainTracker(uri, setup), NullTrainTracker)


def _run(setup: TrainSetup, args: argparse.Namespace) -> int:
    from sweep.engines.pool import EnginePool
    from sweep.train import state
    from sweep.train.run import train

    err = Console(stderr=True, soft_wrap=True)
    out = Console(soft_wrap=True) if sys.stdout.isatty() else Console(width=160, soft_wrap=True)
    tracker = _tracker(setup, args)
    interrupt.install()  # cleanup (engines, Ray) runs on SIGTERM too
    try:
        with EnginePool(setup.base, setup.base.team(), args.address, err) as pool:
            outcome = train(setup, pool.agents, tracker, err)
    except KeyboardInterrupt:
        err.print(
            "interrupted: the last recorded update is in checkpoints/; rerun the same command to resume"
        )
        return 1
    except state.SaveFailed as e:  # already one line: the file, why, and the update a rerun resumes from
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - the CLI's last line of defence: one line, exit 1
        if is_disk_full(e):  # e.g. the plots or MLflow's store, after the state was recorded
            _no_space(e.filename if isinstance(e, OSError) and e.filename else setup.out, _RERUN)
        else:
            print(f"error: {type(e).__name__}: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    last = outcome.history[-1] if outcome.history else {}
    out.print(
        f"trained {len(outcome.history)} updates ({outcome.resumed_from} before this run); last rollout accuracy "
        f"{last.get('accuracy', float('nan')):.3f}, tokens/task {last.get('tokens_per_task', float('nan')):.0f}"
    )
    out.print(f"policy: {outcome.policy} (sha {outcome.digest})")
    if outcome.best is not None:
        evals = [h for h in outcome.history if "eval.return" in h]
        top = max(evals, key=lambda h: h["eval.return"])
        out.print(
            f"best evaluated policy: {outcome.best} (update {top['update']:.0f}, eval accuracy {top['eval.accuracy']:.3f})"
        )
    from sweep.train.next_run import eval_command

    out.print(f"evaluate it: {eval_command(setup, outcome.policy)}", highlight=False, markup=False)
    if tracker.uri is not None:
        from sweep.tracking.ui import hint

        out.print(hint(tracker.uri, tracker.run_id, setup.out), highlight=False, markup=False)
        out.print(f"checkpoint URI: runs:/{tracker.run_id}/policy.npz", highlight=False, markup=False)
    return 0
