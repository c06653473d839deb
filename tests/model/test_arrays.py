"""arrays.unique, arrays.stable_argsort and arrays.grouped_records return what numpy returns, on the inputs the package passes."""

from __future__ import annotations

import numpy as np
import pytest

from profscope.model import arrays

pytestmark = pytest.mark.stack_independent

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


_PACKED = np.dtype([("start", "<i8"), ("dur", "<i8"), ("idx", "<i4"), ("row", "<i4"), ("group", "i1")])
_ALIGNED = np.dtype([("a", "i1"), ("b", "<i8"), ("c", "<f8")], align=True)


@pytest.mark.parametrize("dtype", [_PACKED, _ALIGNED])
@pytest.mark.parametrize("stride", [1, 3])
@pytest.mark.parametrize("groups", [1, 7, 300])
def test_grouped_records_match_a_stable_sort_by_key(dtype: np.dtype, stride: int, groups: int) -> None:
    records = np.zeros(3000, dtype)
    for k, name in enumerate(dtype.names):
        records[name] = _RNG.integers(-100, 100, 3000) * (k + 1)
    records = records[::stride]
    key = _RNG.integers(0, groups, records.shape[0]) * (groups > 1)
    got, offsets = arrays.grouped_records(records, key, groups + 2)
    order = np.argsort(key, kind="stable")
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, records[order])
    np.testing.assert_array_equal(offsets, np.searchsorted(key[order], np.arange(groups + 3)))


def test_grouped_records_of_plain_values_and_of_none() -> None:
    values = np.arange(6) * 3
    got, offsets = arrays.grouped_records(values, np.array([2, 0, 2, 1, 0, 2]), 3)
    np.testing.assert_array_equal(got, [3, 12, 9, 0, 6, 15])
    np.testing.assert_array_equal(offsets, [0, 2, 3, 6])
    got, offsets = arrays.grouped_records(np.zeros(0, _PACKED), np.zeros(0, np.int64), 2)
    assert got.shape == (0,) and offsets.tolist() == [0, 0, 0]


@pytest.mark.parametrize(
    "keys",
    [
        np.array([3, 1, 3, 0, 1, 3], dtype=np.int64),  # small keys: the radix path
        np.array([70000, 5, 70000, 5, 0], dtype=np.int64),  # past 16 bits
        np.array([-1, 4, -1, 2], dtype=np.int32),  # negative keys
        np.array([2, 1, 2], dtype=np.uint8),
        np.zeros(0, dtype=np.int64),
        np.random.default_rng(3).integers(0, 144, 10_000),
    ],
)
def test_stable_argsort_is_numpys_stable_argsort(keys: np.ndarray) -> None:
    assert np.array_equal(arrays.stable_argsort(keys), np.argsort(keys, kind="stable"))
