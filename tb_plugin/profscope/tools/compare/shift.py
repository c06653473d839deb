"""The step-time difference of two runs with its dispersion: the Hodges–Lehmann estimator of the
shift and its distribution-free confidence interval (Moses' interval from the Mann–Whitney count).

Estimator. With the base's steady step times y_1..y_n and the run's x_1..x_m, the shift Δ (run −
base) is estimated by the median of the m·n pairwise differences x_i − y_j (Hodges & Lehmann 1963).
Unlike the difference of the two medians it uses every step, and unlike the difference of the means
one slow step cannot drag it.

Interval. Sorting the differences D_(1) ≤ … ≤ D_(mn), the 100(1 − α) % interval is
[D_(k), D_(mn+1−k)], k the largest integer with P(U ≤ k − 1) ≤ α/2, U the Mann–Whitney count (pairs
with x_i > y_j) when there is no shift (Moses 1965; Hollander & Wolfe, *Nonparametric Statistical
Methods*, § 4.3). U's distribution is exact (Mann & Whitney's recurrence) for m·n ≤ `EXACT_PAIRS`,
else its normal approximation. U is discrete, so the exact interval covers at least `CONFIDENCE` and
the answer states the coverage it reaches. Assumptions: the steps of each run are independent draws
from distributions of one shape that differ by a shift; no normality. Ties (equal step times) make
the interval a little conservative. Consecutive steps of one process are not fully independent
(clocks, caches, the allocator), which is one more reason to confirm outside the profiler.

Ratio. The same estimator on log step times, exponentiated: the run ÷ base ratio with its interval,
scale-free (what "1.3× faster" means).

Too few steps. When no k ≥ 1 meets the bound (3 steps against 3: the smallest tail, 1/20, is over
2.5 %) there is no interval, and the answer says so instead of giving a bare number. Sides of more
than `MAX_STEPS` steps are reduced to that many evenly spaced quantiles first (the pairwise
differences would not fit in memory), and the answer says so.
"""

from __future__ import annotations

import dataclasses
import math
import statistics

import numpy as np

CONFIDENCE = 0.95
EXACT_PAIRS = 2_500
MAX_STEPS = 2_000


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A Hodges–Lehmann shift: the estimate and, when the samples allow one, its interval with the
    coverage it reaches (`method` "exact" or "normal")."""

    estimate: float
    low: float | None
    high: float | None
    coverage: float | None
    method: str
    reduced: bool


def u_distribution(m: int, n: int) -> np.ndarray:
    """P(U = u) for u = 0..m·n, U the Mann–Whitney count of samples of sizes m and n under no
    shift: the largest of the m + n values is one of the m with probability m / (m + n), and then
    it exceeds all n others (U = n + U(m − 1, n)), else U = U(m, n − 1)."""
    previous = [np.ones(1) for _ in range(n + 1)]
    for i in range(1, m + 1):
        current = [np.ones(1)]
        for j in range(1, n + 1):
            out = np.zeros(i * j + 1)
            out[j:] += i / (i + j) * previous[j]
            out[: i * (j - 1) + 1] += j / (i + j) * current[j - 1]
            current.append(out)
        previous = current
    return previous[n]


def _rank(m: int, n: int, confidence: float) -> tuple[int, float | None, str]:
    """k of the interval [D_(k), D_(mn+1−k)] (0: none possible), the coverage reached, the method."""
    alpha = 1 - confidence
    if m * n <= EXACT_PAIRS:
        cdf = np.cumsum(u_distribution(m, n))
        k = int(np.count_nonzero(cdf <= alpha / 2 + 1e-12))
        return k, (1 - 2 * float(cdf[k - 1]) if k else None), "exact"
    z = statistics.NormalDist().inv_cdf(1 - alpha / 2)
    k = int(math.floor(m * n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12) + 0.5))
    return max(k, 0), (confidence if k >= 1 else None), "normal"


def _reduced(values: np.ndarray) -> np.ndarray:
    if values.shape[0] <= MAX_STEPS:
        return values
    return np.quantile(values, np.linspace(0, 1, MAX_STEPS))


def hodges_lehmann(run: np.ndarray, base: np.ndarray, confidence: float = CONFIDENCE) -> Estimate:
    """The shift run − base (module docstring); both samples need at least one value."""
    x = _reduced(np.asarray(run, dtype=np.float64))
    y = _reduced(np.asarray(base, dtype=np.float64))
    reduced = x.shape[0] < len(run) or y.shape[0] < len(base)
    m, n = x.shape[0], y.shape[0]
    if not m or not n:
        raise ValueError("the Hodges–Lehmann shift needs steps on both sides")
    differences = np.sort((x[:, None] - y[None, :]).ravel())
    estimate = float(np.median(differences))
    k, coverage, method = _rank(m, n, confidence)
    if k < 1:
        return Estimate(estimate, None, None, None, method, reduced)
    low, high = float(differences[k - 1]), float(differences[m * n - k])
    return Estimate(estimate, low, high, coverage, method, reduced)


def ratio(run: np.ndarray, base: np.ndarray, confidence: float = CONFIDENCE) -> Estimate | None:
    """run ÷ base: the shift of the log step times, exponentiated; None when a time is not positive."""
    run, base = np.asarray(run, dtype=np.float64), np.asarray(base, dtype=np.float64)
    if (run <= 0).any() or (base <= 0).any():
        return None
    logs = hodges_lehmann(np.log(run), np.log(base), confidence)
    return Estimate(
        math.exp(logs.estimate),
        math.exp(logs.low) if logs.low is not None else None,
        math.exp(logs.high) if logs.high is not None else None,
        logs.coverage,
        logs.method,
        logs.reduced,
    )
