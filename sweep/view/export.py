"""`sweep view OUT --export FILE`: the viewer as one static HTML file (no server), holding the list
rows and the full transcripts of up to `limit` episodes matching a query, the page's script and
style inlined. The same page as the server's: it reads the embedded JSON instead of the API."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sweep.view.data import LIST_COLUMNS, Query, ViewData
from sweep.view.server import static_text


def _script_json(payload: Any) -> str:
    """JSON safe inside a <script> element: no '<' survives, so no '</script>' can close it early."""
    return json.dumps(payload, default=str).replace("<", "\\u003c")


def export_html(data: ViewData, path: Path, query: Query, limit: int) -> int:
    """Write the static viewer of the first `limit` episodes matching `query`; returns how many."""
    hits = data.matching(query).head(limit)
    rows = hits.select(LIST_COLUMNS).to_dicts()
    keep = set(hits["episode_id"].to_list())
    details = {}
    for eid in hits["episode_id"].to_list():
        detail = data.episode(eid)
        assert detail is not None  # the id came from the index
        detail["siblings"] = [s for s in detail["siblings"] if s["episode_id"] in keep]
        details[eid] = detail
    meta = data.meta()
    meta["episodes"] = len(rows)
    payload = {"meta": meta, "rows": rows, "details": details}
    page = static_text("index.html")
    page = page.replace(
        '<link rel="stylesheet" href="style.css">', f"<style>{static_text('style.css')}</style>"
    )
    data_tag = f'<script id="sweep-data" type="application/json">{_script_json(payload)}</script>'
    script = static_text("app.js").replace("</", "<\\/")
    page = page.replace('<script src="app.js"></script>', f"{data_tag}\n<script>{script}</script>")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, path)
    return len(rows)
