"""`actors.sim_seed.seeded` against numpy's own `default_rng`: every draw the same, for any entropy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.sim_seed import seeded

ENTROPY = st.lists(
    st.one_of(st.just(0), st.integers(0, 2**32 - 1), st.integers(0, 2**64 - 1), st.integers(0, 2**140)),
    min_size=1,
    max_size=8,
)


def draws(rng: np.random.Generator) -> list[float]:
    # Mixed draws: doubles, bounded ints (the 32-bit buffered path included) and a uniform block.
    return [*rng.random(3).tolist(), *rng.integers(0, 100, 5).tolist(), int(rng.integers(1, 6)), rng.random()]


@settings(max_examples=400, deadline=None)
@given(ENTROPY)
def test_seeded_draws_what_default_rng_draws(entropy: list[int]) -> None:
    assert draws(seeded(entropy)) == draws(np.random.default_rng(entropy))


def test_a_reseeded_generator_forgets_its_buffered_half_word() -> None:
    # A 32-bit draw leaves half a 64-bit word buffered; the next seeding must drop it, as a new
    # generator would not have it.
    seeded([7]).integers(0, 2**31, dtype=np.int32)
    assert seeded([8]).integers(0, 2**31, size=3, dtype=np.int32).tolist() == (
        np.random.default_rng([8]).integers(0, 2**31, size=3, dtype=np.int32).tolist()
    )


def test_negative_entropy_is_refused_like_numpy() -> None:
    with pytest.raises(ValueError):
        np.random.default_rng([-1])
    with pytest.raises(ValueError):
        seeded([-1])
