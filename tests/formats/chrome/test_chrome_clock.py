"""The exact time parser on texts of mixed decimal counts, as Python's `json` writes Kineto times."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from profscope.formats.chrome import clock as chrome_clock


def _exact_ps(text: bytes) -> int | None:
    """The text's value in ps by decimal arithmetic, None when it is no number."""
    try:
        value = Decimal(text.decode())
    except (InvalidOperation, UnicodeDecodeError):
        return None
    if not value.is_finite() or (value and value.adjusted() >= 25):
        return None
    return int((value * 1_000_000).to_integral_value(rounding="ROUND_HALF_UP"))


_TEXTS = st.lists(
    st.tuples(st.integers(1, 18), st.integers(0, 3), st.booleans(), st.integers(0, 10**20)),
    min_size=1,
    max_size=40,
)


def _texts(fields: list[tuple[int, int, bool, int]]) -> list[bytes]:
    """Plain numbers of `digits` digits with `decimals` of them after the point, some negative."""
    texts = []
    for digits, decimals, negative, seed in fields:
        decimals = min(decimals, digits - 1)
        body = str(seed % 10**digits).zfill(digits)
        text = body[: digits - decimals] + ("." + body[digits - decimals :] if decimals else "")
        texts.append(("-" if negative else "").encode() + text.encode())
    return texts


@settings(max_examples=400, deadline=None)
@given(_TEXTS)
def test_times_with_0_to_3_decimals_are_parsed_exactly_in_bulk(
    fields: list[tuple[int, int, bool, int]],
) -> None:
    """Texts of 0 to 3 decimals each (`1419247332972.31`, `4.5`, `12`) take the bulk path for few
    decimals whenever each fits in 18 bytes, and give what decimal arithmetic gives."""
    texts = _texts(fields)
    joined = b" ".join(texts)
    if max(map(len, texts)) <= 18:
        assert chrome_clock._parse_few_decimals(joined, len(texts)) is not None
    us, frac, ok = chrome_clock.parse_us([msgspec.Raw(t) for t in texts])
    assert ok.all()
    for text, u, f in zip(texts, us.tolist(), frac.tolist()):
        assert u * 1_000_000 + f == _exact_ps(text) and 0 <= f < 1_000_000


