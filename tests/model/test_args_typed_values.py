"""`model.args.TypedWindow`'s value accessors, what search matches typed values with: each stat
row's value fragment, and whether a number's JSON text (as rendered) holds a needle, for the value
classes at their extremes."""

from __future__ import annotations

import dataclasses
import math
import struct

import numpy as np
import pytest

from profscope.model import args as model_args
from profscope.model import typed_args

INTS = [0, 7, -1, -17, 10000, -(1 << 63), (1 << 63) - 1, 123456789012345678]
UINTS = [0, 77, (1 << 64) - 1, 1 << 63, 10**19]
DOUBLES = [0.1, -0.0, 1e20, 1e-7, 2.5, math.nan, math.inf, -math.inf, 1 / 3, 5e-324, 7.0]
NEEDLES = [b"7", b"-1", b"1e", b"0.", b"nul", b"null", b"e-", b"9", b"18", b"-0", b"5e-324", b"x"]


@dataclasses.dataclass
class _Args:
    """The args columns `model.args` reads (its `Trace` protocol)."""

    ev_args: np.ndarray
    args_off: np.ndarray
    args_event: np.ndarray
    args_blob: np.ndarray
    args_frag_off: np.ndarray
    args_frag_blob: np.ndarray


def _rows() -> tuple[list[tuple[int, int]], list[bytes | None], _Args]:
    """Stat rows (class, 64-bit value), each row's JSON value text (None for a fragment) and the
    args of one event per row."""
    frags = typed_args.Fragments()
    key = frags.add(b'"v":')
    text = frags.add(b'"seven",')
    rows: list[tuple[int, int]] = []
    texts: list[bytes | None] = []
    for v in INTS:
        rows.append((typed_args.INT, v & ((1 << 64) - 1)))
        texts.append(str(v).encode())
    for v in UINTS:
        rows.append((typed_args.UINT, v))
        texts.append(str(v).encode())
    for d in DOUBLES:
        rows.append((typed_args.DOUBLE, struct.unpack("<Q", struct.pack("<d", d))[0]))
        texts.append(repr(d).encode() if math.isfinite(d) else b"null")
    rows += [(typed_args.FRAGMENT, text), (typed_args.FRAGMENT, typed_args.NULL)]
    texts += [None, None]
    n = len(rows)
    lengths, blob = typed_args.encode(
        n,
        np.full(n, -1, dtype=np.int64),
        np.arange(n, dtype=np.int64),
        np.full(n, key, dtype=np.int64),
        np.array([c for c, _ in rows], dtype=np.uint8),
        np.array([v for _, v in rows], dtype=np.uint64),
    )
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=off[1:])
    frag_off, frag_blob = frags.table()
    order = np.arange(n, dtype=np.int64)
    return rows, texts, _Args(order, off, order, blob, frag_off, frag_blob)


@pytest.mark.parametrize("needle", NEEDLES)
def test_number_hits_are_the_rendered_numbers_that_hold_the_needle(needle: bytes) -> None:
    rows, texts, trace = _rows()
    (window,) = model_args.typed_windows(trace)
    assert window.records.value_class.tolist() == [c for c, _ in rows]
    expected = [t is not None and needle in t for t in texts]
    assert window.number_hits(needle).tolist() == expected
    # The texts searched are those the JSON shows.
    offsets, rendered = model_args.record_texts(trace, np.arange(len(rows)))
    shown = [
        rendered[a:b].tobytes() for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)
    ]
    assert [b'{"v":' + t + b"}" for t in texts if t is not None] == shown[: len(texts) - 2]


def test_value_fragments_name_the_text_values_and_not_the_numbers() -> None:
    rows, _, trace = _rows()
    (window,) = model_args.typed_windows(trace)
    expected = [v if c == typed_args.FRAGMENT else -1 for c, v in rows]
    assert window.value_fragments().tolist() == expected
