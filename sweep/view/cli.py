"""`sweep view OUT [OUT ...]`: browse episodes in a local web page, or `--export FILE` a static HTML
page of some of them. Exit codes: 0 success (or Ctrl-C); 2 an unreadable output dir, a bad option,
or an --export FILE that may not or cannot be written (another file, busy, read-only); 1 a failure
while exporting (disk full, an episode's part file unreadable). Each error is one line naming the
field and the fix; a failed export leaves the file as it was."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

MAX_EXPORT = 100_000  # episodes in one export: each carries its full transcript


def add_parser(sub: Any) -> None:
    p = sub.add_parser("view", help="browse episodes and transcripts on http://127.0.0.1, or --export a page")
    p.add_argument("out", nargs="+", type=Path, help="output dirs of sweeps or studies (episodes/ inside)")
    p.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (0: any free port)")
    p.add_argument(
        "--export", type=Path, metavar="FILE", help="write a static HTML viewer instead of serving"
    )
    p.add_argument(
        "--limit", type=int, default=200, help=f"episodes in an export (default 200, at most {MAX_EXPORT})"
    )
    p.add_argument("--method", help="export only this method (its label as the viewer shows it)")
    p.add_argument("--dataset", help="export only this dataset/split")
    p.add_argument(
        "--episode", metavar="ID", help="open this episode (its id); the URL printed ends #episode=ID"
    )


def run(args: argparse.Namespace) -> int:
    from sweep.config.errors import ConfigError
    from sweep.report.load import ReportInputError
    from sweep.view.data import Query, QueryError, ViewData
    from sweep.view.episode import PartError
    from sweep.view.export_target import DiskFull, export_target

    if not 1 <= args.limit <= MAX_EXPORT:
        return _fail(f"--limit must be from 1 to {MAX_EXPORT} episodes, got {args.limit}", 2)
    if not 0 <= args.port <= 65535:
        return _fail(f"--port must be from 0 to 65535 (0: any free port), got {args.port}", 2)
    try:
        export = export_target(args.export) if args.export is not None else None  # before any data is read
        data = ViewData(list(args.out))
        query = Query(method=args.method, dataset=args.dataset)
        query.check()
        data.check_known(query)
        if args.episode is not None:
            if export is not None:
                raise QueryError("--episode opens one episode in the served viewer; leave out --export")
            data.check_episode(args.episode)
    except (ReportInputError, QueryError, ConfigError) as e:
        return _fail(str(e), 2)
    if export is None:
        return _serve(data, args.port, args.episode)
    from sweep.view.export import export_html

    try:
        n = export_html(data, export, query, args.limit)
    except ConfigError as e:  # refused, busy or unwritable target
        return _fail(str(e), 2)
    except DiskFull as e:
        return _fail(str(e), 1)
    except PartError as e:  # every matching episode unreadable: bad input, as for `sweep report`
        return _fail(f"--export: {e}", 2)
    print(f"exported {n} episodes to {export}")
    return 0


def _fail(message: str, code: int) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def episode_url(base: str, episode_id: str) -> str:
    """The viewer's URL that opens one episode: `<base>#episode=<id>` (ids are hex; quoted anyway)."""
    from urllib.parse import quote

    return f"{base}#episode={quote(episode_id, safe='')}"


def _serve(data: Any, port: int, episode: str | None = None) -> int:
    from sweep.view.server import make_server

    try:
        server = make_server(data, port)
    except OSError as e:
        print(
            f"error: cannot listen on 127.0.0.1:{port} ({e.strerror}); pick another --port", file=sys.stderr
        )
        return 2
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    url = episode_url(url, episode) if episode else url
    print(f"sweep view: {url} ({data.index.height} episodes; Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
