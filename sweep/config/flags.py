"""The flags the `sweep` subcommands share, and their argument types: a bad value is argparse's
one-line usage error with an example of a good one (exit 2, before anything runs)."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def positive(example: str) -> Callable[[str], int]:
    """A positive whole number (`--limit 5`); the error shows `example`."""

    def parse(text: str) -> int:
        if not text.isdigit() or int(text) < 1:
            raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number; e.g. {example}")
        return int(text)

    return parse


def add_overrides(s: argparse.ArgumentParser, what: str, example: str, base: bool = False) -> None:
    """`--set KEY=VALUE` (repeatable) overriding a key of `what`; with `base`, `--base-set` too, for
    the base sweep a study or a training draws its episodes from."""
    s.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override {what}, e.g. {example}",
    )
    if base:
        s.add_argument(
            "--base-set",
            dest="base_overrides",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="override a key of the base sweep, e.g. --base-set datasets.0.limit=50",
        )


def add_engine_flags(s: argparse.ArgumentParser) -> None:
    """`--address` and the tracking flags of a command that runs episodes and logs them; the command
    reads the tracking flags once (`sweep.tracking.choice.choose_tracking`)."""
    s.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS, else a local Ray)")
    s.add_argument(
        "--tracking-uri", help="MLflow tracking URI (default: MLFLOW_TRACKING_URI, else sqlite in --out)"
    )
    s.add_argument("--no-tracking", action="store_true", help="skip MLflow")
