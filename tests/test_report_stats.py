"""The report's statistics against independent implementations: scipy for McNemar (binomial test),
Wilson and Spearman; brute-force definitions for Holm and the Pareto front."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from sweep.report.stats import holm, mcnemar_exact, mean_std, pareto_front, ranks, spearman, wilson


@given(st.integers(0, 400), st.integers(0, 400))
@settings(max_examples=300, deadline=None)
def test_mcnemar_matches_scipy_binomial_test(b: int, c: int) -> None:
    ours = mcnemar_exact(b, c)
    expected = 1.0 if b + c == 0 else sps.binomtest(b, b + c, 0.5, alternative="two-sided").pvalue
    assert (ours.b, ours.c) == (b, c)
    assert ours.p == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_mcnemar_known_values_and_far_tail() -> None:
    assert mcnemar_exact(92, 69).p == pytest.approx(0.0826, abs=5e-5)  # docs/results.md: PEAR vs random
    assert mcnemar_exact(5, 5).p == 1.0
    assert mcnemar_exact(0, 3).p == pytest.approx(0.25)
    tiny = mcnemar_exact(0, 1500).p  # 2 / 2**1500 underflows a float: exact arithmetic gives 0.0 cleanly
    assert 0.0 <= tiny < 1e-300
    with pytest.raises(ValueError, match="b=-1"):
        mcnemar_exact(-1, 2)


@given(st.integers(0, 300).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
@settings(max_examples=300, deadline=None)
def test_wilson_matches_scipy(kn: tuple[int, int]) -> None:
    k, n = kn
    if n == 0:
        assert wilson(k, n) is None
        return
    lo, hi = wilson(k, n)  # type: ignore[misc]
    ci = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert (lo, hi) == (pytest.approx(ci.low, abs=1e-12), pytest.approx(ci.high, abs=1e-12))


def test_wilson_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError, match="k=5, n=3"):
        wilson(5, 3)


@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=2, max_size=15))
@settings(max_examples=300, deadline=None)
def test_spearman_matches_scipy_with_ties(pairs: list[tuple[int, int]]) -> None:
    x, y = [float(a) for a, _ in pairs], [float(b) for _, b in pairs]
    ours = spearman(x, y)
    if len(set(x)) == 1 or len(set(y)) == 1:
        assert ours is None
        return
    assert ours == pytest.approx(sps.spearmanr(x, y).statistic, abs=1e-12)


def test_ranks_average_ties() -> None:
    assert ranks([10, 20, 20, 5]) == [2.0, 3.5, 3.5, 1.0]
    assert spearman([1.0], [2.0]) is None


def _holm_brute(p: list[float]) -> list[float]:
    """Holm by definition: p_(i) adjusted = max over j <= i of min(1, (m - j + 1) p_(j))."""
    m = len(p)
    order = sorted(range(m), key=lambda i: (p[i], i))
    out = [0.0] * m
    for pos, i in enumerate(order):
        out[i] = max(min(1.0, (m - j) * p[order[j]]) for j in range(pos + 1))
    return out


@given(st.lists(st.one_of(st.none(), st.floats(0, 1)), max_size=12))
@settings(max_examples=300, deadline=None)
def test_holm_matches_its_definition_and_skips_none(values: list[float | None]) -> None:
    got = holm(values)
    present = [v for v in values if v is not None]
    expected = iter(_holm_brute(present))
    for v, g in zip(values, got, strict=True):
        if v is None:
            assert g is None
        else:
            assert g == pytest.approx(next(expected))


def test_holm_textbook_example() -> None:
    # p = 0.01, 0.04, 0.03, 0.005 (m = 4): sorted 0.005·4, 0.01·3, 0.03·2, 0.04·1 -> running max
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=12))
def test_pareto_front_matches_brute_force(points: list[tuple[int, int]]) -> None:
    cost, acc = [float(c) for c, _ in points], [float(a) for _, a in points]
    got = pareto_front(cost, acc)
    for i, (c, a) in enumerate(points):
        dominated = any(c2 <= c and a2 >= a and (c2, a2) != (c, a) for c2, a2 in points)
        assert got[i] == (not dominated)


def test_mean_std_is_the_sample_std_and_exact_on_fractions() -> None:
    values = [0.842, 0.80, 0.86, 0.85, 0.83]
    mean, std = mean_std(values)
    assert mean == pytest.approx(np.mean(values)) and std == pytest.approx(np.std(values, ddof=1))
    assert mean_std([Fraction(58, 80), Fraction(56, 80)])[0] == 0.7125  # one rounding: prints 0.713
    assert f"{mean_std([Fraction(58, 80), Fraction(56, 80)])[0]:.3f}" == "0.713"
    assert mean_std([0.5]) == (0.5, None) and mean_std([]) == (None, None)


def test_pareto_front_on_a_small_example() -> None:
    cost = [1.0, 2.0, 3.0, 3.0, 0.5]
    acc = [0.5, 0.7, 0.7, 0.9, 0.1]
    assert pareto_front(cost, acc) == [True, True, False, True, True]
    assert all(math.isfinite(c) for c in cost)
    assert list(itertools.compress(range(5), pareto_front(cost, acc))) == [0, 1, 3, 4]
