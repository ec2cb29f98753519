"""`sweep view OUT [OUT ...]`: browse episodes in a local web page, or `--export FILE` a static HTML
page of some of them. Exit codes: 0 success (or Ctrl-C); 2 an unreadable output dir or a bad
option (one line naming it and the fix)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("view", help="browse episodes and transcripts on http://127.0.0.1, or --export a page")
    p.add_argument("out", nargs="+", type=Path, help="output dirs of sweeps or studies (episodes/ inside)")
    p.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (0: any free port)")
    p.add_argument(
        "--export", type=Path, metavar="FILE", help="write a static HTML viewer instead of serving"
    )
    p.add_argument("--limit", type=int, default=200, help="episodes in an export (default 200)")
    p.add_argument("--method", help="export only this method (its label as the viewer shows it)")
    p.add_argument("--dataset", help="export only this dataset/split")


def run(args: argparse.Namespace) -> int:
    from sweep.report.load import ReportInputError
    from sweep.view.data import Query, QueryError, ViewData

    if args.limit < 1:
        print("error: --limit must be at least 1", file=sys.stderr)
        return 2
    try:
        data = ViewData(list(args.out))
        query = Query(method=args.method, dataset=args.dataset)
        query.check()
    except (ReportInputError, QueryError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.export:
        from sweep.view.export import export_html

        n = export_html(data, args.export, query, args.limit)
        print(f"exported {n} episodes to {args.export}")
        return 0
    return _serve(data, args.port)


def _serve(data: Any, port: int) -> int:
    from sweep.view.server import make_server

    try:
        server = make_server(data, port)
    except OSError as e:
        print(
            f"error: cannot listen on 127.0.0.1:{port} ({e.strerror}); pick another --port", file=sys.stderr
        )
        return 2
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    print(f"sweep view: {url} ({data.index.height} episodes; Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
