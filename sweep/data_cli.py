"""`sweep data check NAME [--path FILE] [--split S]`: grade a benchmark's own gold answers.

Loads the benchmark (from `--path`, else the shared copy, else Hugging Face), grades every gold answer
and every gold solution text (and, for multiple choice, the correct option's text), and prints
'N records: N correct, 0 wrong, 0 unparsable'. Exit codes: 0 all correct; 1 any is not (failing item
ids are listed, never question text); 2 an unknown benchmark or split (with a did-you-mean), or a
missing or unreadable file. Imports only `data`: no Ray, no MLflow.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

MAX_LISTED = 20  # failing ids printed; the count says how many there were


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `data` (with its `check` command) to the `sweep` command's subparsers."""
    data = subparsers.add_parser("data", help="benchmark data: check a local copy")
    commands = data.add_subparsers(dest="data_command", required=True)
    check = commands.add_parser("check", help="grade every gold answer of a benchmark; all must be correct")
    check.add_argument("name", help="benchmark, e.g. gsm8k, math500, mmlu_pro, gpqa_diamond")
    check.add_argument("--path", help="a local file or folder (default: the shared copy, else Hugging Face)")
    check.add_argument("--split", default="test", help="split, e.g. test, train, cpp:dev (default: test)")
    return data


def run(args: argparse.Namespace) -> int:
    """Run `sweep data check`; returns the exit code."""
    try:
        from data.benchmarks.check import check_benchmark  # the graders load only for `sweep data check`

        report = check_benchmark(args.name, args.split, args.path)
    except KeyError as e:  # unknown benchmark: the registry's message has the did-you-mean
        print(f"error: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    except (FileNotFoundError, ValueError, OSError) as e:
        print(f"error: {_one_line(e)}", file=sys.stderr)
        return 2
    print(f"{args.name} {args.split}: {report.summary()}")
    print(f"  {report.details()}")
    for item_id, check, verdict in report.failures[:MAX_LISTED]:
        print(f"  {verdict}: {item_id} ({check})")
    if len(report.failures) > MAX_LISTED:
        print(f"  ... and {len(report.failures) - MAX_LISTED} more")
    return 0 if report.ok else 1


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def main(argv: list[str] | None = None) -> int:
    """`python -m sweep.data_cli check NAME ...`, for use before the `sweep` command is wired."""
    parser = argparse.ArgumentParser(prog="sweep")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return run(parser.parse_args(["data", *(sys.argv[1:] if argv is None else argv)]))


if __name__ == "__main__":
    sys.exit(main())
