"""Properties of the Chrome reader's bulk parsers, against their definitions on generated inputs:
time stamps in µs against decimal arithmetic, flow and link ids compared as the texts they were
written as, begin/end brackets matched like a stack per group."""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profscope.formats.chrome import clock as chrome_clock
from profscope.formats.chrome import columns as chrome_columns
from profscope.formats.chrome import flows as chrome_flows
from profscope.formats.chrome import pairing as chrome_pairing
from profscope.formats.chrome.decode import Event

pytestmark = pytest.mark.stack_independent


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.decimals(
                min_value=-(10**12), max_value=10**16, places=3, allow_nan=False, allow_infinity=False
            ),
            st.decimals(min_value=0, max_value=10**6, places=7, allow_nan=False, allow_infinity=False),
            st.integers(min_value=-(10**17), max_value=4 * 10**18),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_parse_us_matches_decimal_arithmetic(values: list[Any]) -> None:
    texts = [msgspec.Raw(msgspec.json.encode(v) if isinstance(v, int) else str(v).encode()) for v in values]
    us, frac, ok = chrome_clock.parse_us(texts)
    assert ok.all()
    for v, u, f in zip(values, us.tolist(), frac.tolist()):
        exact = (Decimal(v) * 1_000_000).to_integral_value(rounding="ROUND_HALF_UP")
        assert u * 1_000_000 + f == exact and 0 <= f < 1_000_000


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(1, 19), min_size=1, max_size=3),
    st.integers(0, 7),
    st.lists(st.integers(0, 10**26), min_size=1, max_size=40),
    st.sampled_from([None, b"-", b"x", b" ", b'"', b"e", b"."]),
    st.integers(0, 10**6),
)
def test_parse_us_of_one_decimal_count_matches_decimal_arithmetic(
    widths: list[int], decimals: int, seeds: list[int], odd: bytes | None, where: int
) -> None:
    """Texts with one number of decimals (as Kineto writes `ts` and `dur`; one width or a few)
    are checked in bulk; one odd byte anywhere (a sign, a letter, a space, a quote, an exponent,
    a second point) must give what the field-by-field path gives."""
    texts = []
    for i, seed in enumerate(seeds):
        whole_digits = widths[i % len(widths)]
        digits = str(seed % 10 ** (whole_digits + decimals)).zfill(whole_digits + decimals)
        texts.append((digits[:whole_digits] + ("." + digits[whole_digits:] if decimals else "")).encode())
    if odd is not None:
        i, text = where % len(texts), bytearray(texts[where % len(texts)])
        text[where % len(text)] = odd[0]
        texts[i] = bytes(text)
    us, frac, ok = chrome_clock.parse_us([msgspec.Raw(t) for t in texts])
    for text, u, f, valid in zip(texts, us.tolist(), frac.tolist(), ok.tolist()):
        try:
            value = Decimal(text.decode())
        except InvalidOperation:
            value = None
        exact = None  # not a number, NaN, infinity, or far beyond any time (1e999994)
        if value is not None and value.is_finite() and (not value or value.adjusted() < 25):
            exact = int((value * 1_000_000).to_integral_value(rounding="ROUND_HALF_UP"))
        if exact is None or abs(exact // 1_000_000) > chrome_clock.MAX_ABS_US:
            assert not valid
            continue
        assert valid and u * 1_000_000 + f == exact and 0 <= f < 1_000_000


def test_parse_us_rejects_what_is_not_a_number() -> None:
    texts = [
        msgspec.Raw(t)
        for t in (b"", b'"N/A"', b"null", b"true", b'"1 2"', b'"12.5"', b"1.5e3", b"-0.5", b"7")
    ]
    us, frac, ok = chrome_clock.parse_us(texts)
    assert ok.tolist() == [False, False, False, False, False, True, True, True, True]
    assert (us * 1_000_000 + frac)[5:].tolist() == [12_500_000, 1_500_000_000, -500_000, 7_000_000]
    assert np.asarray(us).dtype == np.int64


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        # Kineto's flow ids: one digit count (the column cut from their joined text).
        st.lists(st.tuples(st.integers(10**6, 10**7 - 1).map(str), st.booleans()), min_size=1, max_size=30),
        st.lists(
            st.tuples(
                st.one_of(
                    st.integers(10**6, 10**7 - 1).map(str),
                    st.integers(0, 10**30).map(str),
                    st.text("ab0x \\", max_size=5).map(json.dumps),
                    st.just(""),
                    st.just('"' + "7" * 300 + '"'),
                ),
                st.booleans(),  # whether the event has a valid time
            ),
            min_size=1,
            max_size=30,
        ),
    ),
    st.booleans(),
)
def test_flow_ids_of_one_width_or_not_read_as_their_texts(
    texts: list[tuple[str, bool]], as_id2: bool
) -> None:
    """The id column is each kept event's id text (a string's content, no quotes), whether the
    ids of a batch share one width (cut from their joined text) or not, and whether events
    without a valid time are left out or not."""
    field = "id2" if as_id2 else "id"
    events = [
        msgspec.json.decode(
            '{"ph": "s", "ts": ' + ("1" if timed else '"x"') + (f', "{field}": {t}}}' if t else "}"),
            type=Event,
        )
        for t, timed in texts
    ]
    codes = np.full(len(events), chrome_columns.FLOW_START, np.int8)
    collector = chrome_columns.ColumnCollector()
    kept, _, _, _, ids = collector._with_ids(events, codes, "flow events")
    texts_kept = [(t[1:-1] if t.startswith('"') else t).encode() for t, timed in texts if t and timed]
    expected = [t for t in texts_kept if 0 < len(t) <= chrome_columns.MAX_ID_BYTES]
    assert ids.tolist() == expected and len(kept) == len(expected)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans()), max_size=60))
