"""Rows checked against an Arrow schema in plain Python, without building a table: what
`pyarrow.Table.from_pylist` would reject (a wrong type, an int out of range, a null in a
non-nullable column, an unknown key) raises here, naming the column. A finished episode's rows are
checked once when it is buffered (one bad episode fails alone, at once) and converted to Arrow once
per part, many episodes together — converting each episode alone cost ~10x more per row.

Slightly stricter than pyarrow where pyarrow's leniency would hide a bug (a string for a list, a set,
an int for a timestamp); `sweep.store.part_writer` still converts each episode alone when a part fails."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

Check = Callable[[Any], bool]

_INT_RANGE = {
    8: (-(2**7), 2**7 - 1),
    16: (-(2**15), 2**15 - 1),
    32: (-(2**31), 2**31 - 1),
    64: (-(2**63), 2**63 - 1),
}


def _is_str(v: Any) -> bool:
    if isinstance(v, str):
        if not v.isascii():  # isascii is O(1) in CPython: a flag of the string object
            v.encode("utf-8")  # raises on a lone surrogate, which cannot be stored
        return True
    if isinstance(v, bytes):
        try:
            v.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True
    return False


def _int_check(bits: int) -> Check:
    lo, hi = _INT_RANGE[bits]

    def check(v: Any) -> bool:
        if isinstance(v, bool | np.bool_):
            return False
        if isinstance(v, int | np.integer):
            return lo <= int(v) <= hi
        if isinstance(v, float | np.floating):  # pyarrow takes an integral float
            return bool(float(v).is_integer()) and lo <= float(v) <= hi
        return False

    return check


_I64 = _INT_RANGE[64]


def _is_float(v: Any) -> bool:
    if isinstance(v, int):  # pyarrow converts a Python int through int64
        return _I64[0] <= v <= _I64[1]
    return isinstance(v, float | np.integer | np.floating)


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool | np.bool_)


def _is_time(v: Any) -> bool:
    return isinstance(v, datetime)


def _list_check(item: Check, fast: tuple[type | None, int, int]) -> Check:
    kind, lo, hi = fast
    only = {kind}

    def check(v: Any) -> bool:
        # The common case without a call per item: a list of the item type's plain values (ASCII
        # strs, ints in range, floats, bools) always fits.
        if type(v) is list and kind is not None and set(map(type, v)) <= only:
            if kind is int:
                return not v or (lo <= min(v) and max(v) <= hi)
            if kind is not str or "".join(v).isascii():
                return True
        if not isinstance(v, list | tuple | np.ndarray):
            return False
        return all(x is None or item(x) for x in v)  # list items are nullable in every schema here

    return check


def checker(type_: pa.DataType) -> Check:
    """The check of one value of `type_` (a non-null value)."""
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return _is_str
    if pa.types.is_signed_integer(type_):
        return _int_check(type_.bit_width)
    if pa.types.is_floating(type_):
        return _is_float
    if pa.types.is_boolean(type_):
        return _is_bool
    if pa.types.is_timestamp(type_):
        return _is_time
    if pa.types.is_list(type_):
        return _list_check(checker(type_.value_type), _fast(type_.value_type))
    raise TypeError(f"no row check for Arrow type {type_}")


def _fast(type_: pa.DataType) -> tuple[type | None, int, int]:
    """(the Python type whose values of `type_` always fit — for str, when ASCII; for int, within
    the bounds —, low, high); None where every value needs the full check (lists, timestamps)."""
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return str, 0, 0
    if pa.types.is_signed_integer(type_):
        return (int, *_INT_RANGE[type_.bit_width])
    if pa.types.is_floating(type_):
        return float, 0, 0
    if pa.types.is_boolean(type_):
        return bool, 0, 0
    return None, 0, 0


class RowCheck:
    """Checks rows of one schema; `what` names the table in errors ("episode", "turn", "round")."""

    def __init__(self, schema: pa.Schema, what: str) -> None:
        self.what = what
        self.names = frozenset(schema.names)
        self._fields = [(f.name, f.nullable, checker(f.type), _fast(f.type)) for f in schema]
        self._types = {f.name: str(f.type) for f in schema}

    def __call__(self, rows: Iterable[dict[str, Any]]) -> None:
        """Raises ValueError naming the column of the first value `pyarrow` would not store."""
        for row in rows:
            if not self.names.issuperset(row):
                raise ValueError(f"{self.what} row has unknown columns {sorted(set(row) - self.names)}")
            for name, nullable, check, fast in self._fields:
                v = row.get(name)
                if v is None:
                    if not nullable:
                        raise ValueError(f"{self.what} column {name!r} is missing or null in some row")
                    continue
                kind = type(v)
                if (
                    kind is fast[0]
                    and (kind is not int or fast[1] <= v <= fast[2])
                    and (kind is not str or v.isascii())
                ):
                    continue  # the common case, decided without a call: an ASCII str, an int in range, a float
                try:
                    fits = check(v)
                except UnicodeEncodeError as e:
                    raise UnicodeEncodeError(
                        e.encoding, e.object, e.start, e.end, f"{e.reason} ({self.what} column {name!r})"
                    ) from None
                if not fits:
                    raise ValueError(
                        f"{self.what} column {name!r}: {type(v).__name__} {str(v)[:60]!r} does not fit {self._types[name]}"
                    )
