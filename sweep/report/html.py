"""The self-contained HTML report: every section's tables, the full per-round diagnostics table and
every figure inlined as a PNG data URI (the same PNGs sit next to it under plots/)."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import polars as pl

from sweep.report.layout import TextTable
from sweep.report.plots import Figure
from sweep.report.sections import Section, num

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1400px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: 12.5px; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; text-align: left; } td.t { text-align: left; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
figure { display: inline-block; margin: 0 1em 1em 0; vertical-align: top; }
figure img { max-width: 100%; border: 1px solid #eee; } figcaption { font-size: 12px; color: #555; }
.note { color: #555; max-width: 900px; } .scroll { overflow-x: auto; }
"""


NUMERIC = re.compile(r"^(\*\*)?[-–\d.\[]")


def _cell(text: str) -> str:
    """A cell: numbers right-aligned, words left; markdown **bold** as <b>."""
    escaped = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(text))
    return f"<td>{escaped}</td>" if NUMERIC.match(text) or not text else f'<td class="t">{escaped}</td>'


def _rows(rows: list[list[str]]) -> str:
    return "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in rows)


def table_html(table: TextTable, table_id: str) -> str:
    caption = f"<caption>{html.escape(table.title)}</caption>" if table.title else ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    body = _rows(table.rows)
    return (
        f'<div class="scroll"><table id="{table_id}">{caption}<thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def frame_html(frame: pl.DataFrame, table_id: str, drop: tuple[str, ...] = ()) -> str:
    """A DataFrame as a plain table (floats with 4 decimals)."""
    frame = frame.drop([c for c in drop if c in frame.columns])
    rows = [
        [num(v, 4) if isinstance(v, float) else ("–" if v is None else str(v)) for v in row]
        for row in frame.iter_rows()
    ]
    return table_html(TextTable("", list(frame.columns), rows), table_id)


def _figure(fig: Figure, root: Path) -> str:
    data = base64.b64encode((root / fig.path).read_bytes()).decode()
    title = html.escape(fig.title)
    return f'<figure><img alt="{title}" src="data:image/png;base64,{data}"><figcaption>{title}</figcaption></figure>'


def _slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")


def write_html(
    path: Path,
    title: str,
    header: list[str],
    secs: list[Section],
    figures: list[Figure],
    per_round: pl.DataFrame,
) -> None:
    """Write the report to `path` (figure paths are relative to its folder)."""
    parts = [f"<h1>{html.escape(title)}</h1>"] + [f'<p class="note">{html.escape(h)}</p>' for h in header]
    parts.append(
        "<nav>"
        + " · ".join(f'<a href="#{_slug(s.heading)}">{html.escape(s.heading)}</a>' for s in secs)
        + ' · <a href="#figures">Figures</a> · <a href="#diagnostics">Per-round diagnostics</a></nav>'
    )
    for s in secs:
        sid = _slug(s.heading)
        parts.append(f'<h2 id="{sid}">{html.escape(s.heading)}</h2><p class="note">{html.escape(s.text)}</p>')
        parts += [table_html(t, f"{sid}-{i}") for i, t in enumerate(s.tables)]
    parts.append('<h2 id="figures">Figures</h2>')
    parts += [_figure(f, path.parent) for f in figures]
    parts.append(
        '<h2 id="diagnostics">Per-round diagnostics</h2><p class="note">Means over episodes per round '
        "(rounds/ table; also in per_round.csv).</p>"
    )
    parts.append(frame_html(per_round, "per-round", drop=("method_key",)))
    doc = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        + "\n".join(parts)
        + "</body></html>\n"
    )
    path.write_text(doc, encoding="utf-8")
