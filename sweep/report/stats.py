"""The statistics the debate papers report, in plain Python (exact where it matters): the exact
McNemar test, Holm's step-down correction, the Wilson score interval, Spearman's rank correlation,
mean ± std over seeds and the accuracy-cost Pareto front. The tests check them against scipy."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

Z95 = statistics.NormalDist().inv_cdf(0.975)  # 1.959963984540054


@dataclass(frozen=True)
class McNemar:
    """Paired outcomes of methods A and B: `b` = A right and B wrong, `c` = A wrong and B right."""

    b: int
    c: int
    p: float  # exact two-sided p-value


def mcnemar_exact(b: int, c: int) -> McNemar:
    """The exact McNemar test: under H0 the b + c discordant pairs split Binomial(b + c, 1/2);
    p = min(1, 2·P(X ≤ min(b, c))), and 1 when there is no discordant pair."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return McNemar(b, c, 1.0)
    tail = sum(math.comb(n, j) for j in range(min(b, c) + 1))
    # Integer numerator over 2**n: Python's true division of ints is correctly rounded, even for a
    # tail far below the smallest float that 0.5**n could give on its own.
    return McNemar(b, c, min(1.0, 2 * tail / 2**n))


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (family-wise error), in the input order; None entries (a
    comparison that could not be made) are not part of the family and stay None."""
    indexed = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(indexed)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(indexed):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion k/n (95 % by default); None when n = 0."""
    if n == 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    p = k / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, center - half), min(1.0, center + half)


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for j in range(start, end + 1):
            out[order[j]] = (start + end) / 2 + 1
        start = end + 1
    return out


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson's correlation of the (tie-averaged) ranks; None with fewer than two
    pairs or when either side is constant (no ranking to compare)."""
    if len(x) != len(y):
        raise ValueError(f"{len(x)} values against {len(y)}")
    if len(x) < 2:
        return None
    rx, ry = ranks(x), ranks(y)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def mean_std(values: Sequence[float | Fraction]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (n − 1, as the papers' ± over seeds); std None for one
    value, both None for none. Exact for `Fraction`s (accuracies k/n), so a mean such as 0.7125 is
    rounded once, not after float sums."""
    if not values:
        return None, None
    exact = [Fraction(v) for v in values]  # a float's exact value: what statistics.mean uses too
    return float(statistics.mean(exact)), (float(statistics.stdev(exact)) if len(exact) > 1 else None)


def pareto_front(cost: Sequence[float], accuracy: Sequence[float]) -> list[bool]:
    """For each point, whether no other point is at most as costly and at least as accurate, and
    strictly better in one of the two (lower cost, higher accuracy)."""
    if len(cost) != len(accuracy):
        raise ValueError(f"{len(cost)} costs against {len(accuracy)} accuracies")
    points = list(zip(cost, accuracy, strict=True))
    return [
        not any((c2 <= c and a2 >= a) and (c2 < c or a2 > a) for j, (c2, a2) in enumerate(points) if j != i)
        for i, (c, a) in enumerate(points)
    ]
