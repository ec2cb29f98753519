"""`sweep view` in a real browser (Debian's headless chromium), as a reader meets it: an opened
episode shows beside the list without scrolling (above it on a narrow window), its reasoning is open
until folded, each agent whose answer changed carries a styled `from → to` mark matching the Parquet
turns, and `#episode=<id>` opens one episode directly, served or exported. Skips without chromium,
except under CI (env CI set)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from sweep.store.results import ResultStore
from sweep.view.data import Query, ViewData
from sweep.view.export import export_html
from sweep.view.server import serve_in_thread
from tests import browser as br
from tests.results_helpers import run_in_process, sweep_config

pytestmark = pytest.mark.browser


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
def sim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("view-browser") / "sim"
    return run_in_process(sweep_config("simulated", out, "datasets.0.limit=6", "seeds=[0]"))


@pytest.fixture(scope="module")
def viewer(sim: Path) -> Iterator[str]:
    server, url = serve_in_thread(ViewData([sim]))
    yield url
    server.shutdown()
    server.server_close()


def _rect(driver: Any, css: str) -> dict[str, float]:
    return driver.execute_script(
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
        "return {top: r.top, bottom: r.bottom, left: r.left, right: r.right};",
        css,
    )


def test_an_opened_episode_is_in_view_beside_the_list(browser: Any, viewer: str) -> None:
    browser.set_window_size(1500, 1000)
    browser.get("about:blank")
    browser.get(viewer)
    rows = br.wait_for(browser, "#list tbody tr", count=30)
    eid = rows[-1].get_attribute("data-episode-id")  # the last of the page, below the rows before it
    rows[-1].click()
    br.wait_for(browser, f"#panes .pane[data-episode='{eid}'] .round")
    assert browser.execute_script("return window.scrollY") == 0  # nothing to scroll to
    pane, listed = _rect(browser, "#panes .pane"), _rect(browser, "#list-section")
    height = browser.execute_script("return window.innerHeight")
    assert 0 <= pane["top"] < height / 3 and pane["left"] >= listed["right"]  # at the top, beside
    assert listed["top"] < height / 3  # and the list still there to pick the next one
    assert browser.execute_script("return location.hash") == f"#episode={eid}"
    assert browser.find_element("id", "link").get_attribute("href").endswith(f"#episode={eid}")
    browser.set_window_size(900, 1000)  # too narrow for both: the episode above the list
    pane, listed = _rect(browser, "#panes .pane"), _rect(browser, "#list-section")
    assert pane["bottom"] <= listed["top"] and pane["top"] < height / 3
    assert br.console_errors(browser) == []


def _changes(turns: pl.DataFrame) -> dict[tuple[int, int], tuple[str, str]]:
    """(round, agent) -> (from, to) where the agent's answer differs from its answer a round earlier
    (update protocol: one answering turn per agent and round)."""
    by = {
        (t["round"], t["agent"]): t["answer"] for t in turns.iter_rows(named=True) if t["answer"] is not None
    }
    return {
        (r, a): (by[(r - 1, a)], answer)
        for (r, a), answer in by.items()
        if (r - 1, a) in by and by[(r - 1, a)] != answer
    }


def test_answer_changes_are_marked_and_reasoning_is_open(browser: Any, sim: Path, viewer: str) -> None:
    from selenium.webdriver.common.by import By

    episodes, turns = ResultStore(sim).episodes(), ResultStore(sim).turns()
    both = episodes.filter(pl.col("method_spec").str.contains('"clique"')).sort("item_id")
    wanted, gold = {}, ""
    for row in both.iter_rows(named=True):  # an episode where one agent went right and one wrong
        wanted = _changes(turns.filter(pl.col("episode_id") == row["episode_id"]))
        kinds = {(a == row["gold"], b == row["gold"]) for a, b in wanted.values()}
        if {(False, True), (True, False)} <= kinds:
            eid, gold = row["episode_id"], row["gold"]
            break
    assert gold, "the simulated sweep should hold an episode with both kinds of change"
    browser.set_window_size(1500, 1000)
    browser.get("about:blank")
    browser.get(viewer + f"#episode={eid}")
    pane = br.wait_for(browser, f"#panes .pane[data-episode='{eid}'] .round", count=2)[0]
    shown = {}
    for mark in browser.find_elements(By.CSS_SELECTOR, "#panes [data-k=change]"):
        agent = mark.find_element(By.XPATH, "ancestor::div[@data-agent]")
        rnd = mark.find_element(By.XPATH, "ancestor::div[@data-round]")
        key = (int(rnd.get_attribute("data-round")), int(agent.get_attribute("data-agent")))
        shown[key] = tuple(mark.get_attribute("textContent").split(" → "))
        a, b = shown[key]
        kind = {(False, True): "w2r", (True, False): "r2w"}.get((a == gold, b == gold), "w2w")
        assert mark.get_attribute("data-kind") == kind
    assert shown == wanted
    colours = browser.execute_script(
        "return ['w2r', 'r2w'].map(k => getComputedStyle(document.querySelector("
        "'#panes [data-kind=' + k + ']')).backgroundColor)"
    )
    assert colours[0] != colours[1] and "rgba(0, 0, 0, 0)" not in colours  # styled, differently
    with_reasoning = turns.filter((pl.col("episode_id") == eid) & pl.col("reasoning").is_not_null()).height
    boxes = pane.find_elements(By.XPATH, "..//details[contains(@class, 'reasoning')]")
    assert with_reasoning > 0 and len(boxes) == with_reasoning
    assert all(b.get_attribute("open") is not None for b in boxes)  # open without a click
    browser.find_element("id", "fold").click()
    assert not any(b.get_attribute("open") is not None for b in boxes)
    assert br.console_errors(browser) == []


def test_the_anchor_opens_an_episode_of_a_static_export(browser: Any, sim: Path, tmp_path: Path) -> None:
    path = tmp_path / "view.html"
    export_html(ViewData([sim]), path, Query(), limit=30)
    eid = ViewData([sim]).episodes(Query(limit=30))["rows"][27]["episode_id"]  # not the first
    browser.get("about:blank")
    browser.get(path.as_uri() + f"#episode={eid}")
    br.wait_for(browser, f"#panes .pane[data-episode='{eid}'] .round")
    assert br.console_errors(browser) == []
