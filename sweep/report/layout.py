"""The papers' layout: one table per model team, methods as rows (config order), benchmarks as
columns, the best accuracy of each column in bold.

- `pear` (PEAR Table 1): accuracy mean ± std over seeds, `0.645 ± 0.013`.
- `rumad` (RUMAD Table 2): ACC (%), TC (k tokens per task) and the token saving against MAD (the
  clique) on the same items.
- `cpp` (CPP Tables 2–3): Acc (%) mean ± std and Cost as % of Full-Debate (the clique) on the same
  items; price-weighted when the team has prices, else tokens."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # polars is imported by the callers that pass frames; `sweep --help` needs LAYOUTS only
    import polars as pl

LAYOUTS = ("pear", "rumad", "cpp")


@dataclass(frozen=True)
class TextTable:
    """A rendered table: a title, a header and rows of cell strings (markdown bold `**x**` allowed)."""

    title: str
    columns: list[str]
    rows: list[list[str]]


def _pm(mean: float | None, std: float | None, scale: float, digits: int) -> str:
    if mean is None:
        return "–"
    text = f"{mean * scale:.{digits}f}"
    return text if std is None else f"{text} ± {std * scale:.{digits}f}"


def _cost_pct(row: dict[str, Any]) -> str:
    value = row["cost_pct_clique"] if row["pareto_axis"] == "cost_per_task" else row["tokens_pct_clique"]
    return "–" if value is None else f"{value:.2f}%"


def _tokens_k(row: dict[str, Any]) -> str:
    return f"{row['tokens_per_task'] / 1000:.1f}"


def _saving(row: dict[str, Any]) -> str:
    """Tokens saved against MAD (the clique) on the same items; N/A for the clique itself."""
    if row["reference"] == row["method_key"]:
        return "N/A"
    pct = row["tokens_pct_clique"]
    return "–" if pct is None else f"{pct - 100:+.2f}%"


# layout -> the sub-columns under each benchmark: (header, cell of a summary row)
CELLS: dict[str, list[tuple[str, Callable[[dict[str, Any]], str]]]] = {
    "pear": [("", lambda r: _pm(r["accuracy_mean"], r["accuracy_std"], 1.0, 3))],
    "rumad": [
        ("ACC (%)", lambda r: _pm(r["accuracy_mean"], None, 100.0, 1)),
        ("TC (k/task)", _tokens_k),
        ("Saving", _saving),
    ],
    "cpp": [
        ("Acc (%)", lambda r: _pm(r["accuracy_mean"], r["accuracy_std"], 100.0, 2)),
        ("Cost", _cost_pct),
    ],
}


def _benchmarks(frame: pl.DataFrame, order: list[tuple[str, str]]) -> list[tuple[str, str]]:
    present = set(frame.select("dataset", "split").iter_rows())
    return [b for b in order if b in present] + sorted(present - set(order))


def _bench_name(dataset: str, split: str, splits_per_dataset: dict[str, int]) -> str:
    return dataset if splits_per_dataset[dataset] == 1 else f"{dataset}/{split}"


def paper_tables(
    summary: pl.DataFrame,
    order: list[str],
    layout: str = "pear",
    benchmarks: list[tuple[str, str]] | None = None,
) -> list[TextTable]:
    """One `TextTable` per team, in the papers' layout `layout` (one of LAYOUTS); benchmark columns in
    the order `benchmarks` gives (the configs'), others after them."""
    if layout not in CELLS:
        raise ValueError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    tables = []
    for (team,), frame in sorted(summary.group_by("team"), key=lambda g: str(g[0])):
        benches = _benchmarks(frame, benchmarks or [])
        per_dataset: dict[str, int] = {}
        for d, _ in benches:
            per_dataset[d] = per_dataset.get(d, 0) + 1
        cells = CELLS[layout]
        columns = ["method"] + [
            f"{_bench_name(d, s, per_dataset)} {h}".strip() for d, s in benches for h, _ in cells
        ]
        by_key = {(r["method_key"], r["dataset"], r["split"]): r for r in frame.iter_rows(named=True)}
        best = {
            b: max((r["accuracy_mean"] for (_, d, s), r in by_key.items() if (d, s) == b), default=None)
            for b in benches
        }
        rows = []
        for key in [k for k in order if any(kk == k for kk, _, _ in by_key)]:
            label = next(r["method_label"] for (kk, _, _), r in by_key.items() if kk == key)
            line = [label]
            for b in benches:
                row = by_key.get((key, *b))
                for i, (_, cell) in enumerate(cells):
                    text = "–" if row is None else cell(row)
                    bold = row is not None and i == 0 and row["accuracy_mean"] == best[b]
                    line.append(f"**{text}**" if bold else text)
            rows.append(line)
        tables.append(TextTable(f"{team} ({layout} layout)", columns, rows))
    return tables