@settings(max_examples=400, deadline=None)
@given(_TEXTS, st.sampled_from([b"e", b"x", b'"', b" ", b".", b"1234", b""]), st.integers(0, 10**6))
def test_one_odd_text_among_few_decimals_gives_what_decimal_arithmetic_gives(
    fields: list[tuple[int, int, bool, int]], odd: bytes, where: int
) -> None:
    """An exponent, a letter, a quote, a space, a second point, a fourth decimal or an empty text
    anywhere leaves the bulk path to the others, with the same outcome per text."""
    texts = _texts(fields)
    i = where % len(texts)
    text = texts[i]
    if odd == b"1234":
        text = text + (b"1234" if b"." in text else b".1234")
    elif odd == b"":
        text = b""
    else:
        cut = where % (len(text) + 1)
        text = text[:cut] + odd + text[cut:]
    texts[i] = text
    us, frac, ok = chrome_clock.parse_us([msgspec.Raw(t) for t in texts])
    for t, u, f, valid in zip(texts, us.tolist(), frac.tolist(), ok.tolist()):
        exact = _exact_ps(t)
        if exact is None or abs(exact // 1_000_000) > chrome_clock.MAX_ABS_US:
            assert not valid
            continue
        assert valid and u * 1_000_000 + f == exact


_POINTED = st.lists(
    st.tuples(st.integers(1, 16), st.integers(1, 6), st.integers(0, 10**20)), min_size=1, max_size=40
)


def _pointed_texts(fields: list[tuple[int, int, int]]) -> list[bytes]:
    """Floats as Python's `json` writes them: digits, a point and 1 to 6 decimals, at most 18 bytes."""
    texts = []
    for whole, decimals, seed in fields:
        decimals = min(decimals, 17 - whole)
        body = str(seed % 10 ** (whole + decimals)).zfill(whole + decimals)
        texts.append((body[:whole] + "." + body[whole:]).encode())
    return texts


@settings(max_examples=300, deadline=None)
@given(_POINTED)
def test_texts_with_one_point_each_are_parsed_exactly_in_bulk(fields: list[tuple[int, int, int]]) -> None:
    """Texts of one point each (`1419248217094.703`, `3.84`, `0.000001`) take the bulk path for
    pointed texts, and give what decimal arithmetic gives."""
    texts = _pointed_texts(fields)
    assert chrome_clock._parse_pointed(b" ".join(texts), len(texts)) is not None
    us, frac, ok = chrome_clock.parse_us([msgspec.Raw(t) for t in texts])
    assert ok.all()
    for text, u, f in zip(texts, us.tolist(), frac.tolist()):
        assert u * 1_000_000 + f == _exact_ps(text) and 0 <= f < 1_000_000


@settings(max_examples=300, deadline=None)
@given(
    _POINTED,
    st.sampled_from([b"-", b".", b"", b"1", b"1.", b".5", b"1.2.3", b"1.1234567", b"12345678901234567.5"]),
    st.integers(0, 10**6),
)
def test_an_odd_text_among_pointed_texts_gives_what_decimal_arithmetic_gives(
    fields: list[tuple[int, int, int]], odd: bytes, where: int
) -> None:
    """A minus sign, a second point (with one missing elsewhere), an empty text, a text without a
    point, a point at either end, a seventh decimal or a 19-byte text leaves the bulk path for
    pointed texts, with the same outcome per text."""
    texts = _pointed_texts(fields)
    i = where % len(texts)
    if odd == b"-":
        texts[i] = b"-" + texts[i]
    elif odd == b"." and len(texts) > 1:  # the point count stays one per text
        j = (i + 1) % len(texts)
        texts[i] = texts[i] + b"1."
        texts[j] = texts[j].replace(b".", b"")
    else:
        texts[i] = odd
    joined = b" ".join(texts)
    assert chrome_clock._parse_pointed(joined, len(texts)) is None
    us, frac, ok = chrome_clock.parse_us([msgspec.Raw(t) for t in texts])
    for t, u, f, valid in zip(texts, us.tolist(), frac.tolist(), ok.tolist()):
        exact = _exact_ps(t)
        if exact is None:
            assert not valid
            continue
        assert valid and u * 1_000_000 + f == exact


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 10**18 - 1), min_size=1, max_size=40),
    st.sampled_from(
        [None, b"", b" ", b"1 2", b"-1", b"1e3", b"1000000000000000000", b"99999999999999999999", b"007"]
    ),
    st.integers(0, 10**6),
)
def test_integer_texts_are_parsed_exactly_in_bulk(values: list[int], odd: bytes | None, where: int) -> None:
    """Integer µs (`145`, `1695849230300906`) take the bulk path for integers; an empty text, a
    space inside a text, a sign, an exponent or a value from 10**18 on leaves it (leading zeros do
    not), with the same outcome."""
    texts = [str(v).encode() for v in values]
    if odd is not None:
        texts[where % len(texts)] = odd
    bulk = chrome_clock._parse_integers(b" ".join(texts), len(texts))
    assert (bulk is not None) == all(t.isdigit() and int(t) < 10**18 for t in texts)
    us, frac, ok = chrome_clock.parse_us([msgspec.Raw(t) for t in texts])
    for t, u, f, valid in zip(texts, us.tolist(), frac.tolist(), ok.tolist()):
        exact = _exact_ps(t)
        if exact is None or abs(exact // 1_000_000) > chrome_clock.MAX_ABS_US:
            assert not valid
            continue
        assert valid and u * 1_000_000 + f == exact
