"""A sweep against an OpenAI-compatible server that sends lone surrogates, 1 MB replies, truncated
JSON, 500s and stalls: no reply stops the sweep from completing, and what is stored is clean."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from sweep.store.results import ResultStore
from sweep.store.sanitize import MAX_TEXT_CHARS
from tests.chaos.conftest import planned, sweep_config
from tests.chaos.faults import FAULTS, FaultServer
from tests.chaos.harness import Drivers, assert_exactly_once

pytestmark = [pytest.mark.chaos, pytest.mark.http]


@pytest.fixture
def server() -> Iterator[FaultServer]:
    srv = FaultServer(stall_s=2.5).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_hostile_replies_never_stop_a_sweep_from_completing(
    tmp_path: Path, drivers: Drivers, server: FaultServer
) -> None:
    engine = {
        "engine": "openai",
        "model": "chaos-model",
        "args": {
            "base_url": server.url,
            "timeout_s": 1.0,
            "max_retries": 2,
            "backoff_s": 0.01,
            "max_backoff_s": 0.05,
        },
    }
    path = sweep_config(tmp_path, limit=8, models={"sim": engine}, seeds=[0])
    out, log = tmp_path / "out", tmp_path / "driver.log"
    first = drivers.run(["run", str(path)], log)
    assert set(server.served) == set(FAULTS), server.served  # every fault was served at least once
    # A truncated JSON body is not retried: those episodes fail this run, one line, and run again next.
    assert first == 1 and "episode(s) failed; rerun to retry them" in log.read_text(), log.read_text()[-3000:]
    # A rerun meets new requests (later rounds of the failed episodes), with first attempts of their own.
    codes = [first]
    while codes[-1] != 0 and len(codes) < 6:
        codes.append(drivers.run(["run", str(path)], log))
    assert codes[-1] == 0, (codes, log.read_text()[-3000:])
    assert_exactly_once(out, planned(path))
    turns = ResultStore(out).turns()
    assert turns.filter(pl.col("text").str.contains("\ufffd")).height > 0  # the surrogates, replaced
    assert turns["text"].str.len_chars().max() == MAX_TEXT_CHARS  # the 1 MB replies, cut
    for text in turns["text"].to_list():
        text.encode("utf-8")  # all of it valid UTF-8
