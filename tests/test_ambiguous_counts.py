"""Hedged answers are counted apart from other parse failures: the `ambiguous` column of `episodes/`
counts the replies whose answer hedged between several (a part of `parse_failures`), `group_metrics`
logs it per task, and parts written before the column read it as null."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from data.grading.graders import grader_for
from data.grading.outcome import AMBIGUOUS, NO_ANSWER
from data.types import Sample
from debate.state import Turn
from sweep.store.records import ambiguous_replies
from sweep.store.results import EPISODE_SCHEMA, ResultStore
from sweep.tracking.metrics import group_metrics
from tests.test_results import episode, rounds_for

CHOICE = Sample(id="q1", question="?", gold="B", kind="choice", choices=("w", "x", "y", "z"))
NUMBER = Sample(id="q2", question="?", gold="12", kind="numeric")


def _turn(text: str, parsed: bool = False, phase: str = "initial") -> Turn:
    return Turn(
        agent=0, round=0, phase=phase, model="m", text=text, answer=None, confidence=None, reasoning="",
        parsed=parsed, prompt_tokens=1, completion_tokens=1,
    )  # fmt: skip


def test_hedged_replies_are_counted_apart_from_other_parse_failures() -> None:
    turns = [
        _turn('{"answer": "B", "confidence": 4}', parsed=True),
        _turn('{"answer": "B or C", "confidence": 3}'),  # a hedge
        _turn("Answer: B\nAnswer: D"),  # two answers
        _turn("I do not know."),  # no answer: a parse failure, not a hedge
        _turn('{"answer": "B or C"}', phase="critique"),  # critiques give no answer
    ]
    assert ambiguous_replies(CHOICE, turns) == 2
    assert ambiguous_replies(NUMBER, [_turn('{"answer": "12 or 14"}'), _turn('{"answer": "twelve"}')]) == 1
    assert ambiguous_replies(NUMBER, [_turn("The answer is 12, so 10 are left.")]) == 1


def test_graders_read_the_reason_with_the_answer() -> None:
    choice, number = grader_for(CHOICE), grader_for(NUMBER)
    assert choice.read("Either B or D.") == (None, AMBIGUOUS)
    assert choice.read("The answer is (B).") == ("B", "")
    assert number.read("no idea") == (None, NO_ANSWER)
    assert grader_for(Sample(id="q3", question="?", gold="3", kind="math")).read(
        "\\boxed{3} or \\boxed{5}"
    ) == (
        None,
        AMBIGUOUS,
    )


def test_group_metrics_log_hedges_per_task_where_counted() -> None:
    base = {
        "correct": [True, False, False], "calls": [4, 4, 4], "prompt_tokens": [10, 10, 10],
        "completion_tokens": [5, 5, 5], "cached_tokens": [0, 0, 0], "cost": [0.0, 0.0, 0.0],
        "latency_s": [1.0, 1.0, 1.0], "parse_failures": [2, 1, 3], "cache_hits": [0, 0, 0],
        "round_correct": [[True], [False], [False]],
    }  # fmt: skip
    scalars, _ = group_metrics(pl.DataFrame({**base, "ambiguous": [1, None, 2]}))
    assert scalars["ambiguous_per_task"] == 1.5  # over the two episodes that count them
    assert scalars["parse_failures_per_task"] == 2.0  # unchanged: hedges are a part of it
    assert "ambiguous_per_task" not in group_metrics(pl.DataFrame(base))[0]
    nulls = pl.DataFrame({**base, "ambiguous": [None, None, None]}, schema_overrides={"ambiguous": pl.Int32})
    assert "ambiguous_per_task" not in group_metrics(nulls)[0]


def test_parts_written_before_the_column_read_it_as_null(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    old_names = [n for n in EPISODE_SCHEMA.names if n != "ambiguous"]
    old = pa.Table.from_pylist(
        [episode("old")], schema=pa.schema([EPISODE_SCHEMA.field(n) for n in old_names])
    )
    pq.write_table(old, tmp_path / "episodes" / "part-20000101T000000000000Z-00000000.parquet")
    store.append([{**episode("new"), "ambiguous": 1}], [], rounds_for("new"))
    store.append([episode("uncounted")], [], rounds_for("uncounted"))  # a row that does not count them
    eps = store.episodes().sort("episode_id")
    assert eps["episode_id"].to_list() == ["new", "old", "uncounted"]
    assert eps["ambiguous"].to_list() == [1, None, None]
    assert eps["parse_failures"].to_list() == [1, 1, 1]  # the old column keeps its meaning


def test_a_turn_that_gives_two_answers_is_credited_with_neither() -> None:
    from actors.base import Completion
    from debate.episode import _turn as turn_of
    from debate.phases import initial_calls

    call = initial_calls(NUMBER, 1, "pear")[0]
    seat = SimpleNamespace(model="m", price_in=0.0, price_out=0.0)

    def read(text: str) -> Turn:
        out = Completion(text=text, prompt_tokens=1, completion_tokens=1, model="m")
        return turn_of(call, seat, out, grader_for(NUMBER), 0, 0)  # type: ignore[arg-type]

    assert (read("Answer: 12\nConfidence: 4").answer, read("Answer: 12\nConfidence: 4").parsed) == (
        "12",
        True,
    )
    hedged = read("Answer: 12\nAnswer: 14")  # the parser alone picks the last line: 14
    assert (hedged.answer, hedged.parsed) == (None, False)
    math = Sample(id="q3", question="?", gold="3", kind="math")
    out = Completion(text="\\boxed{3} or \\boxed{5}", prompt_tokens=1, completion_tokens=1, model="m")
    assert turn_of(call, seat, out, grader_for(math), 0, 0).answer is None  # type: ignore[arg-type]
    assert ambiguous_replies(NUMBER, [hedged]) == 1  # and counted as a hedge
