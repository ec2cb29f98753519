"""The viewer's answer-change marks and the link to one episode: per agent and round, where its answer
changed since the round before (hand-built rounds, then every episode of a simulated sweep against
its Parquet turns, computed here independently), and `sweep view OUT --episode ID`, which prints the
URL that opens that episode or refuses an unknown id in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from sweep.cli import main
from sweep.store.results import ResultStore
from sweep.view.cli import episode_url
from sweep.view.data import ViewData
from sweep.view.episode import answer_changes
from tests.results_helpers import run_in_process, sweep_config


def _turn(agent: int, phase: str, answer: str | None, correct: bool | None) -> dict[str, Any]:
    return {"agent": agent, "phase": phase, "answer": answer, "correct": correct}


def _rounds(*rounds: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [{"agents": agents} for agents in rounds]


def test_changes_by_hand() -> None:
    rounds = _rounds(
        [[_turn(0, "initial", "87", False)], [_turn(1, "initial", "97", True)], [_turn(2, "initial", "5", False)]],
        [[_turn(0, "update", "97", True)], [_turn(1, "update", "87", False)], [_turn(2, "update", "6", False)]],
        # agent 0 made no call, agent 1's reply could not be read, agent 2 repeats itself
        [[], [_turn(1, "update", None, None)], [_turn(2, "update", "6", False)]],
        # a critique's answer is about a peer; the revision is the agent's own
        [[_turn(0, "critique", "5", False), _turn(0, "revise", None, None)],
         [_turn(1, "critique", "1", False), _turn(1, "revise", "97", True)], [_turn(2, "revise", "x", None)]],
    )  # fmt: skip
    marks = answer_changes(rounds)
    assert marks[0] == [None, None, None]  # round 0 has nothing to change from
    assert marks[1] == [
        {"from": "87", "to": "97", "from_correct": False, "to_correct": True, "kind": "w2r"},
        {"from": "97", "to": "87", "from_correct": True, "to_correct": False, "kind": "r2w"},
        {"from": "5", "to": "6", "from_correct": False, "to_correct": False, "kind": "w2w"},
    ]
    assert marks[2] == [None, None, None]  # no call, no answer read, the same answer: no change
    assert marks[3][0] is None  # its critique's answer is a peer's, its revision unreadable: 97 kept
    assert marks[3][1] is not None and (marks[3][1]["from"], marks[3][1]["kind"]) == (
        "87",
        "w2r",
    )  # from round 1
    assert marks[3][2] is not None and marks[3][2]["kind"] == "other"  # an answer the grader cannot grade


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("changes") / "sim"
    return run_in_process(sweep_config("simulated", out, "datasets.0.limit=6", "seeds=[0]"))


def _expected(turns: pl.DataFrame, n_agents: int, n_rounds: int) -> list[list[tuple[str, str] | None]]:
    """(from, to) per round and agent, from the episode's Parquet turns: the answer of an agent's last
    non-critique turn with an answer in each round, carried over rounds where it has none."""
    said = turns.filter((pl.col("phase") != "critique") & pl.col("answer").is_not_null())
    held: dict[int, str] = {}
    out = []
    for r in range(n_rounds):
        row: list[tuple[str, str] | None] = []
        for a in range(n_agents):
            mine = said.filter((pl.col("round") == r) & (pl.col("agent") == a))["answer"].to_list()
            now = mine[-1] if mine else None
            row.append((held[a], now) if a in held and now is not None and now != held[a] else None)
            if now is not None:
                held[a] = now
        out.append(row)
    return out


def test_every_episode_marks_the_changes_its_turns_hold(sim: Path) -> None:
    view = ViewData([sim])
    turns = ResultStore(sim).turns()
    kinds: dict[str, int] = {}
    for eid in view.index["episode_id"].to_list():
        d = view.episode(eid)
        assert d is not None
        e, rounds = d["episode"], d["rounds"]
        shown = [[(c["from"], c["to"]) if c else None for c in r["changes"]] for r in rounds]
        assert shown == _expected(turns.filter(pl.col("episode_id") == eid), e["n_agents"], len(rounds)), eid
        for r in rounds:
            for c in filter(None, r["changes"]):
                assert (c["from_correct"], c["to_correct"]) == (c["from"] == e["gold"], c["to"] == e["gold"])
                kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
    assert kinds.get("w2r", 0) > 0 and kinds.get("r2w", 0) > 0  # the sweep has both kinds to show


def test_episode_flag_prints_the_url_that_opens_it(
    sim: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    eid = ViewData([sim]).index["episode_id"][3]
    assert episode_url("http://127.0.0.1:8765/", eid) == f"http://127.0.0.1:8765/#episode={eid}"
    assert episode_url("http://127.0.0.1:1/", "a b#c") == "http://127.0.0.1:1/#episode=a%20b%23c"

    class Server:  # serves until Ctrl-C: interrupted at once here
        server_address = ("127.0.0.1", 8765)

        def serve_forever(self) -> None:
            raise KeyboardInterrupt

        def server_close(self) -> None:
            pass

    monkeypatch.setattr("sweep.view.server.make_server", lambda data, port: Server())
    assert main(["view", str(sim), "--episode", eid]) == 0
    assert f"http://127.0.0.1:8765/#episode={eid} " in capsys.readouterr().out
    assert main(["view", str(sim), "--episode", eid[:-1] + "x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: --episode: no episode '{eid[:-1]}x' in {sim}")
    assert f"(did you mean '{eid}'?)" in err[0]
    assert main(["view", str(sim), "--episode", eid, "--export", str(sim.parent / "v.html")]) == 2
    assert "leave out --export" in capsys.readouterr().err and not (sim.parent / "v.html").exists()
