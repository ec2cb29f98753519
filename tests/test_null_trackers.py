"""Each tracker's null twin (tracking off) answers every public call of the tracker with the same
arguments, so no caller has to ask whether tracking is on before it calls (the no-op logger pattern)."""

from __future__ import annotations

import inspect

import pytest

from sweep.study.tracking import NullStudyTracker, StudyTracker
from sweep.tracking.tracker import NullTracker, Tracker
from sweep.train.tracking import NullTrainTracker, TrainTracker


def public(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(fn)
        for name, fn in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    }


@pytest.mark.parametrize(
    ("real", "null"),
    [(Tracker, NullTracker), (TrainTracker, NullTrainTracker), (StudyTracker, NullStudyTracker)],
)
def test_a_null_tracker_has_every_call_of_its_tracker(real: type, null: type) -> None:
    want, got = public(real), public(null)
    assert set(want) <= set(got), f"{null.__name__} lacks {sorted(set(want) - set(got))}"
    for name, sig in want.items():
        assert list(sig.parameters) == list(got[name].parameters), name
    assert null().uri is None  # nothing logged anywhere
