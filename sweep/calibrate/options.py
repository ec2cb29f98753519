"""The `sweep calibrate` command line: its options, their defaults and their value checks (argparse
types whose errors are one line, exit 2)."""

from __future__ import annotations

import argparse
import math
import os
from typing import Any

from sweep.config.flags import positive

TRIALS = 10  # after the coordinate search that starts a fit (`sweep.calibrate.warm`): a local refinement
FIT_SEEDS = 1
FIT_LIMIT = None  # every item the predictions run: a fit on fewer fits their realised difficulties
WORKERS = min(8, os.cpu_count() or 1)  # processes: one per core, as most work is simulated episodes


_count = positive("60")


def _seed(text: str) -> int:
    if not text.lstrip("-").isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number, e.g. 0")
    return int(text)


def _minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of minutes, e.g. 25")
    return value


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the `calibrate` subcommand to `sweep`'s subparsers."""
    s = subparsers.add_parser(
        "calibrate", help="fit a simulated population to a paper's table, then predict its held-out rows"
    )
    s.add_argument("targets", help="targets file, e.g. calibration/cpp.yaml")
    s.add_argument("--out", help="output dir (default runs/calibrate_<population>)")
    s.add_argument(
        "--trials", type=_count, default=TRIALS, metavar="N", help=f"trials in all (default {TRIALS})"
    )
    s.add_argument(
        "--sampler",
        choices=("cmaes", "tpe"),
        default="cmaes",
        help="Optuna sampler (default cmaes, around the start)",
    )
    s.add_argument("--seed", type=_seed, default=0, metavar="S", help="the sampler's seed (default 0)")
    s.add_argument(
        "--fit-seeds",
        type=_count,
        default=FIT_SEEDS,
        metavar="K",
        help=f"each trial runs its debate rows on the targets' first K seeds (default {FIT_SEEDS}); "
        "the other rows score their expected accuracy",
    )
    s.add_argument(
        "--fit-limit",
        type=_count,
        default=FIT_LIMIT,
        metavar="N",
        help="each trial runs at most N items per dataset (default: each dataset's own subset, "
        "the items the predictions run; fewer is faster but fits those items' difficulties)",
    )
    s.add_argument(
        "--workers",
        type=_count,
        default=WORKERS,
        metavar="N",
        help=f"processes a large evaluation's episodes are split over (default {WORKERS}: one per core, "
        "at most 8); the results do not depend on it",
    )
    s.add_argument(
        "--joint-moves",
        action="store_true",
        help="the start's search also moves each member's skill and spread on a benchmark together "
        "(slower, several times so where debate rows are many)",
    )
    s.add_argument("--timeout", type=_minutes, metavar="MIN", help="stop starting trials after MIN minutes")
    s.add_argument("--population-out", metavar="PATH", help="also write the fitted population file here")
    s.add_argument(
        "--predict-only",
        metavar="REF",
        help="skip the fit: predict on a population (a packaged name, a .yaml path, or v1)",
    )
    s.add_argument("--no-v1", action="store_true", help="do not run v1 beside the population")
    s.add_argument(
        "--fit-only",
        action="store_true",
        help="report the fit rows alone (no predict row is run: no peeking)",
    )
    s.add_argument(
        "--checkpoint",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="run the learned row LABEL with this checkpoint (rows that need one are skipped otherwise)",
    )
    s.add_argument(
        "--tracking-uri",
        help="MLflow tracking URI (default MLFLOW_TRACKING_URI, else sqlite:///OUT/mlflow.db)",
    )
    s.add_argument("--no-tracking", action="store_true", help="skip MLflow")
    return s
