"""`sweep report`: read output dirs, compute every table, and write the report — markdown on stdout,
`index.html` with its PNG plots, and each table as CSV and Parquet — into the report dir, replaced
whole (written to a temp dir first, so a failure leaves the previous report as it was). Only an
absent or empty dir or an earlier report is written (`sweep.report.target`), by one writer at a time
(a lock beside it, `sweep.store.targets.own_beside`)."""

from __future__ import annotations

import contextlib
import errno
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from sweep.report.compare import mcnemar_table, spearman_table
from sweep.report.html import write_html
from sweep.report.load import Results, check_input, load_results
from sweep.report.parts import Warn, stderr_warning
from sweep.report.plots import make_figures
from sweep.report.rounds import per_round_table
from sweep.report.sections import Section, Tables, markdown, md_text, sections
from sweep.report.summary import summary_table
from sweep.report.target import FIELD, clean_leftovers, replace_dir, report_target, temp_prefix, write_mark
from sweep.store.repair import is_disk_full
from sweep.store.targets import own_beside, unwritable

SUMMARY_FRONT = [
    "team",
    "dataset",
    "split",
    "method_label",
    "episodes",
    "items",
    "seeds",
    "accuracy_mean",
    "accuracy_std",
    "accuracy_lo",
    "accuracy_hi",
    "answered_accuracy_mean",
    "answered_accuracy_std",
    "answered_accuracy_lo",
    "answered_accuracy_hi",
    "unparsable_rate",
    "round0_accuracy",
    "tokens_per_task",
    "calls_per_task",
    "cost_per_task",
    "tokens_pct_clique",
    "cost_pct_clique",
    "paired_with_reference",
    "pareto",
    "pareto_axis",
]


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
    for name, frame in (
        ("summary", t.summary),
        ("mcnemar", t.mcnemar),
        ("spearman", t.spearman),
        ("per_round", t.per_round),
    ):
        frame.write_parquet(out / f"{name}.parquet")
        # CSV cannot hold nested columns; none of these tables has one, but stay safe.
        flat = frame.select([c for c, d in frame.schema.items() if not isinstance(d, pl.List | pl.Struct)])
        flat.write_csv(out / f"{name}.csv")
        files += [out / f"{name}.parquet", out / f"{name}.csv"]
    return files


class ReportDiskFull(OSError):
    """The disk (or quota) filled while the report was written: exit 1, the previous report intact."""

    def __init__(self, where: Path, cause: BaseException) -> None:
        reason = (str(cause).strip().splitlines() or [type(cause).__name__])[0][:200]
        super().__init__(
            errno.ENOSPC,
            f"the disk is full: no space left to write the report into {where} ({reason}); the previous "
            "report is as it was; free some space and rerun",
        )

    def __str__(self) -> str:
        return str(self.strerror)


def build_report(
    dirs: list[Path], report_dir: Path, layout: str = "pear", warn: Warn = stderr_warning
) -> Report:
    """Compute and write the report of `dirs` into `report_dir`. A report dir that may not be written
    is a one-line `ConfigError` before anything is read; an unreadable part is skipped with a warning
    (`warn`); a full disk is `ReportDiskFull`."""
    dirs = [check_input(d) for d in dirs]
    final = report_target(report_dir, dirs)
    results = load_results(dirs, warn)
    t = build_tables(results)
    secs = sections(t, layout)
    header = _header(results, t)
    text = markdown("# Sweep report\n\n" + "\n\n".join(map(md_text, header)), secs)
    lock = own_beside(final, "report dir", FIELD)
    try:
        files = _write(final, dirs, t, secs, header, text)
    finally:
        lock.release()
    return Report(text, final, files, t)


def _write(
    final: Path, dirs: list[Path], t: Tables, secs: list[Section], header: list[str], text: str
) -> list[Path]:
    """Write the report into a temp dir beside `final`, then swap it in (with the report dir's lock held)."""
    clean_leftovers(final)
    tmp: Path | None = None
    try:
        tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(final), dir=final.parent))
        write_mark(tmp, dirs)
        files = _write_tables(t, tmp)
        figures = make_figures(t, tmp)
        (tmp / "report.md").write_text(text, encoding="utf-8")
        write_html(tmp / "index.html", "Sweep report", header, secs, figures, t.per_round)
        files += [tmp / "report.md", tmp / "index.html", *(tmp / f.path for f in figures)]
        replace_dir(tmp, final)
    except BaseException as e:
        if tmp is not None:
            with contextlib.suppress(OSError):  # our own temp dir (gone once renamed into place)
                shutil.rmtree(tmp)
        if isinstance(e, Exception) and is_disk_full(e):
            raise ReportDiskFull(final.parent, e) from e
        if isinstance(e, PermissionError) or (isinstance(e, OSError) and e.errno == errno.EROFS):
            raise unwritable(final.parent, e, FIELD) from None
        raise
    return [final / f.relative_to(tmp) for f in files]
