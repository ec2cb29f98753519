"""`sweep list benchmarks|methods|engines|populations`: what a config can name, with each one's
arguments and defaults, read from the registries themselves (so the list cannot drift from the code)."""

from __future__ import annotations

import argparse
import inspect
import json
import shutil
from typing import Any

from rich.console import Console
from rich.table import Table

KINDS = ("benchmarks", "methods", "engines", "populations")


def add_parser(sub: Any) -> None:
    s = sub.add_parser("list", help="list the benchmarks, methods, engines or populations a config can name")
    s.add_argument("what", choices=KINDS, help="benchmarks, methods, engines or populations")


WIDTH = (80, 200)  # columns a table is fitted to: the terminal's (COLUMNS), within these bounds
PIPED_WIDTH = 160  # when stdout is not a terminal and COLUMNS is unset


def width() -> int:
    """The columns to fit a table to: the terminal's, or `PIPED_WIDTH` for a pipe or a file."""
    columns = shutil.get_terminal_size((PIPED_WIDTH, 24)).columns
    return max(WIDTH[0], min(WIDTH[1], columns))


def run(args: argparse.Namespace) -> int:
    tables = {"benchmarks": benchmarks, "engines": engines, "populations": populations}
    columns = width()
    table = methods(columns) if args.what == "methods" else tables[args.what]()
    # A fixed width: rich's own guess is 80 columns off a terminal; the table's cells wrap within it.
    Console(width=columns).print(table)
    return 0


def _show(value: Any) -> str:
    if value is inspect.Parameter.empty:
        return "(required)"
    return json.dumps(value) if isinstance(value, str | bool | dict | list) or value is None else str(value)


def benchmarks() -> Table:
    from data.benchmarks.catalog import default_benchmark_dir
    from data.benchmarks.registry import CATALOG

    where = default_benchmark_dir()
    t = Table(title=f"benchmarks (local files: {where or 'none found; set DEBATE_SWEEP_BENCHMARKS'})")
    for col in ("name", "answers", "splits", "online source"):
        t.add_column(col)
    for name, info in sorted(CATALOG.items()):
        kind = f"choice (≤{info.n_choices})" if info.kind == "choice" else info.kind
        t.add_row(name, kind, ", ".join(info.split_names()), info.source or "generated")
    return t


def methods(columns: int = PIPED_WIDTH) -> Table:
    """Each method's name, protocol, one-line summary and arguments (wrapped), fitted to `columns`;
    from 140 columns on every summary stays on one line."""
    from debate.methods import METHODS

    t = Table(title="methods (`methods: [{name, args}]`; every argument below is optional)")
    summaries = [d.summary for d in METHODS.values()]
    t.add_column("name", no_wrap=True)
    t.add_column("protocol", no_wrap=True)
    # Kept whole where the width allows (from 140 columns); a narrower terminal wraps it as well.
    whole = max(map(len, summaries), default=0) if columns >= 140 else None
    t.add_column("what it does", width=whole)
    t.add_column("arguments (defaults)", overflow="fold")
    for name, d in sorted(METHODS.items()):
        args = ", ".join(f"{k}={_show(v)}" for k, v in d.defaults().items())
        t.add_row(name, d.protocol or "— (no rounds)", d.summary, args)
    return t


def engines() -> Table:
    from actors.registry import engine_arguments, engine_names

    t = Table(title="engines (`models.<name>.engine`, with `args`)")
    for col in ("engine", "arguments (defaults)"):
        t.add_column(col)
    for name in engine_names():
        args = ", ".join(f"{k}={_show(v)}" for k, v in engine_arguments(name).items())
        t.add_row(name, args)
    return t


def populations() -> Table:
    from actors.populations import HOME, PopulationError, load, names

    t = Table(title=f"populations (the simulated engine's `args.population`; files in {HOME})")
    for col in ("name", "version", "members", "digest", "description"):
        t.add_column(col)
    for name in names():
        if name == "v1":
            t.add_row(name, "v1", "—", "—", "the simulated engine's own arguments (skill, calibration, …)")
            continue
        try:
            pop = load(name)
        except PopulationError as e:  # one broken file must not hide the others
            t.add_row(name, "?", "—", "—", f"unreadable: {str(e).splitlines()[0] if str(e) else e!r}")
            continue
        t.add_row(name, pop.version, ", ".join(pop.members), pop.digest, pop.description)
    return t