def test_brackets_match_ends_like_a_stack_per_group(halves: list[tuple[int, bool]]) -> None:
    group = np.array([g for g, _ in halves], dtype=np.int64)
    begin = np.array([b for _, b in halves], dtype=bool)
    ends, begins, still_open = chrome_pairing._brackets(group, begin)
    stacks: dict[int, list[int]] = {}
    expected = []
    for i, (g, b) in enumerate(halves):
        stack = stacks.setdefault(g, [])
        if b:
            stack.append(i)
        elif stack:
            expected.append((i, stack.pop()))
    assert list(zip(ends.tolist(), begins.tolist())) == expected
    assert still_open.tolist() == sorted(i for stack in stacks.values() for i in stack)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.binary(max_size=21)
        | st.integers(0, 10**20).map(lambda i: str(i).encode())
        | st.sampled_from([b"0", b"00", b"07", b"7\x00", b"\x007", b"1 ", b"-1", b"9999999999999999999"]),
        max_size=30,
    ),
    st.lists(st.integers(0, 10**19 - 1), min_size=1, max_size=10),
)
def test_flow_ids_against_numeric_ids_compare_as_texts(values: list[bytes], members: list[int]) -> None:
    """A launch flow's id is linked when its text is the decimal text of a linked number, the
    same answer as comparing it with those texts."""
    as_array = np.array(values, dtype=bytes) if values else np.zeros(0, "S1")
    numbers = np.unique(np.array(members, dtype=np.uint64))
    got = chrome_flows._member(as_array, numbers)
    assert got.tolist() == chrome_flows._member(as_array, numbers.astype(bytes)).tolist()
    texts = {str(m).encode() for m in members}
    assert got.tolist() == [v.rstrip(b"\x00") in texts for v in values]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text("0123456789", min_size=1, max_size=19), max_size=30))
def test_link_ids_parse_as_numpy_parses_them(texts: list[str]) -> None:
    """Link ids (1 to 19 digits, leading zeros too) become the numbers `astype` gives."""
    values = np.array([t.encode() for t in texts], dtype=bytes) if texts else np.zeros(0, "S1")
    assert chrome_flows._digit_numbers(values).tolist() == values.astype(np.uint64).tolist()


def test_parse_us_of_19_digits_beyond_any_time_is_invalid_in_bulk() -> None:
    """Found by the property test above: 19 whole digits with no decimals passed the bulk check
    although they lie beyond `MAX_ABS_US`, which the field-by-field path rejects."""
    texts = [msgspec.Raw(b"4000000000000000002"), msgspec.Raw(b"4000000000000000000")]
    _, _, ok = chrome_clock.parse_us(texts)
    assert ok.tolist() == [False, True]
