"""Train/dev/test partitions for methods that learn, derived deterministically and disjoint by construction.

A partition *scheme* (e.g. CPP's 150/100/100) is named in a split as `"<scheme>:<part>"`, e.g.
`split: cpp:train`. Its items are drawn from a *pool* (a native split, usually `test`): the pool is
ranked by a hash of (scheme, item id) and each part takes the next `size` items of that ranking, so
parts never overlap, and an item's part depends only on its id and the pool, never on file order,
on the run's seed, or on which part is asked for. A part may draw from another benchmark's pool (GPQA
Diamond's CPP dev set comes from GPQA main), minus every item of this benchmark's own pool. With a
`stratum`, sizes count per value of that metadata key (MMLU's dev split: 5 items per subject).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from data.types import Sample


@dataclass(frozen=True)
class Part:
    """One part of a scheme: `size` items (per stratum if the scheme has one; None: all left over),
    drawn from this benchmark's pool, or from benchmark `pool` when given."""

    name: str
    size: int | None
    pool: str | None = None


@dataclass(frozen=True)
class Scheme:
    """Parts drawn, in order, from the native split `pool_split`; `note` says where the sizes come from."""

    parts: tuple[Part, ...]
    pool_split: str = "test"
    stratum: str | None = None
    note: str = ""

    def part_names(self) -> list[str]:
        return [p.name for p in self.parts]


def _rank(scheme: str, items: Sequence[Sample]) -> list[Sample]:
    """`items` in the scheme's fixed pseudo-random order: by sha256 of (scheme, id), ids breaking ties."""
    return sorted(items, key=lambda s: (hashlib.sha256(f"{scheme}/{s.id}".encode()).hexdigest(), s.id))


def _groups(items: Sequence[Sample], stratum: str | None) -> dict[str, list[Sample]]:
    groups: dict[str, list[Sample]] = defaultdict(list)
    for s in items:
        groups["" if stratum is None else str(s.metadata.get(stratum, ""))].append(s)
    return groups


def _take(
    scheme: str, items: Sequence[Sample], size: int | None, stratum: str | None, where: str
) -> list[Sample]:
    """The first `size` items of each stratum's ranking (all of them for None); ValueError if too few."""
    taken: list[Sample] = []
    for key, group in sorted(_groups(items, stratum).items()):
        if size is not None and len(group) < size:
            label = f" {stratum} {key!r}" if stratum else ""
            raise ValueError(f"{where}: needs {size} items{label} but the pool has only {len(group)} left")
        taken += _rank(scheme, group)[:size]
    return taken


def partition(
    bench: str,
    scheme_name: str,
    scheme: Scheme,
    pool: Sequence[Sample],
    other_pool: Callable[[str], Sequence[Sample]],
) -> dict[str, list[Sample]]:
    """Every part of `scheme` over `pool` (this benchmark's `scheme.pool_split` items), each in pool order
    and tagged with `metadata['partition'] = '<scheme>:<part>'`. `other_pool(name)` loads another
    benchmark's pool for parts that draw from one."""
    own_ids = {s.id for s in pool}
    if len(own_ids) != len(pool):
        raise ValueError(f"{bench}: item ids are not unique; cannot partition")
    loaded: dict[str | None, list[Sample]] = {None: list(pool)}
    left = dict(loaded)
    parts: dict[str, list[Sample]] = {}
    for part in scheme.parts:
        if part.pool not in loaded:
            assert part.pool is not None  # this benchmark's own pool (None) is always loaded
            loaded[part.pool] = [s for s in other_pool(part.pool) if s.id not in own_ids]
            left[part.pool] = loaded[part.pool]
        where = f"{bench} split '{scheme_name}:{part.name}'"
        try:
            chosen = _take(scheme_name, left[part.pool], part.size, scheme.stratum, where)
        except ValueError as e:
            raise ValueError(f"{e}. {scheme.note}".rstrip(". ")) from None
        chosen_ids = {s.id for s in chosen}
        left[part.pool] = [s for s in left[part.pool] if s.id not in chosen_ids]
        tag = f"{scheme_name}:{part.name}"
        parts[part.name] = [  # in the order of the pool the part was drawn from
            dataclasses.replace(s, metadata={**s.metadata, "partition": tag})
            for s in loaded[part.pool]
            if s.id in chosen_ids
        ]
    return parts
