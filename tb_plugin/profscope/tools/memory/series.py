"""The allocator's totals over time, bounded for a chart.

The totals change only at `[memory]` events, so the exact curve is a step function: the value after
event i holds until event i+1. Past `MAX_POINTS` events the records are cut into `MAX_POINTS // 2`
runs of consecutive events and each run keeps its lowest and its highest point (in time order), so
every rise and dip wider than a run is still drawn and the maximum, the peak, is kept exactly; the
first and last points are always kept.
"""

from __future__ import annotations

import numpy as np

MAX_POINTS = 2000


def downsample(values: np.ndarray, max_points: int = MAX_POINTS) -> np.ndarray:
    """Positions of the points to draw (ascending), at most about `max_points`, the maximum kept."""
    n = int(values.shape[0])
    if n <= max_points:
        return np.arange(n, dtype=np.int64)
    runs = max(1, max_points // 2)
    bounds = np.linspace(0, n, runs + 1).astype(np.int64)
    starts = bounds[:-1]
    highs = np.maximum.reduceat(values, starts)
    lows = np.minimum.reduceat(values, starts)
    run_of = np.repeat(np.arange(runs), np.diff(bounds))
    positions = np.arange(n)
    first_high = np.full(runs, n, dtype=np.int64)
    first_low = np.full(runs, n, dtype=np.int64)
    np.minimum.at(first_high, run_of[values == highs[run_of]], positions[values == highs[run_of]])
    np.minimum.at(first_low, run_of[values == lows[run_of]], positions[values == lows[run_of]])
    keep = np.concatenate(([0, n - 1], first_high, first_low))
    return np.unique(keep)
