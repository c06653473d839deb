"""Time in Chrome traces: `ts` / `dur` texts parsed exactly, and the time base of the trace.

Kineto writes µs with up to 3 decimals, epoch-based (≈1.7e15), beyond float64's exact range at
ns, so times are kept as (whole µs, ps remainder) integers from their decimal text (`parse_us`).
`Clock` then picks the trace's zero (the earliest time of the bulk of the trace, a whole ns, far
outliers left out) and converts to ps from it; `origin_ns` places that zero in absolute time, from
`baseTimeNanoseconds` or epoch-based `ts`.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

import numpy as np

PS_PER_US = 1_000_000
# Durations and distances from the trace's zero stay well inside int64 picoseconds (±106 days).
MAX_US = 50 * 86_400 * 1_000_000
# Absolute timestamps: anything a profiler writes (epoch µs are ≈1.7e15).
MAX_ABS_US = 4 * 10**18
_POW10 = 10 ** np.arange(19, dtype=np.int64)
# Events further than this from the bulk of the trace are dropped (garbage timestamps).
OUTLIER_US = 25 * 86_400 * 1_000_000
# µs since the epoch of 2000-01-01 and 2100-01-01: `ts` in this range is taken as epoch-based.
_EPOCH_US_LO, _EPOCH_US_HI = 946_684_800 * 10**6, 4_102_444_800 * 10**6


def parse_us(raws: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact (whole µs, ps remainder in [0, 10**6), valid) from JSON number texts in µs.

    Kineto writes µs with up to 3 decimals, epoch-based (≈1.7e15), beyond float64's exact range at
    ns, so the digits are parsed as integers: the texts are joined, the decimal points dropped, and
    numpy parses the digit strings in one call; the decimal count per field then splits whole µs
    and fraction. Texts with one number of decimals (a batch of Kineto `ts` or `dur`) are checked
    in bulk (`_parse_same_decimals`), others field by field; texts of one width besides (a batch
    of `ts`) are read as a matrix of digits, with no parse at all (`_parse_fixed_width`); texts that
    each hold one point (floats as Python writes them) are parsed with the point as a separator
    (`_parse_pointed`), texts of digits alone in one call too (`_parse_integers`). Texts the
    field-by-field path rejects (exponents, quoted numbers, ≥ 9e18 as digits) go through
    `Decimal`; what is still not a finite number is returned as invalid.
    """
    n = len(raws)
    joined = b" ".join(raws)
    fixed = _parse_fixed_width(joined, n)
    if fixed is not None:
        return fixed
    whole = _parse_integers(joined, n)
    if whole is not None:
        return whole
    pointed = _parse_pointed(joined, n)
    if pointed is not None:
        return pointed
    few = _parse_few_decimals(joined, n)
    if few is not None:
        return few
    us = np.zeros(n, np.int64)
    frac = np.zeros(n, np.int64)
    if len(joined) < n:  # every text is empty (n - 1 separators): no event has a time
        return us, frac, np.zeros(n, bool)
    a = np.frombuffer(joined, np.uint8)
    # Index of the separator after each field; a field holding a space itself (a damaged value
    # such as a quoted string) shifts them, and then lengths are taken one by one.
    ends = np.append(np.flatnonzero(a == 32), a.shape[0])
    if ends.shape[0] == n:
        same = _parse_same_decimals(joined, a, ends)
        if same is not None:
            return same
        starts = _starts_of(ends)
        lens = ends - starts
        not_separator = a != 32
    else:
        lens = np.fromiter(map(len, raws), np.int64, n)
        ends = np.cumsum(lens + 1) - 1
        starts = ends - lens
        not_separator = np.ones(a.shape[0], bool)  # a space inside a text is a non-digit
        not_separator[ends[:-1]] = False
    non_digit = np.flatnonzero(((a - np.uint8(48)) > 9) & not_separator)
    field = np.searchsorted(ends, non_digit)
    ch = a[non_digit]
    is_dot = ch == 46
    is_minus = (ch == 45) & (non_digit == starts[field])
    bad = np.zeros(n, bool)
    bad[field[~(is_dot | is_minus)]] = True
    bad[np.bincount(field[is_dot], minlength=n) > 1] = True
    dot_at = np.full(n, -1, np.int64)
    dot_at[field[is_dot]] = non_digit[is_dot]
    negative = np.zeros(n, bool)
    negative[field[is_minus]] = True
    has_dot = dot_at >= 0
    digits = lens - has_dot - negative
    # int64 holds every 19-digit string below 9e18: epoch µs with 3 decimals (≈1.7e18) fit.
    lead = a[np.minimum(starts + negative, a.shape[0] - 1)]
    bad |= (digits <= 0) | (digits > 19) | ((digits == 19) & (lead >= ord("9")))
    decimals = np.where(has_dot, ends - dot_at - 1, 0)
    if bad.any():
        joined = b" ".join([b"0" if b else r for r, b in zip(raws, bad.tolist())])
        decimals[bad] = 0
    values = np.fromstring(joined.replace(b".", b""), dtype=np.int64, sep=" ")
    if values.shape[0] != n:  # should not happen once fields are validated; stay exact anyway
        values = np.zeros(n, np.int64)
        bad[:] = True
    magnitude = np.abs(values)
    scale = _POW10[decimals]
    whole = magnitude // scale
    rest = magnitude - whole * scale
    # Fraction of a µs in ps: pad to 6 decimals, or round digits below 1 ps (half away from zero).
    up = decimals <= 6
    rest_ps = np.where(up, rest * _POW10[np.where(up, 6 - decimals, 0)], 0)
    if not up.all():
        div = _POW10[np.where(up, 0, decimals - 6)]
        rounded = (rest + div // 2) // div
        rest_ps = np.where(up, rest_ps, rounded)
    carry = rest_ps >= PS_PER_US
    whole += carry
    rest_ps -= carry * PS_PER_US
    borrow = negative & (rest_ps > 0)
    us[:] = np.where(negative, -whole - borrow, whole)
    frac[:] = np.where(borrow, PS_PER_US - rest_ps, rest_ps)
    valid = ~bad
    for i in np.flatnonzero(bad & (lens > 0)).tolist():
        parsed = _parse_us_slow(bytes(raws[i]))
        if parsed is not None:
            us[i], frac[i] = parsed
            valid[i] = True
    valid &= np.abs(us) <= MAX_ABS_US
    return us, frac, valid


def _parse_fixed_width(joined: bytes, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """`parse_us` of `n` texts joined by spaces when they are all one width with the point in one
    place (Kineto's `ts` texts: 16 digits, a point, 3 decimals); None otherwise.

    The texts are then the rows of a matrix: one check of every byte (digits, point, separator),
    and whole µs and fraction are each one product of a digit block with powers of ten. Widths of
    up to 18 digits before the point and 6 after keep both exact in int64 and inside `MAX_ABS_US`.
    """
    if n == 0:
        return None
    width = (len(joined) + 1) // n
    length = width - 1
    if width * n != len(joined) + 1 or length == 0:
        return None
    point = joined.find(b".", 0, length)
    whole_digits = point if point >= 0 else length
    decimals = length - point - 1 if point >= 0 else 0
    if not 0 < whole_digits <= 18 or decimals > 6:
        return None
    rows = np.frombuffer(joined + b" ", np.uint8).reshape(n, width) - np.uint8(48)
    # After subtracting '0': digits are 0-9, the separator (space) 240, the point 254.
    if not (rows[:, length] == 240).all() or (point >= 0 and not (rows[:, point] == 254).all()):
        return None
    whole_block = rows[:, :whole_digits]
    fraction_block = rows[:, whole_digits + 1 : length]
    if (whole_block > 9).any() or (fraction_block > 9).any():
        return None
    us = whole_block.astype(np.int64) @ _POW10[whole_digits - 1 :: -1]
    if decimals:
        frac = fraction_block.astype(np.int64) @ _POW10[6 - decimals : 6][::-1]
    else:
        frac = np.zeros(n, np.int64)
    return us, frac, np.ones(n, bool)


def _starts_of(ends: np.ndarray) -> np.ndarray:
    """Where each of the texts joined by single spaces starts, given where each ends."""
    starts = np.empty(ends.shape[0], np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    return starts


_DIGITS_AND_SEPARATOR = b"0123456789 "
# Integers below this are exact and within `MAX_ABS_US`; a text of more digits parses to at least
# this (numpy saturates what int64 cannot hold), unless its digits are leading zeros.
_PLAIN_INTEGER_LIMIT = 10**18


def _parse_integers(joined: bytes, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """`parse_us` of `n` texts joined by spaces when each is digits only, below 10**18; None
    otherwise.

    Kineto's integer µs (`"dur": 145`, widths varying): the bytes are digits and the n - 1
    separators only (C-level looks), one parse gives every value, and as many values as texts
    means no text was empty (an empty text leaves two separators side by side, which numpy reads
    as one; an empty input reads as one 0, so the count alone would not do)."""
    if n == 0 or joined.translate(None, _DIGITS_AND_SEPARATOR) or joined.count(b" ") != n - 1:
        return None  # another byte, or a space inside a text
    values = np.fromstring(joined, dtype=np.int64, sep=" ")
    if values.shape[0] != n or int(values.max()) >= _PLAIN_INTEGER_LIMIT:
        return None
    return values, np.zeros(n, np.int64), np.ones(n, bool)


def _parse_pointed(joined: bytes, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """`parse_us` of `n` texts joined by spaces when each is digits, a point and 1 to 6 digits,
    at most 18 bytes, with no sign; None otherwise.

    What Python's `json` writes for float µs (Kineto traces saved through PyTorch's exporter:
    `1419248217094.703`, `3.84`), the widths and decimal counts varying. One look at the bytes
    that are not digits nor separators (one point per text), the points' and separators' places
    (the k-th point must lie inside the k-th text, a digit on each side), then one C-level parse
    of the texts with their points made separators: whole µs and the digits after the point
    alternate, and the decimal count scales the latter to ps. 18 bytes keep both exact in int64.
    """
    if n == 0:
        return None
    others = joined.translate(None, _DIGITS_AND_SEPARATOR)
    if len(others) != n or others.count(b".") != n:
        return None
    a = np.frombuffer(joined, np.uint8)
    ends = np.flatnonzero(a == 32)
    if ends.shape[0] != n - 1:
        return None
    ends = np.append(ends, a.shape[0])
    starts = _starts_of(ends)
    points = np.flatnonzero(a == 46)
    decimals = ends - points - 1
    if (
        (points - starts).min() < 1
        or decimals.min() < 1
        or decimals.max() > 6
        or (ends - starts).max() > _MAX_PLAIN_BYTES
    ):
        return None
    values = np.fromstring(joined.replace(b".", b" "), dtype=np.int64, sep=" ")
    if values.shape[0] != 2 * n:
        return None
    return values[0::2].copy(), values[1::2] * _POW10[6 - decimals], np.ones(n, bool)


# Bytes a batch of plain JSON numbers without an exponent is made of: digits, point, minus, separator.
_PLAIN_NUMBER_BYTES = b"0123456789.- "
# Texts of up to this many bytes hold at most 18 digits: exact in int64, and within `MAX_ABS_US`.
_MAX_PLAIN_BYTES = 18


def _parse_few_decimals(joined: bytes, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """`parse_us` of `n` texts joined by spaces when each is a plain number of at most 18 bytes
    with 0 to 3 decimals (ns resolution); None otherwise.

    Kineto traces written through Python's `json` (TraceLens, HTA) carry `ts` and `dur` with 0 to 3
    decimals, which the paths above do not take. The form of every text is checked in bulk (only
    digits, points, minus signs and separators; no empty text; a minus sign first, before a digit;
    at most one point, between digits, with at most 3 after it); then one C-level parse of the
    digits without points gives each value, and the few bytes after each point its decimals.
    """
    if n == 0 or joined[:1] == b" " or joined[-1:] == b" " or b"  " in joined:
        return None  # an empty text (no time): the other paths say which
    if joined.translate(None, _PLAIN_NUMBER_BYTES):
        return None
    a = np.frombuffer(joined, np.uint8)
    ends = np.flatnonzero(a == 32)
    if ends.shape[0] != n - 1:
        return None
    bounds = np.concatenate(([-1], ends, [a.shape[0]]))
    if int((bounds[1:] - bounds[:-1]).max()) > _MAX_PLAIN_BYTES + 1:
        return None
    after = np.append(a, np.uint8(32))
    minus = np.flatnonzero(a == 45)
    if minus.shape[0] and (
        ((minus > 0) & (a[minus - 1] != 32)).any() or ((after[minus + 1] - np.uint8(48)) > 9).any()
    ):
        return None  # a minus sign is only the first byte of a text, before a digit
    points = np.flatnonzero(a == 46)
    # One point per text at most, between digits; the first separator after the digit that
    # follows it (one is appended for the last text) gives the decimals, 1 to 3, or there are more.
    field = np.searchsorted(ends, points)
    if points.shape[0] and (
        points[0] == 0
        or (field[1:] == field[:-1]).any()
        or ((a[points - 1] - np.uint8(48)) > 9).any()
        or ((after[points + 1] - np.uint8(48)) > 9).any()
    ):
        return None
    decimals = np.zeros(points.shape[0], np.int64)
    for k in (3, 2, 1):
        decimals[after[np.minimum(points + k + 1, a.shape[0])] == 32] = k
    if not decimals.all():
        return None
    values = np.fromstring(joined.replace(b".", b""), dtype=np.int64, sep=" ")
    if values.shape[0] != n:
        return None
    scale = np.ones(n, np.int64)
    scale[field] = _POW10[decimals]
    us = values // scale
    frac = (values - us * scale) * (PS_PER_US // scale)
    return us, frac, np.ones(n, bool)


def _parse_same_decimals(
    joined: bytes, a: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """`parse_us` of texts joined by spaces (`a`: the same bytes; `ends`: where each text ends,
    one per text) when each is digits with the same number of decimals, at most 6 (what Kineto
    writes: `ts` and `dur` with 3); None otherwise, most often after a look at the first and
    last texts.

    Checked in bulk rather than per field: every text is long enough, has its point that many
    bytes before its end, and the only other bytes than digits are those points and the
    separators. Then one parse of the digits gives each value in units of the last decimal.
    Below 9e18 as digits (19 of them) it is exact in int64; with few decimals such a value can
    lie beyond `MAX_ABS_US` µs, and is then invalid like any value the other paths reject.
    """
    n = ends.shape[0]
    point = joined.rfind(b".", 0, int(ends[0]))
    decimals = int(ends[0]) - point - 1 if point >= 0 else 0
    # What most other batches fail at once: the last text's point, or any point at all.
    if decimals > 6 or (a[ends[-1] - decimals - 1] != 46 if point >= 0 else joined.find(b".") >= 0):
        return None
    lengths = np.diff(ends, prepend=-1) - 1
    shortest, longest = int(lengths.min()), int(lengths.max())
    digits = longest - (point >= 0)
    if shortest < decimals + (2 if decimals else 1) or digits > 19:
        return None
    # 19 digits fit in int64 below 9e18 (epoch µs with 3 decimals are ≈1.7e18).
    if digits == 19 and (a[(ends - lengths)[lengths == longest]] >= ord("9")).any():
        return None
    if decimals and not (a[ends - decimals - 1] == 46).all():
        return None
    if np.count_nonzero((a - np.uint8(48)) > 9) != (n - 1) + (n if point >= 0 else 0):
        return None
    values = np.fromstring(joined.replace(b".", b"") if point >= 0 else joined, dtype=np.int64, sep=" ")
    if values.shape[0] != n:
        return None
    us = values // _POW10[decimals]
    frac = (values - us * _POW10[decimals]) * _POW10[6 - decimals]
    return us, frac, np.abs(us) <= MAX_ABS_US


# Decimal texts of at most this many digits before the point are parsed; larger magnitudes are no
# time (MAX_ABS_US has 19 digits), and 1e300 or 1e999999 must not reach int64 or Decimal's range.
_MAX_SLOW_DIGITS = 20


def _parse_us_slow(text: bytes) -> tuple[int, int] | None:
    """Exact µs text → (whole µs, ps remainder) for the forms the fast path skips; None for what is
    no finite number of at most `MAX_ABS_US` µs."""
    text = text.strip()
    if text[:1] == b'"' and text[-1:] == b'"':
        text = text[1:-1].strip()
    if len(text) > 64:  # no number a profiler writes is this long
        return None
    try:
        value = Decimal(text.decode("ascii"))
    except (InvalidOperation, UnicodeDecodeError, ValueError):
        return None
    if not value.is_finite() or (value and value.adjusted() >= _MAX_SLOW_DIGITS):
        return None
    ps = int((value * PS_PER_US).to_integral_value(ROUND_HALF_UP))
    whole, rest = divmod(ps, PS_PER_US)
    return (whole, rest) if abs(whole) <= MAX_ABS_US else None


def densest(sample: np.ndarray) -> int:
    """The sampled time with the most others within the outlier window: the bulk of the trace."""
    if not sample.shape[0]:
        return 0
    sample = np.sort(sample)
    around = np.searchsorted(sample, sample + OUTLIER_US, side="right") - np.searchsorted(
        sample, sample - OUTLIER_US, side="left"
    )
    return int(sample[int(np.argmax(around))])


def in_range(us: np.ndarray, reference: int) -> np.ndarray:
    """Times close enough to the bulk of the trace (`reference`) to be kept."""
    return np.abs(us - reference) <= OUTLIER_US


class Clock:
    """Exact conversion of (whole µs, ps remainder) to ps from the trace's zero.

    `reference` is the bulk of the trace (`densest` of a sample of all times); `lowest` the
    earliest (whole µs, ps remainder) within `OUTLIER_US` of it, None when there is none. The zero
    is `lowest` rounded down to a whole ns, so the absolute origin is an exact integer.
    """

    def __init__(self, reference: int, lowest: tuple[int, int] | None) -> None:
        self.reference = reference
        zero_ps = 0 if lowest is None else lowest[0] * PS_PER_US + lowest[1]
        zero_ps -= zero_ps % 1000
        self.zero_us, self.zero_rem = divmod(zero_ps, PS_PER_US)
        self.zero_ps = zero_ps

    def to_ps(self, us: np.ndarray, frac: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ps from zero, in-range mask)."""
        ok = in_range(us, self.reference)
        rel = np.where(ok, us - self.zero_us, 0) * PS_PER_US + (frac.astype(np.int64) - self.zero_rem)
        return rel, ok

    def ps_of(self, us: int, frac: int) -> int:
        """One time in ps from zero."""
        return (us - self.zero_us) * PS_PER_US + frac - self.zero_rem

    def origin_ns(self, metadata: dict[str, Any]) -> int | None:
        """The absolute time of the zero in ns since the epoch, when the trace tells."""
        base = metadata.get("baseTimeNanoseconds")
        if isinstance(base, int) and not isinstance(base, bool):
            return base + self.zero_ps // 1000
        if _EPOCH_US_LO <= self.zero_us <= _EPOCH_US_HI:
            return self.zero_ps // 1000
        return None

    def zero_us_text(self) -> str:
        """The zero as exact decimal µs text ("1712195495406752.797")."""
        whole, rest = divmod(self.zero_ps, PS_PER_US)
        return f"{whole}.{rest:06d}".rstrip("0").rstrip(".")
