"""`profscope.units`: how the XLA findings write durations, sizes and counts, the convention of
`frontend/src/shared/units.ts` (3 significant digits, IEC byte units, thousands separators, and
"not observed" for a value never measured). Expected texts are what the TypeScript functions print."""

from __future__ import annotations

import math

import pytest

from profscope.units import NOT_OBSERVED, format_bytes, format_count, format_duration

pytestmark = pytest.mark.stack_independent


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (512, "512 ns"),
        (0.5, "0.5 ns"),
        (3210, "3.21 µs"),
        (1.5e6, "1.5 ms"),
        (999.95e3, "1 ms"),  # the rounding reaches the next unit: never "1000 µs"
        (5_008_965_807.0, "5.01 s"),
        (60e9, "1 min"),
        (100e9, "1.67 min"),
        (3599.9e9, "1 h"),
        (1234 * 3600e9, "1230 h"),  # no exponent: "1230", as JavaScript prints it
        (1.125, "1.13 ns"),  # ties round up, as `toPrecision` does
        (-1.125, "-1.13 ns"),
        (0, "0 ns"),
    ],
)
def test_durations(ns: float, text: str) -> None:
    assert format_duration(ns) == text


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (52, "52 B"),
        (1000, "1000 B"),
        (1023.5, "1024 B"),  # below 1 KiB to 4 digits
        (9.57 * 1024, "9.57 KiB"),
        (12.5 * 1024**2, "12.5 MiB"),
        (1023.99 * 1024**2, "1020 MiB"),  # 3 digits never round up to 1024 of a unit
        (3 * 1024**4, "3 TiB"),
    ],
)
def test_byte_sizes(size: float, text: str) -> None:
    assert format_bytes(size) == text


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (1234567, "1,234,567"),
        (3.0, "3"),
        (-2500, "-2,500"),
        (0.71234, "0.7123"),
        (12345.6, "12,350"),
        (1.5, "1.5"),
    ],
)
def test_counts(n: float, text: str) -> None:
    assert format_count(n) == text


def test_absent_values_are_not_observed() -> None:
    for value in (None, math.nan, math.inf):
        assert format_duration(value) == format_bytes(value) == format_count(value) == NOT_OBSERVED
