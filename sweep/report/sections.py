"""The report's tables as text: each computed table turned into `TextTable`s with readable cells,
shared by the markdown summary (stdout) and the HTML report."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from sweep.report.layout import TextTable, paper_tables


@dataclass(frozen=True)
class Tables:
    """Every computed table of a report (also written as CSV and Parquet)."""

    summary: pl.DataFrame
    mcnemar: pl.DataFrame
    spearman: pl.DataFrame
    per_round: pl.DataFrame
    order: list[str]
    notes: list[str] = field(default_factory=list)
    benchmarks: list[tuple[str, str]] = field(default_factory=list)  # the columns' order


@dataclass(frozen=True)
class Section:
    heading: str
    text: str  # a paragraph above the tables
    tables: list[TextTable]


def num(value: Any, digits: int = 3) -> str:
    """A float with `digits` decimals, an int as is, '–' for missing."""
    if value is None or (isinstance(value, float) and value != value):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def pvalue(p: float | None) -> str:
    if p is None:
        return "–"
    return f"{p:.3g}" if p >= 1e-4 else f"{p:.2e}"


def _pm(mean: Any, std: Any) -> str:
    return num(mean) if std is None else f"{num(mean)} ± {num(std)}"


def _ci(lo: Any, hi: Any) -> str:
    return "–" if lo is None else f"[{num(lo)}, {num(hi)}]"


def _group(r: dict[str, Any]) -> str:
    return f"{r['team']} · {r['dataset']}/{r['split']}"


def summary_section(t: Tables) -> Section:
    columns = [
        "team · dataset",
        "method",
        "episodes",
        "accuracy (mean ± std)",
        "95% CI",
        "answered acc",
        "unparsable",
        "tokens/task",
        "calls/task",
        "cost/task",
        "tokens % clique",
        "cost % clique",
        "W2R",
        "R2W",
        "acceptance",
        "Src Conf",
        "Pareto",
    ]
    rows = [
        [
            _group(r),
            r["method_label"],
            num(r["episodes"]),
            _pm(r["accuracy_mean"], r["accuracy_std"]),
            _ci(r["accuracy_lo"], r["accuracy_hi"]),
            _pm(r["answered_accuracy_mean"], r["answered_accuracy_std"]),
            num(r["unparsable_rate"]),
            num(r["tokens_per_task"], 0),
            num(r["calls_per_task"], 1),
            num(r["cost_per_task"], 6),
            num(r["tokens_pct_clique"], 1),
            num(r["cost_pct_clique"], 1),
            num(r.get("w2r")),
            num(r.get("r2w")),
            num(r.get("acceptance")),
            num(r.get("src_conf")),
            num(r["pareto"]),
        ]
        for r in t.summary.iter_rows(named=True)
    ]
    text = (
        "Accuracy over all items (an unparsable final answer counts as wrong): mean ± sample std over "
        "seeds, and the Wilson 95% interval over all (item, seed) episodes; 'answered acc' counts only "
        "episodes whose vote has an answer. '% clique' compares with Full-Debate (the fixed clique) on "
        "the same (item, seed) pairs. Diagnostics are means over episodes (PEAR App. C.4)."
    )
    return Section("Summary", text, [TextTable("", columns, rows)])


def mcnemar_section(t: Tables) -> Section:
    columns = [
        "team · dataset",
        "A",
        "B",
        "paired",
        "A acc",
        "B acc",
        "b (A✓ B✗)",
        "c (A✗ B✓)",
        "p",
        "p (Holm)",
        "A win rate [95% CI]",
        "note",
    ]
    rows = [
        [
            _group(r),
            r["a_label"],
            r["b_label"],
            num(r["paired"]),
            num(r["a_accuracy"]),
            num(r["b_accuracy"]),
            num(r["b_count"]),
            num(r["c_count"]),
            pvalue(r["p"]),
            pvalue(r["p_holm"]),
            "–" if r["win_rate"] is None else f"{num(r['win_rate'])} {_ci(r['win_lo'], r['win_hi'])}",
            r["note"]
            or (f"{r['only_a']} A-only, {r['only_b']} B-only unpaired" if r["only_a"] or r["only_b"] else ""),
        ]
        for r in t.mcnemar.iter_rows(named=True)
    ]
    text = (
        "Exact two-sided McNemar test on the (item, seed) pairs both methods ran; Holm's correction over "
        "all pairs of one team and dataset. Win rate: b / (b + c), with its Wilson 95% interval."
    )
    return Section("Paired comparisons (McNemar)", text, [TextTable("", columns, rows)])


def spearman_section(t: Tables) -> Section:
    rows = [
        [r["a"], r["b"], num(r["methods"]), num(r["rho"]), r["note"]]
        for r in t.spearman.iter_rows(named=True)
    ]
    text = "Spearman's rho of the methods' accuracy rankings between two (team, dataset, split) columns."
    if not rows:
        text += " Only one column here: no ranking to compare."
    return Section(
        "Rank correlation (Spearman)", text, [TextTable("", ["A", "B", "methods", "rho", "note"], rows)]
    )


def pareto_section(t: Tables) -> Section:
    rows = [
        [
            _group(r),
            r["method_label"],
            num(r["accuracy_mean"]),
            num(r[r["pareto_axis"]], 6 if r["pareto_axis"] == "cost_per_task" else 0),
            r["pareto_axis"].replace("_per_task", ""),
        ]
        for r in t.summary.filter(pl.col("pareto")).iter_rows(named=True)
    ]
    text = (
        "Methods no other method beats on both accuracy and cost (price-weighted where priced, else tokens)."
    )
    return Section(
        "Accuracy–cost Pareto front",
        text,
        [TextTable("", ["team · dataset", "method", "accuracy", "cost", "axis"], rows)],
    )


def rounds_section(t: Tables) -> Section:
    tables = []
    pr = t.per_round
    for values, frame in sorted(pr.group_by("team", "dataset", "split"), key=lambda g: tuple(map(str, g[0]))):
        rounds = sorted(frame["round"].unique().to_list())
        rows = []
        for key in [k for k in t.order if k in set(frame["method_key"].to_list())]:
            mine = frame.filter(pl.col("method_key") == key)
            acc = dict(zip(mine["round"].to_list(), mine["vote_accuracy"].to_list(), strict=True))
            rows.append([mine["method_label"][0], *(num(acc.get(r)) for r in rounds)])
        title = " · ".join(map(str, values))
        tables.append(TextTable(title, ["method", *(f"round {r}" for r in rounds)], rows))
    text = "Accuracy of the majority vote after each round (round 0: the independent answers)."
    return Section("Per-round accuracy", text, tables)


def sections(t: Tables, layout: str) -> list[Section]:
    paper = Section(
        f"Papers' layout ({layout})",
        "Methods as rows, benchmarks as columns, one table per model team; best accuracy in bold.",
        paper_tables(t.summary, t.order, layout, t.benchmarks),
    )
    return [
        paper,
        summary_section(t),
        mcnemar_section(t),
        spearman_section(t),
        pareto_section(t),
        rounds_section(t),
    ]


# Cells come from results (method labels, dataset and team names): in markdown they must stay text.
_LINE_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")  # control chars break a table row
_ENTITY = re.compile(r"&(?=#?\w+;)")  # `&lt;` would render as `<`: keep it as typed
_BOLD_NUMBER = re.compile(r"\*\*([-–\d.,±% ]+)\*\*")  # the papers' layout bolds the best accuracy


def md_text(text: str) -> str:
    """`text` as literal markdown inline text: no line break, pipe, HTML, link, code or emphasis."""
    text = _LINE_BREAKS.sub(" ", text).replace("\\", "\\\\")
    text = _ENTITY.sub("&amp;", text).replace("<", "&lt;").replace(">", "&gt;")
    for ch in "|`*~":
        text = text.replace(ch, "\\" + ch)
    # `_` inside a word never opens emphasis (CommonMark), so `cot_sc` stays readable.
    text = re.sub(r"(?<![^\W_])_|_(?![^\W_])", r"\\_", text)
    # A link needs `](` or `][` (labels cannot define references): break those pairs.
    return re.sub(r"\]([(\[])", r"]\\\1", text)


def md_cell(text: str) -> str:
    """A table cell: `md_text`, keeping the layout's bold on a number (`**0.645 ± 0.013**`)."""
    bold = _BOLD_NUMBER.fullmatch(text)
    return f"**{md_text(bold.group(1))}**" if bold else md_text(text)


def markdown_table(table: TextTable) -> str:
    lines = [f"**{md_text(table.title)}**", ""] if table.title else []
    lines.append("| " + " | ".join(map(md_cell, table.columns)) + " |")
    lines.append("|" + " --- |" * len(table.columns))
    lines += ["| " + " | ".join(map(md_cell, row)) + " |" for row in table.rows]
    return "\n".join(lines)


def markdown(header: str, secs: list[Section]) -> str:
    parts = [header]
    for s in secs:
        parts.append(f"## {s.heading}\n\n{s.text}")
        parts += [markdown_table(tab) for tab in s.tables if tab.rows or not tab.title]
    return "\n\n".join(parts) + "\n"
