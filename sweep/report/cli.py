"""`sweep report OUT [OUT ...]`: the papers' statistics and plots over one or more output dirs (a
sweep's or a study's). Exit codes: 0 success; 2 an unreadable output dir, a report dir that holds
something other than an earlier report, one another `sweep report` is writing, or one that cannot be
written (one line naming it and the fix; nothing written); 1 a failure while writing (a full disk:
the previous report stays)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sweep.report.layout import LAYOUTS


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="accuracy ± std, McNemar, Wilson, Spearman, Pareto and per-round plots into OUT/report/",
    )
    p.add_argument("out", nargs="+", type=Path, help="output dirs of sweeps or studies (episodes/ inside)")
    p.add_argument("--report-dir", type=Path, help="where to write (default: <first OUT>/report)")
    p.add_argument("--layout", choices=LAYOUTS, default="pear", help="the papers' table layout to print")
    p.add_argument("--tracking-uri", help="MLflow store of the sweeps (default: as `sweep run` chose)")
    p.add_argument("--no-tracking", action="store_true", help="do not log the report to MLflow")


def run(args: argparse.Namespace) -> int:
    from sweep.config.errors import ConfigError
    from sweep.report.build import ReportDiskFull, build_report
    from sweep.report.load import ReportInputError

    report_dir = args.report_dir or args.out[0] / "report"
    try:
        report = build_report(list(args.out), report_dir, args.layout)
    except (ReportInputError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ReportDiskFull as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Exception as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(report.markdown)
    print(f"report: {report.report_dir / 'index.html'} (tables as CSV and Parquet, plots/ beside it)")
    if not args.no_tracking:
        _log(args, report)
    return 0


def _log(args: argparse.Namespace, report: Any) -> None:
    from sweep.report.load import read_episodes
    from sweep.report.mlflow_log import log_report

    for out in args.out:
        # Unreadable parts were named while the report was built: say it once.
        ids = (
            read_episodes([out], ["episode_id", "sweep_id"], warn=lambda _: None)["sweep_id"].unique().sort()
        )
        try:
            lines = log_report(out, [str(i) for i in ids.to_list()], report.report_dir, args.tracking_uri)
        except Exception as e:  # the report is written; a tracking problem must not hide it
            lines = [f"mlflow: could not log the report for {out}: {type(e).__name__}: {e}"]
        for line in lines:
            print(line, file=sys.stderr)
