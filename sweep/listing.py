"""`sweep list benchmarks|methods|engines|populations`: what a config can name, with each one's
arguments and defaults, read from the registries themselves (so the list cannot drift from the code)."""

from __future__ import annotations

import argparse
import inspect
import json
from typing import Any

from rich.console import Console
from rich.table import Table

KINDS = ("benchmarks", "methods", "engines", "populations")


def add_parser(sub: Any) -> None:
    s = sub.add_parser("list", help="list the benchmarks, methods, engines or populations a config can name")
    s.add_argument("what", choices=KINDS, help="benchmarks, methods, engines or populations")


def run(args: argparse.Namespace) -> int:
    tables = {"benchmarks": benchmarks, "methods": methods, "engines": engines, "populations": populations}
    Console(width=200, soft_wrap=True).print(tables[args.what]())
    return 0


def _show(value: Any) -> str:
    if value is inspect.Parameter.empty:
        return "(required)"
    return json.dumps(value) if isinstance(value, str | bool | dict | list) or value is None else str(value)


def benchmarks() -> Table:
    from data.catalog import default_benchmark_dir
    from data.registry import CATALOG

    where = default_benchmark_dir()
    t = Table(title=f"benchmarks (local files: {where or 'none found; set DEBATE_SWEEP_BENCHMARKS'})")
    for col in ("name", "answers", "splits", "online source"):
        t.add_column(col)
    for name, info in sorted(CATALOG.items()):
        kind = f"choice (≤{info.n_choices})" if info.kind == "choice" else info.kind
        t.add_row(name, kind, ", ".join(info.split_names()), info.source or "generated")
    return t


def methods() -> Table:
    from debate.methods import METHODS

    t = Table(title="methods (`methods: [{name, args}]`; every argument below is optional)")
    for col in ("name", "protocol", "arguments (defaults)"):
        t.add_column(col)
    for name, d in sorted(METHODS.items()):
        args = ", ".join(f"{k}={_show(v)}" for k, v in d.defaults().items())
        t.add_row(name, d.protocol or "— (no rounds)", args)
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
