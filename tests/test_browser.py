"""The HTML report, the viewer and its static export in a real browser (Debian's headless chromium):
they render without console errors, an episode's transcript opens from the list, and the numbers on
the page equal those in Parquet. Screenshots are kept; the run prints where. Without chromium the
tests skip, except under CI (env CI set), where a missing browser is a failure."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from scipy import stats as sps

from sweep.report.build import build_report
from sweep.store.results import ResultStore
from sweep.view.data import Query, ViewData
from sweep.view.export import export_html
from sweep.view.server import serve_in_thread
from tests import browser as br
from tests.results_helpers import HOSTILE, plant_hostile_text, run_in_process, sweep_config

pytestmark = pytest.mark.browser

LABELS = {  # the report's method labels -> the episodes they stand for (written independently here)
    "cot": pl.col("method") == "cot",
    "cot_sc(m=5)": pl.col("method") == "cot_sc",
    "fixed(topology=clique)": pl.col("method_spec").str.contains('"clique"'),
    "fixed(topology=ring)": pl.col("method_spec").str.contains('"ring"'),
    "random(k=2)": pl.col("method") == "random",
}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = br.missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the browser tests: {reason}")
        pytest.skip(reason)
    with br.chromium() as driver:
        yield driver


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[Path]:
    where = tmp_path_factory.mktemp("browser-artifacts")
    yield where
    shots = sorted(p.name for p in where.glob("*.png"))
    capture = pytestconfig.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print(f"\nbrowser screenshots ({', '.join(shots)}): {where}")


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("browser-data")
    sim = run_in_process(sweep_config("simulated", base / "sim", "datasets.0.limit=8", "seeds=[0,1]"))
    pear = run_in_process(
        sweep_config("pear_simulated", base / "pear", "datasets.0.limit=3", "seeds=[0]", "rounds=2")
    )
    hostile = plant_hostile_text(sim)
    (base / "hostile.txt").write_text(hostile)
    return {"sim": sim, "pear": pear, "hostile": base / "hostile.txt"}


@pytest.fixture(scope="module")
def viewer(dirs: dict[str, Path]) -> Iterator[str]:
    server, url = serve_in_thread(ViewData([dirs["sim"], dirs["pear"]]))
    yield url
    server.shutdown()
    server.server_close()


def _texts(element: Any, css: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [e.get_attribute("textContent") for e in element.find_elements(By.CSS_SELECTOR, css)]


def test_report_renders_and_shows_the_parquet_numbers(
    browser: Any, dirs: dict[str, Path], artifacts: Path
) -> None:
    from selenium.webdriver.common.by import By

    out = dirs["sim"]
    build_report([out], out / "report")
    browser.get((out / "report" / "index.html").as_uri())
    rows = br.wait_for(browser, "#summary-0 tbody tr", count=5)
    assert br.console_errors(browser) == []
    loaded = browser.execute_script("return [...document.images].map(i => i.complete && i.naturalWidth > 0)")
    assert loaded and all(loaded) and len(loaded) == len(list((out / "report" / "plots").glob("*.png")))
    ep = ResultStore(out).episodes()
    for row in rows:
        cells = _texts(row, "td")
        mine = ep.filter(LABELS[cells[1]])
        acc = mine.group_by("seed").agg(pl.col("correct").mean())["correct"].to_numpy()
        assert cells[3] == f"{acc.mean():.3f} ± {acc.std(ddof=1):.3f}", cells[1]
        assert cells[7] == f"{(mine['prompt_tokens'] + mine['completion_tokens']).mean():.0f}"
    for row in browser.find_elements(By.CSS_SELECTOR, "#paired-comparisons-mcnemar-0 tbody tr"):
        cells = _texts(row, "td")
        both = ep.filter(LABELS[cells[1]]).join(
            ep.filter(LABELS[cells[2]]), on=["item_id", "seed"], suffix="_b"
        )
        b = int((both["correct"] & ~both["correct_b"]).sum())
        c = int((~both["correct"] & both["correct_b"]).sum())
        assert (int(cells[6]), int(cells[7])) == (b, c)
        assert float(cells[8]) == pytest.approx(sps.binomtest(b, b + c).pvalue if b + c else 1.0, rel=5e-3)
    br.full_page_screenshot(browser, artifacts / "report.png")


def _check_pane(pane: Any, out: Path, eid: str) -> None:
    """Every number of an open episode against its Parquet rows."""
    from selenium.webdriver.common.by import By

    row = ResultStore(out).episodes().filter(pl.col("episode_id") == eid).row(0, named=True)
    turns = ResultStore(out).turns().filter(pl.col("episode_id") == eid)
    assert _texts(pane, "[data-field=tokens]") == [str(row["prompt_tokens"] + row["completion_tokens"])]
    assert _texts(pane, "[data-field=calls]") == [str(row["calls"])]
    assert _texts(pane, ".round .vote") == [a if a is not None else "–" for a in row["round_answers"]]
    for r, box in enumerate(pane.find_elements(By.CSS_SELECTOR, ".round")):
        seeing = turns.filter((pl.col("round") == r) & pl.col("phase").is_in(["update", "revise"]))
        edges = {(s, t["agent"]) for t in seeing.iter_rows(named=True) for s in t["sources"]}
        drawn = {
            e.get_attribute("textContent")
            for e in box.find_elements(By.CSS_SELECTOR, "svg.graph path.edge title")
        }
        assert drawn == {f"{s + 1} → {t + 1}" for s, t in edges}
    for t in turns.iter_rows(named=True):
        cell = pane.find_element(By.CSS_SELECTOR, f'[data-turn="{t["round"]}-{t["agent"]}-{t["phase"]}"]')
        if t["phase"] == "critique" and t["answer"] is None:  # a critique without an answer shows none
            assert _texts(cell, "[data-k=answer]") == _texts(cell, "[data-k=confidence]") == []
        else:
            assert _texts(cell, "[data-k=answer]") == [t["answer"] if t["answer"] is not None else "–"]
            conf = t["confidence"]
            assert _texts(cell, "[data-k=confidence]") == [str(conf) if conf is not None else "–"]
        assert _texts(cell, "[data-k=tokens]") == [str(t["prompt_tokens"] + t["completion_tokens"])]
    assert len(pane.find_elements(By.CSS_SELECTOR, "[data-turn]")) == turns.height


def _choose(browser: Any, select_id: str, text: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.ID, select_id)).select_by_visible_text(text)


def _wait_total(browser: Any, expected: int) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, 20).until(lambda d: d.find_element("id", "total").text == str(expected))


def test_viewer_opens_a_transcript_from_the_list(
    browser: Any, dirs: dict[str, Path], viewer: str, artifacts: Path
) -> None:
    from selenium.webdriver.common.by import By

    browser.set_window_size(1500, 1000)
    browser.get(viewer)
    br.wait_for(browser, "#list tbody tr")
    sim, pear = (ResultStore(dirs[k]).episodes() for k in ("sim", "pear"))
    assert browser.find_element(By.ID, "total").text == str(sim.height + pear.height)
    w2r = sim.filter(~pl.col("round_correct").list.first() & pl.col("correct"))
    label = max(LABELS, key=lambda k: w2r.filter(LABELS[k]).height)  # a method with vote flips here
    assert w2r.filter(LABELS[label]).height > 0
    _choose(browser, "f-method", label)
    _wait_total(browser, sim.filter(LABELS[label]).height)
    _choose(browser, "f-flip", "wrong → right")
    _wait_total(browser, w2r.filter(LABELS[label]).height)
    row = br.wait_for(browser, "#list tbody tr")[0]
    eid = row.get_attribute("data-episode-id")
    row.click()
    pane = br.wait_for(browser, "#panes .pane")[0]
    br.wait_for(browser, "#panes .round", count=4)
    _check_pane(pane, dirs["sim"], eid)
    assert br.console_errors(browser) == []
    br.full_page_screenshot(browser, artifacts / "viewer.png")
    options = _texts(browser.find_element(By.ID, "compare"), "option")
    assert len(options) == 1 + 4  # "—" and the same item and seed under the 4 other methods
    _choose(browser, "compare", options[1])
    panes = br.wait_for(browser, "#panes .pane", count=2)
    assert [p.get_attribute("data-episode") for p in panes][0] == eid
    _check_pane(panes[1], dirs["sim"], panes[1].get_attribute("data-episode"))
    assert br.console_errors(browser) == []
    br.full_page_screenshot(browser, artifacts / "viewer-side-by-side.png")


def test_viewer_shows_critiques_and_revisions(
    browser: Any, dirs: dict[str, Path], viewer: str, artifacts: Path
) -> None:
    browser.set_window_size(1500, 1000)
    browser.get(viewer)
    br.wait_for(browser, "#list tbody tr")
    _choose(browser, "f-method", "pear")
    _wait_total(browser, 3)
    row = br.wait_for(browser, "#list tbody tr")[0]
    eid = row.get_attribute("data-episode-id")
    row.click()
    pane = br.wait_for(browser, "#panes .pane")[0]
    br.wait_for(browser, "#panes [data-turn$='-revise']")
    _check_pane(pane, dirs["pear"], eid)
    assert br.console_errors(browser) == []
    br.full_page_screenshot(browser, artifacts / "viewer-pear.png")


def test_hostile_model_text_stays_text(browser: Any, dirs: dict[str, Path], viewer: str) -> None:
    browser.get("about:blank")
    browser.get(viewer + "#ep=" + dirs["hostile"].read_text())
    br.wait_for(browser, "#panes .round")
    assert browser.execute_script("return window.__pwned === undefined")
    assert browser.execute_script("return document.querySelectorAll('#panes img, #panes script').length") == 0
    shown = browser.execute_script(
        "return [...document.querySelectorAll('#panes pre')].map(p => p.textContent)"
    )
    assert any(s.startswith(HOSTILE) for s in shown)
    assert br.console_errors(browser) == []


def test_static_export_works_without_a_server(
    browser: Any, dirs: dict[str, Path], tmp_path: Path, artifacts: Path
) -> None:
    path = tmp_path / "export.html"
    export_html(ViewData([dirs["sim"]]), path, Query(), limit=30)
    browser.set_window_size(1500, 1000)
    browser.get(path.as_uri())
    rows = br.wait_for(browser, "#list tbody tr", count=30)
    served = ViewData([dirs["sim"]]).episodes(Query(limit=30))["rows"]
    assert [r.get_attribute("data-episode-id") for r in rows] == [r["episode_id"] for r in served]
    eid = rows[4].get_attribute("data-episode-id")
    rows[4].click()
    pane = br.wait_for(browser, "#panes .pane")[0]
    _check_pane(pane, dirs["sim"], eid)
    assert browser.execute_script("return window.__pwned === undefined")
    assert br.console_errors(browser) == []
    br.full_page_screenshot(browser, artifacts / "export.png")
