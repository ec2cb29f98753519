"""`sweep view OUT --export FILE`: the viewer as one static HTML file (no server), holding the list
rows and the full transcripts of up to `limit` episodes matching a query, the page's script and
style inlined. The same page as the server's: it reads the embedded JSON instead of the API.

The page is marked as an export (`export_target.MARK`), so a later export may replace it and nothing
else; one export writes a file at a time (`sweep.store.targets.own_beside`), atomically. Its
Content-Security-Policy allows only the inline script and style it holds, by their sha256 hashes
computed here: no other script, style, fetch, frame or form, images only `data:` (the page's icon)."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from sweep.report.parts import stderr_warning
from sweep.store.targets import own_beside
from sweep.view.data import LIST_COLUMNS, Query, ViewData
from sweep.view.episode import PartError
from sweep.view.export_target import FIELD, MARK, export_target, write_page
from sweep.view.server import static_text


def _script_json(payload: Any) -> str:
    """JSON safe inside a <script> element: no '<' survives, so no '</script>' can close it early."""
    return json.dumps(payload, default=str).replace("<", "\\u003c")


def _inline(text: str) -> str:
    """A static file as the body of an inline element: no '</' can close it early, and newlines as
    the HTML parser leaves them (it turns CR LF into LF), so the hash of what is written is the hash
    the browser computes."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("</", "<\\/")


def source_hash(block: str) -> str:
    """A CSP source allowing exactly the inline element whose content is `block`."""
    digest = base64.b64encode(hashlib.sha256(block.encode("utf-8")).digest()).decode("ascii")
    return f"'sha256-{digest}'"


def export_csp(script: str, style: str) -> str:
    """The exported page's policy. (`frame-ancestors` has no effect in a <meta> policy: left out.)"""
    return (
        f"default-src 'none'; script-src {source_hash(script)}; style-src {source_hash(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def _swap(page: str, old: str, new: str) -> str:
    if page.count(old) != 1:  # index.html changed: better no export than a page missing its code
        raise RuntimeError(f"static/index.html must hold {old!r} exactly once")
    return page.replace(old, new)


def page_html(
    data: ViewData, query: Query, limit: int, warn: Callable[[str], None] = stderr_warning
) -> tuple[str, int]:
    """The static viewer of the first `limit` episodes matching `query`, and how many it holds. An
    episode whose turns or rounds part cannot be read is left out with a warning naming the part;
    `PartError` when every matching episode is left out that way."""
    hits = data.matching(query).head(limit)
    details = {}
    for eid in hits["episode_id"].to_list():
        try:
            detail = data.episode(eid)
        except PartError as e:
            warn(f"leaving out episode {eid}: {e}")
            continue
        assert detail is not None  # the id came from the index
        details[eid] = detail
    if hits.height and not details:
        raise PartError("no matching episode could be read (see the warnings above); rerun the sweep")
    rows = hits.filter(pl.col("episode_id").is_in(list(details))).select(LIST_COLUMNS).to_dicts()
    for detail in details.values():
        detail["siblings"] = [s for s in detail["siblings"] if s["episode_id"] in details]
    meta = data.meta()
    meta["episodes"] = len(rows)
    payload = {"meta": meta, "rows": rows, "details": details}
    style, script = _inline(static_text("style.css")), _inline(static_text("app.js"))
    head = f'<meta http-equiv="Content-Security-Policy" content="{export_csp(script, style)}">'
    page = _swap(
        static_text("index.html"), '<meta charset="utf-8">', f'<meta charset="utf-8">\n{MARK}\n{head}'
    )
    page = _swap(page, '<link rel="stylesheet" href="style.css">', f"<style>{style}</style>")
    data_tag = f'<script id="sweep-data" type="application/json">{_script_json(payload)}</script>'
    page = _swap(page, '<script src="app.js"></script>', f"{data_tag}\n<script>{script}</script>")
    return page, len(rows)


def export_html(data: ViewData, path: Path, query: Query, limit: int) -> int:
    """Write the static viewer of the first `limit` episodes matching `query` to `path`; returns how
    many. Refuses (`export_target`) a path that is not absent or an earlier export, and a second
    writer of the same file (`OutputBusy`); see `export_target` for the errors of the write."""
    path = export_target(path)  # before the lock file is made: a refused target leaves no trace
    lock = own_beside(path, "export file", FIELD)
    try:
        export_target(path)  # again under the lock: a file may have appeared since
        page, n = page_html(data, query, limit)
        write_page(path, page)
    finally:
        lock.release()
    return n
