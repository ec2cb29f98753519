"""`sweep view`'s data layer and JSON API over real (simulated, in-process) results: filters and pages
against independent polars counts, an episode's rounds × agents against its Parquet rows, one part
file read per episode, bad requests refused, hostile model text bounded and never able to close the
export's script element."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest

from sweep.cli import main
from sweep.store.results import ResultStore
from sweep.view import episode as episode_mod
from sweep.view.data import Query, ViewData
from sweep.view.export import export_html
from sweep.view.server import serve_in_thread
from tests.results_helpers import HOSTILE, plant_hostile_text, run_in_process, sweep_config


@pytest.fixture(scope="module")
def sim_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("view") / "sim"
    run_in_process(sweep_config("simulated", out, "datasets.0.limit=8", "seeds=[0,1]"))
    plant_hostile_text(out)
    return out


@pytest.fixture(scope="module")
def server(sim_out: Path) -> Iterator[str]:
    srv, url = serve_in_thread(ViewData([sim_out]))
    yield url
    srv.shutdown()
    srv.server_close()


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _episodes(out: Path) -> pl.DataFrame:
    first = pl.col("round_correct").list.first()
    return ResultStore(out).episodes().with_columns(
        flip=pl.when(~first & pl.col("correct")).then(pl.lit("w2r")).when(first & ~pl.col("correct"))
        .then(pl.lit("r2w")).otherwise(pl.lit("none"))
    )  # fmt: skip


def test_meta_and_every_filter_count_against_polars(server: str, sim_out: Path) -> None:
    ep = _episodes(sim_out)
    status, meta = get(server + "api/meta")
    assert status == 200 and meta["episodes"] == ep.height == 80
    assert sum(m["episodes"] for m in meta["methods"]) == 80 and meta["datasets"] == ["arith/test"]
    clique = pl.col("method_spec").str.contains('"clique"')
    cases = [
        ("method=fixed(topology%3Dclique)", clique),
        ("outcome=correct", pl.col("correct")),
        ("outcome=wrong", ~pl.col("correct")),
        ("outcome=unparsable", pl.col("final_answer").is_null()),
        ("flip=w2r", pl.col("flip") == "w2r"),
        ("flip=r2w", pl.col("flip") == "r2w"),
        ("flip=none", pl.col("flip") == "none"),
        ("parse=1", pl.col("parse_failures") > 0),
        ("item=0003", pl.col("item_id").str.contains("0003")),
        ("method=fixed(topology%3Dclique)&outcome=wrong&parse=1", clique & ~pl.col("correct") & (pl.col("parse_failures") > 0)),
    ]  # fmt: skip
    assert (
        ep.filter(pl.col("flip") == "w2r").height > 0 and ep.filter(pl.col("parse_failures") > 0).height > 0
    )
    for query, expected in cases:
        status, page = get(server + "api/episodes?limit=500&" + query)
        want = ep.filter(expected)
        assert status == 200 and page["total"] == want.height, query
        assert {r["episode_id"] for r in page["rows"]} == set(want["episode_id"]), query


def test_pages_cover_every_episode_once(server: str) -> None:
    seen: list[str] = []
    offset = 0
    while True:
        _, page = get(server + f"api/episodes?limit=7&offset={offset}")
        seen += [r["episode_id"] for r in page["rows"]]
        offset += 7
        if offset >= page["total"]:
            break
    assert len(seen) == len(set(seen)) == 80


def test_an_episode_shows_its_parquet_rows(server: str, sim_out: Path) -> None:
    ep = (
        _episodes(sim_out)
        .filter(pl.col("method_spec").str.contains('"ring"'))
        .sort("item_id")
        .row(3, named=True)
    )
    turns = ResultStore(sim_out).turns().filter(pl.col("episode_id") == ep["episode_id"])
    status, d = get(server + f"api/episode?id={ep['episode_id']}")
    assert status == 200 and d["episode"]["prompt_tokens"] == ep["prompt_tokens"]
    assert [r["vote"] for r in d["rounds"]] == ep["round_answers"]
    assert [r["vote_correct"] for r in d["rounds"]] == ep["round_correct"]
    shown = [t for r in d["rounds"] for agent in r["agents"] for t in agent]
    assert len(shown) == turns.height == ep["calls"]
    for r in d["rounds"]:
        rows = turns.filter(pl.col("round") == r["round"])
        assert r["tokens"] == int((rows["prompt_tokens"] + rows["completion_tokens"]).sum())
        for a, agent_turns in enumerate(r["agents"]):
            mine = rows.filter(pl.col("agent") == a)
            assert [(t["answer"], t["confidence"]) for t in agent_turns] == list(
                zip(mine["answer"], mine["confidence"], strict=True)
            )
        seen = {
            (s, t["agent"])
            for t in rows.filter(pl.col("phase") == "update").iter_rows(named=True)
            for s in t["sources"]
        }
        assert {(e["source"], e["target"]) for e in r["edges"]} == seen
        # the stored decision's edges from round 1 on; round 0 has no decision (read from the turns)
        assert r["graph_from"] == ("turns" if r["round"] == 0 else "rounds") and (r["round"] == 0) == (
            not seen
        )
    assert {s["method_label"] for s in d["siblings"]} == {
        "cot",
        "cot_sc(m=5)",
        "fixed(topology=clique)",
        "random(k=2)",
    }


def test_critique_revise_graphs_are_whom_each_reviser_saw(tmp_path: Path) -> None:
    out = run_in_process(
        sweep_config("pear_simulated", tmp_path / "pear", "datasets.0.limit=3", "seeds=[0]", "rounds=2")
    )
    view = ViewData([out])
    turns = ResultStore(out).turns()
    for eid in view.index.filter(
        pl.col("method_label") != "fixed(topology=clique, protocol=critique_revise)"
    )["episode_id"]:
        d = view.episode(eid)
        assert d is not None
        for r in d["rounds"][1:]:
            revise = turns.filter(
                (pl.col("episode_id") == eid)
                & (pl.col("round") == r["round"])
                & (pl.col("phase") == "revise")
            )
            expected = {(s, t["agent"]) for t in revise.iter_rows(named=True) for s in t["sources"]}
            assert {(e["source"], e["target"]) for e in r["edges"]} == expected and expected
            critics = {t["agent"] for a in r["agents"] for t in a if t["phase"] == "critique"}
            assert critics == {s for s, _ in expected}  # each source wrote one critique call


def test_opening_an_episode_reads_only_its_own_part(sim_out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    view = ViewData([sim_out])
    read: list[str] = []
    original = pl.scan_parquet
    monkeypatch.setattr(
        pl, "scan_parquet", lambda path, **kw: read.append(Path(path).parent.name) or original(path, **kw)
    )
    eid = view.index["episode_id"][-1]
    assert view.episode(eid) is not None
    assert sorted(read) == ["rounds", "turns"]
    assert len(list((sim_out / "turns").glob("part-*"))) > 1  # so one part is not all of them


def test_bad_requests_are_refused_with_the_reason(server: str) -> None:
    for query, word in (("limit=0", "limit"), ("limit=501", "limit"), ("offset=x", "offset"),
                        ("outcome=maybe", "outcome"), ("flip=sideways", "flip")):  # fmt: skip
        status, body = get(server + "api/episodes?" + query)
        assert status == 400 and word in body["error"], query
    assert get(server + "api/episode?id=nope")[0] == 404
    assert get(server + "api/nothing")[0] == 404
    status, body = get(server + "api/meta", headers={"Host": "evil.example:80"})
    assert status == 403 and "Host" in body["error"]


def test_hostile_text_is_bounded(sim_out: Path) -> None:
    view = ViewData([sim_out])
    eid = pq.read_table(sorted((sim_out / "turns").glob("part-*.parquet"))[0]).column("episode_id")[0].as_py()
    d = view.episode(eid)
    assert d is not None
    turn = next(t for r in d["rounds"] for a in r["agents"] for t in a if t["text"].startswith(HOSTILE))
    assert turn["truncated"] and len(turn["text"]) == episode_mod.MAX_TEXT


def test_export_embeds_data_that_cannot_close_its_script(sim_out: Path, tmp_path: Path) -> None:
    view = ViewData([sim_out])
    path = tmp_path / "view.html"
    n = export_html(view, path, Query(), limit=80)
    page = path.read_text()
    assert n == 80 and HOSTILE not in page and "window.__pwned" in page  # present, but escaped
    assert page.count("</script>") == 2 and 'src="app.js"' not in page and 'href="style.css"' not in page
    blob = re.search(r'<script id="sweep-data" type="application/json">(.*?)</script>', page, re.S)
    assert blob is not None
    data = json.loads(blob.group(1))
    assert len(data["rows"]) == len(data["details"]) == 80
    assert any(
        t["text"].startswith(HOSTILE)
        for d in data["details"].values()
        for r in d["rounds"]
        for a in r["agents"]
        for t in a
    )


def test_view_cli_errors_and_export(
    sim_out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["view", str(tmp_path / "nope")]) == 2
    assert "episodes/" in capsys.readouterr().err
    assert main(["view", str(sim_out), "--export", str(tmp_path / "x.html"), "--limit", "0"]) == 2
    assert (
        main(["view", str(sim_out), "--export", str(tmp_path / "x.html"), "--limit", "5", "--method", "cot"])
        == 0
    )
    assert "exported 5 episodes" in capsys.readouterr().out
    assert main(["view", str(sim_out), "--export", str(tmp_path / "y.html"), "--dataset", "gsm8k/test"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --dataset: no episodes of 'gsm8k/test' here")
    assert not (tmp_path / "y.html").exists()
    assert main(["view", str(sim_out), "--export", str(tmp_path / "y.html"), "--method", "cott"]) == 2
    assert "(did you mean 'cot'?)" in capsys.readouterr().err
