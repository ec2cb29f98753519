"""The `sweep` command: one subcommand per room, each with its own `add_parser(sub)` and `run(args)`.

Exit codes: 0 success; 2 bad config or usage (one line naming the field and the fix, nothing
written); 1 a failure while running."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from sweep import data_cli, listing
from sweep.calibrate import cli as calibrate_cli
from sweep.cluster import cli as cluster_cli
from sweep.report import cli as report_cli
from sweep.run import cli as run_cli
from sweep.study import cli as study_cli
from sweep.tracking import ui as mlflow_cli
from sweep.train import cli as train_cli
from sweep.view import cli as view_cli

# Each command's module, in `sweep --help`'s order; `run_cli` serves validate, plan and run.
COMMANDS: dict[str, ModuleType] = {
    "data": data_cli,
    "list": listing,
    "study": study_cli,
    "train": train_cli,
    "calibrate": calibrate_cli,
    "report": report_cli,
    "view": view_cli,
    "cluster": cluster_cli,
    "mlflow": mlflow_cli,
    **{name: run_cli for name in run_cli.COMMANDS},
}


def _version() -> str:
    """The installed distribution's version (pyproject's), and Ray's, MLflow's and Optuna's pins."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        own = version("debate-sweep")
    except PackageNotFoundError:  # run from a checkout that was never installed
        own = "unknown (not installed)"
    deps = []
    for dist in ("ray", "mlflow", "optuna", "vllm"):
        try:
            deps.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            continue
    return f"{own} ({', '.join(deps)})" if deps else own


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="sweep", description="Multi-agent debate sweeps on Ray, logged to MLflow."
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = p.add_subparsers(dest="command", required=True)
    for module in dict.fromkeys(COMMANDS.values()):  # each module once, in order
        module.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    code: int = COMMANDS[args.command].run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
