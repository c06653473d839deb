"""arrays.unique returns what np.unique returns, on the value kinds the package passes it."""

from __future__ import annotations

import numpy as np
import pytest

from profscope import arrays

_RNG = np.random.default_rng(7)


@pytest.mark.parametrize(
    "values",
    [
        _RNG.integers(0, 50, 10_000).astype(np.int32),
        _RNG.integers(0, 2**62, 10_000).astype(np.uint64),
        _RNG.integers(-5, 5, (30, 7)),
        np.array([b"17", b"3", b"17", b""], dtype="S2"),
        np.array([np.nan, 1.0, np.nan, -0.0, 0.0]),
        np.zeros(0, np.int64),
        np.array([4]),
        [3, 1, 3],
    ],
)
def test_unique_matches_numpy(values: object) -> None:
    got, want = arrays.unique(values), np.unique(values)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
