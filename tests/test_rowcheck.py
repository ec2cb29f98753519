"""The plain-Python row check refuses every value pyarrow would refuse (so a bad episode fails alone
when it is buffered, not later in its part), and accepts what pyarrow stores."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.store.rowcheck import RowCheck, checker
from sweep.store.schema import EPISODE_SCHEMA, ROUND_SCHEMA, TURN_SCHEMA

TYPES = [
    pa.string(),
    pa.int32(),
    pa.int64(),
    pa.float64(),
    pa.bool_(),
    pa.timestamp("us", tz="UTC"),
    pa.list_(pa.int32()),
    pa.list_(pa.string()),
    pa.list_(pa.bool_()),
    pa.list_(pa.float64()),
]
VALUES: list[Any] = [
    "x", "é", "a\ud800b", b"abc", b"\xff", 0, -3, 2**31 - 1, 2**31, -(2**31) - 1, 2**63, 1.0, 1.5, float("nan"),
    True, False, np.int64(7), np.int32(2**30), np.float64(2.5), np.float32(3.0), np.bool_(True),
    datetime.now(UTC), [1, 2], (1, None), [], ["a", "b"], [True], [1.5], ["a", 1], {"k": 1}, object(),
    [2**31], [-(2**31) - 1], [2**63], [True, 1], [1, True], ["é"], ["a\ud800"], [1.5, 2], [np.int64(3)],
    [None, 1], [float("nan")], [False, None], [b"x"], [[1]],
]  # fmt: skip


def _pyarrow_takes(type_: pa.DataType, v: Any) -> bool:
    try:
        pa.array([v], type_)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        return False
    return True


@pytest.mark.parametrize("type_", TYPES, ids=str)
def test_every_value_pyarrow_refuses_is_refused(type_: pa.DataType) -> None:
    check = RowCheck(pa.schema([pa.field("c", type_, nullable=True)]), "row")
    for v in VALUES:
        try:
            check([{"c": v}])
            ours = True
        except ValueError as e:
            assert "'c'" in str(e)  # the column is named
            ours = False
        if not _pyarrow_takes(type_, v):
            assert not ours, f"{type_}: {v!r} passes the check but pyarrow refuses it"


@pytest.mark.parametrize(
    ("type_", "v"),
    [
        (pa.string(), "x"),
        (pa.string(), "é"),
        (pa.int32(), np.int64(7)),
        (pa.int32(), 2**31 - 1),
        (pa.int64(), 2**62),
        (pa.float64(), 3),
        (pa.float64(), np.float32(3.0)),
        (pa.bool_(), np.bool_(False)),
        (pa.list_(pa.int32()), (1, None)),
        (pa.list_(pa.int32()), np.array([1, 2])),
        (pa.list_(pa.string()), []),
        (pa.timestamp("us", tz="UTC"), datetime.now(UTC)),
    ],  # fmt: skip
)
def test_what_pyarrow_stores_passes(type_: pa.DataType, v: Any) -> None:
    assert _pyarrow_takes(type_, v)
    RowCheck(pa.schema([pa.field("c", type_)]), "row")([{"c": v}])


def test_nulls_and_unknown_columns() -> None:
    check = RowCheck(
        pa.schema([pa.field("a", pa.int32(), nullable=False), pa.field("b", pa.string())]), "turn"
    )
    check([{"a": 1}, {"a": 2, "b": None}])
    with pytest.raises(ValueError, match="turn column 'a' is missing or null"):
        check([{"a": 1}, {"b": "x"}])
    with pytest.raises(ValueError, match=r"unknown columns \['zz'\]"):
        check([{"a": 1, "zz": 0}])


def test_a_lone_surrogate_names_its_column() -> None:
    with pytest.raises(UnicodeEncodeError, match="turn column 'text'"):
        RowCheck(pa.schema([TURN_SCHEMA.field("text")]), "turn")([{"text": "a\ud800"}])


def test_the_contract_schemas_are_all_checkable() -> None:
    for schema in (EPISODE_SCHEMA, TURN_SCHEMA, ROUND_SCHEMA):
        RowCheck(schema, "x")  # raises TypeError for a column type it has no check for


LIST_ITEMS = st.one_of(
    st.integers(-(2**64), 2**64), st.text(max_size=4), st.booleans(), st.floats(), st.none(),
    st.binary(max_size=2), st.just(np.int64(5)),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([pa.int32(), pa.int64(), pa.string(), pa.bool_(), pa.float64()]),
    st.lists(LIST_ITEMS, max_size=5),
)
def test_a_list_is_judged_as_its_items_are(item_type: pa.DataType, items: list[Any]) -> None:
    # The list check's shortcut (a list of plain values of the item type) decides as checking
    # every item would.
    list_check, item_check = checker(pa.list_(item_type)), checker(item_type)

    def one_by_one() -> bool:
        return all(x is None or item_check(x) for x in items)

    try:
        expected: bool | type[Exception] = one_by_one()
    except UnicodeEncodeError:
        expected = UnicodeEncodeError
    try:
        got: bool | type[Exception] = list_check(items)
    except UnicodeEncodeError:
        got = UnicodeEncodeError
    assert got == expected
