"""How the Python side writes numbers into texts (finding summaries, evidence): the frontend's convention.

`frontend/src/shared/units.ts` is the other half: durations from ns in ns, µs, ms, s, min, h and byte
sizes in IEC binary units (B, KiB, MiB, GiB, TiB, PiB), both to 3 significant digits; counts with
thousands separators; a value never measured reads "not observed", never 0. Numbers are printed the
way JavaScript prints them ("1.5", "1000", never "1e+03"), so a text reads the same whichever side
wrote it.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

# What a value that was never measured reads: "0" would claim a measurement.
NOT_OBSERVED = "not observed"

# (symbol, how many of the base unit one of it holds), the largest first.
_TIME_UNITS: tuple[tuple[str, float], ...] = (
    ("h", 3600e9),
    ("min", 60e9),
    ("s", 1e9),
    ("ms", 1e6),
    ("µs", 1e3),
    ("ns", 1.0),
)
_BYTE_UNITS: tuple[tuple[str, float], ...] = (
    ("PiB", 1024.0**5),
    ("TiB", 1024.0**4),
    ("GiB", 1024.0**3),
    ("MiB", 1024.0**2),
    ("KiB", 1024.0),
)


def _absent(x: float | None) -> bool:
    return x is None or not math.isfinite(x)


def _round_significant(x: float, digits: int, *, from_shortest: bool = False) -> float:
    """`x` to `digits` significant digits, ties away from zero. JavaScript's `toPrecision` rounds the
    exact binary value; `Intl.NumberFormat` (`from_shortest`) rounds the shortest decimal that reads
    back as `x`."""
    if x == 0 or not math.isfinite(x):
        return x
    exact = Decimal(repr(x)) if from_shortest else Decimal(x)
    step = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    return float(exact.quantize(step, rounding=ROUND_HALF_UP))


def _number_text(x: float, *, positional: bool = False) -> str:
    """`x` as JavaScript's `String(x)` writes it: the shortest digits that read back as `x`, an
    exponent only below 1e-6 or from 1e21 on (never when `positional`, as `toLocaleString`)."""
    if x == 0:
        return "0"
    _, digit_tuple, exponent = Decimal(repr(abs(float(x)))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    point = int(exponent) + len(digits)  # the value is 0.<digits> × 10^point
    sign = "-" if x < 0 else ""
    if not positional and not -6 < point <= 21:
        mantissa = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'+' if point >= 1 else '-'}{abs(point - 1)}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    if point > 0:
        return f"{sign}{digits[:point]}.{digits[point:]}"
    return f"{sign}0.{'0' * -point}{digits}"


def _in_units(value: float, units: tuple[tuple[str, float], ...], digits: int) -> str:
    """`value` in the largest of `units` it reaches, to `digits` significant digits; a rounding that
    reaches the next unit up uses that one ("1 ms", not "1000 µs")."""
    i = next((k for k, (_, scale) in enumerate(units) if abs(value) >= scale), len(units) - 1)
    shown = _round_significant(value / units[i][1], digits)
    if i > 0 and abs(shown) * units[i][1] >= units[i - 1][1]:
        i -= 1
        shown = _round_significant(value / units[i][1], digits)
    return f"{_number_text(shown)} {units[i][0]}"


def format_duration(ns: float | None, digits: int = 3) -> str:
    """A duration given in ns: "512 ns", "3.21 µs", "1.5 ms", "2.01 s", "1.5 min", "1.2 h"."""
    if _absent(ns):
        return NOT_OBSERVED
    return _in_units(ns, _TIME_UNITS, digits)


def format_bytes(size: float | None, digits: int = 3) -> str:
    """A size in bytes: "52 B", "1000 B", "9.57 KiB", "12.5 MiB" (below 1 KiB to at least 4 digits,
    so a byte count under 1024 is exact)."""
    if _absent(size):
        return NOT_OBSERVED
    if abs(size) < 1024:
        return f"{_number_text(_round_significant(size, max(4, digits)))} B"
    return _in_units(size, _BYTE_UNITS, digits)


def format_count(n: float | None) -> str:
    """A count with thousands separators ("1,234,567"); a value that is not a whole number (a counter
    sample, an average) to 4 significant digits."""
    if _absent(n):
        return NOT_OBSERVED
    if isinstance(n, int) or float(n).is_integer():
        return f"{int(n):,}"
    text = _number_text(_round_significant(float(n), 4, from_shortest=True), positional=True)
    whole, _, fraction = text.partition(".")
    sign = "-" if whole.startswith("-") else ""
    grouped = f"{sign}{int(whole.lstrip('-')):,}"
    return f"{grouped}.{fraction}" if fraction else grouped
