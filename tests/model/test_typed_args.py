"""Typed args records render, in bulk and one at a time, the JSON one encode of the pairs writes:
the value classes at their extremes (synthetic: real captures hold few non-finite doubles or
extreme integers), JSON records beside typed ones, empty records, and the spilled builder path."""

from __future__ import annotations

import math
import struct

import msgspec
import numpy as np

from profscope.model import args as model_args
from profscope.model import typed_args
from profscope.model.columns import TraceBuilder

INTS = [0, 1, -1, 9, 10, 9999, 10000, -(1 << 63), (1 << 63) - 1, 123456789012345678]
UINTS = [0, 7, (1 << 64) - 1, 1 << 63, 10**19]
DOUBLES = [0.1, -0.0, 1e20, 1e-7, 2.5, math.nan, math.inf, -math.inf, 1 / 3, 5e-324]


def _number(cls: int, value: int | float) -> tuple[int, bytes]:
    """(64-bit value, JSON text) of a number of class `cls`."""
    if cls == typed_args.DOUBLE:
        bits = struct.unpack("<Q", struct.pack("<d", value))[0]
        return bits, (repr(value).encode() if math.isfinite(value) else b"null")
    return int(value) & ((1 << 64) - 1), str(int(value)).encode()


def _records() -> tuple[typed_args.Fragments, list[tuple[int, list[tuple[int, int, int]]]], list[bytes]]:
    """Fragments, typed records as (opening, [(key fragment, class, value)]) and their expected JSON."""
    frags = typed_args.Fragments()
    prefix = frags.add(b'{"long_name":"op","n":3,')
    keys = [frags.add(msgspec.json.encode(k) + b":") for k in ("a", "b (2)", 'q"uote', "ünï")]
    texts = [frags.add(msgspec.json.encode(t) + b",") for t in ("x", 'he said "hi"\n', "")]
    numbers = (
        [(typed_args.INT, v) for v in INTS]
        + [(typed_args.UINT, v) for v in UINTS]
        + [(typed_args.DOUBLE, v) for v in DOUBLES]
    )
    records: list[tuple[int, list[tuple[int, int, int]]]] = []
    expected: list[bytes] = []
    for i, (cls, value) in enumerate(numbers):
        bits, text = _number(cls, value)
        key = keys[i % len(keys)]
        stats = [(key, cls, bits)]
        body = [_frag(frags, key) + text]
        if i % 3 == 0:
            stats.append((keys[0], typed_args.FRAGMENT, texts[i % len(texts)]))
            body.append(_frag(frags, keys[0]) + _frag(frags, texts[i % len(texts)])[:-1])
        if i % 4 == 1:
            stats.append((keys[1], typed_args.FRAGMENT, typed_args.NULL))
            body.append(_frag(frags, keys[1]) + b"null")
        opening = prefix if i % 2 else -1
        records.append((opening, stats))
        head = _frag(frags, prefix) if i % 2 else b"{"
        expected.append(head + b",".join(body) + b"}")
    records.append((prefix, []))  # metadata members only
    expected.append(_frag(frags, prefix)[:-1] + b"}")
    records.append((-1, []))  # no args
    expected.append(b"")
    return frags, records, expected


def _frag(frags: typed_args.Fragments, fid: int) -> bytes:
    off, blob = frags.table()
    return blob[off[fid] : off[fid + 1]].tobytes()


def _encode(records: list[tuple[int, list[tuple[int, int, int]]]]) -> tuple[np.ndarray, np.ndarray]:
    opening = np.array([o for o, _ in records], dtype=np.int64)
    rows = [(r, *s) for r, (_, stats) in enumerate(records) for s in stats]
    owner = np.array([r[0] for r in rows], dtype=np.int64)
    key = np.array([r[1] for r in rows], dtype=np.int64)
    cls = np.array([r[2] for r in rows], dtype=np.uint8)
    value = np.array([r[3] for r in rows], dtype=np.uint64)
    return typed_args.encode(len(records), opening, owner, key, cls, value)


def test_bulk_and_single_rendering_write_the_encoded_json() -> None:
    frags, records, expected = _records()
    lengths, blob = _encode(records)
    json_lengths, json_blob = typed_args.encode_json([b'{"group_id":3,"events":5}', b""])
    lengths = np.concatenate((lengths, json_lengths))
    blob = np.concatenate((blob, json_blob))
    expected += [b'{"group_id":3,"events":5}', b""]
    off = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=off[1:])
    frag_off, frag_blob = frags.table()
    got_off, text = typed_args.render(blob, off[:-1], off[1:], frag_off, frag_blob)
    bulk = [text[a:b].tobytes() for a, b in zip(got_off[:-1].tolist(), got_off[1:].tolist(), strict=True)]
    assert bulk == expected
    single = [
        typed_args.render_one(blob[a:b].tobytes(), frag_off, frag_blob) if b > a else b""
        for a, b in zip(off[:-1].tolist(), off[1:].tolist(), strict=True)
    ]
    assert single == expected
    # Any subset, in any order, renders the same texts.
    pick = np.array([5, 0, len(expected) - 1, 3, 3])
    sub_off, sub = typed_args.render(blob, off[pick], off[pick + 1], frag_off, frag_blob)
    assert [sub[a:b].tobytes() for a, b in zip(sub_off[:-1], sub_off[1:], strict=True)] == [
        expected[k] for k in pick
    ]


def test_a_spilled_builder_keeps_typed_records_and_their_fragments(tmp_path) -> None:
    frags, records, expected = _records()
    lengths, blob = _encode(records)
    n = lengths.shape[0]
    traces = []
    for budget in (None, 1):
        options = (
            {} if budget is None else {"spill_dir": str(tmp_path / "spill"), "memory_budget_bytes": budget}
        )
        b = TraceBuilder("synthetic", "xplane", **options)
        track = b.track(b.section("host", "cpu"), "t")
        # Added in reverse time order, in two calls: records stay in add order, events get sorted.
        half = n // 2
        for lo, hi in ((0, half), (half, n)):
            start = np.arange(n - lo, n - hi, -1, dtype=np.int64) * 1000
            at = np.concatenate(([0], np.cumsum(lengths)))
            b.add_events(track, start, np.full(hi - lo, 10), np.zeros(hi - lo, np.int32),
                         args_blob=blob[at[lo] : at[hi]], args_lengths=lengths[lo:hi])  # fmt: skip
        b.typed_args(*frags.table())
        assert b.spilled == (budget is not None)
        traces.append(b.finalize())
    for trace in traces:
        assert model_args.typed(trace)
        # Event k (sorted by start) is record n - 1 - k.
        assert [trace.args_json(k) for k in range(n)] == expected[::-1]
        texts_off, texts = model_args.event_texts(trace, np.arange(n))
        assert [texts[a:b].tobytes() for a, b in zip(texts_off[:-1], texts_off[1:], strict=True)] == expected[
            ::-1
        ]
        seen = {}
        for window in model_args.windows(trace, 64):
            for k, event in enumerate(window.events.tolist()):
                seen[event] = window.text[window.offsets[k] : window.offsets[k + 1]].tobytes()
        assert [seen[k] for k in range(n)] == expected[::-1]
    assert traces[1].args_blob.shape == traces[0].args_blob.shape
