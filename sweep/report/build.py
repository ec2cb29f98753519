"""`sweep report`: read output dirs, compute every table, and write the report — markdown on stdout,
`index.html` with its PNG plots, and each table as CSV and Parquet — into the report dir, replaced
whole (written to a temp dir first, so a failure leaves the previous report as it was)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from sweep.report.compare import mcnemar_table, spearman_table
from sweep.report.html import write_html
from sweep.report.load import Results, load_results
from sweep.report.plots import make_figures
from sweep.report.rounds import per_round_table
from sweep.report.sections import Tables, markdown, sections
from sweep.report.summary import summary_table

SUMMARY_FRONT = [
    "team", "dataset", "split", "method_label", "episodes", "items", "seeds", "accuracy_mean", "accuracy_std",
    "accuracy_lo", "accuracy_hi", "answered_accuracy_mean", "answered_accuracy_std", "answered_accuracy_lo",
    "answered_accuracy_hi", "unparsable_rate", "round0_accuracy", "tokens_per_task", "calls_per_task",
    "cost_per_task", "tokens_pct_clique", "cost_pct_clique", "paired_with_reference", "pareto", "pareto_axis",
]  # fmt: skip


@dataclass(frozen=True)
class Report:
    markdown: str
    report_dir: Path
    files: list[Path]
    tables: Tables


def build_tables(results: Results) -> Tables:
    summary = summary_table(results)
    front = [c for c in SUMMARY_FRONT if c in summary.columns]
    summary = summary.select(*front, *[c for c in summary.columns if c not in front])
    notes = []
    if results.episodes["simulated"].all():
        notes.append("Simulated agents: a test of the machinery, not a claim about LLMs.")
    return Tables(
        summary=summary,
        mcnemar=mcnemar_table(results),
        spearman=spearman_table(summary),
        per_round=per_round_table(results),
        order=results.order,
        notes=notes,
        benchmarks=results.benchmarks,
    )


def _header(results: Results, t: Tables) -> list[str]:
    ep = results.episodes
    dirs = ", ".join(str(d) for d in results.dirs)
    teams = ", ".join(sorted(ep["team"].unique().to_list()))
    return [
        f"{ep.height} episodes from {dirs}; {len(results.order)} methods; teams: {teams}.",
        *t.notes,
    ]


def _write_tables(t: Tables, out: Path) -> list[Path]:
    files = []
    for name, frame in (("summary", t.summary), ("mcnemar", t.mcnemar), ("spearman", t.spearman),
                        ("per_round", t.per_round)):  # fmt: skip
        frame.write_parquet(out / f"{name}.parquet")
        # CSV cannot hold nested columns; none of these tables has one, but stay safe.
        flat = frame.select([c for c, d in frame.schema.items() if not isinstance(d, pl.List | pl.Struct)])
        flat.write_csv(out / f"{name}.csv")
        files += [out / f"{name}.parquet", out / f"{name}.csv"]
    return files


def _replace_dir(tmp: Path, final: Path) -> None:
    """Move `tmp` to `final`, replacing what was there in one rename where possible."""
    old = final.with_name(f".{final.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def build_report(dirs: list[Path], report_dir: Path, layout: str = "pear") -> Report:
    """Compute and write the report of `dirs` into `report_dir`."""
    results = load_results(dirs)
    t = build_tables(results)
    secs = sections(t, layout)
    header = _header(results, t)
    text = markdown("# Sweep report\n\n" + "\n\n".join(header), secs)
    report_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{report_dir.name}.tmp-", dir=report_dir.parent))
    try:
        files = _write_tables(t, tmp)
        figures = make_figures(t, tmp)
        (tmp / "report.md").write_text(text, encoding="utf-8")
        write_html(tmp / "index.html", "Sweep report", header, secs, figures, t.per_round)
        files += [tmp / "report.md", tmp / "index.html", *(tmp / f.path for f in figures)]
        _replace_dir(tmp, report_dir)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
        raise
    files = [report_dir / f.relative_to(tmp) for f in files]
    return Report(text, report_dir, files, t)
