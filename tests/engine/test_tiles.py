"""Tile invariants, checked by brute force against random traces (hypothesis).

For every level and every tile: each event at least one pixel wide is in every tile it overlaps;
each narrower event is counted in exactly one summary box on its row, at its pixel; counts and busy
time are conserved; instants never vanish; counters reduce to the right min/max/last; the binary
layout round-trips; and the answer does not depend on which summary levels were stored.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profscope.engine.lod import index as lod
from profscope.engine.lod import tiles
from profscope.engine.timeline import HostTrace, Timeline
from profscope.model.columns import TraceBuilder
from tests.support import DATA_DIR

pytestmark = pytest.mark.stack_independent

SPAN = 1 << 16


@st.composite
def traces(draw, origin=None):
    b = TraceBuilder("synthetic", "test")
    b.clock_origin_ns = origin
    sec = b.section("host", "cpu")
    names = [b.intern(f"op{i}") for i in range(4)]
    n_tracks = draw(st.integers(1, 3))
    for t in range(n_tracks):
        track = b.track(sec, f"t{t}")
        n = draw(st.integers(0, 40))
        starts = draw(st.lists(st.integers(0, SPAN), min_size=n, max_size=n))
        # Durations spread over many levels: 0 (instants), tiny, and up to a quarter of the span.
        exps = draw(st.lists(st.integers(-1, 14), min_size=n, max_size=n))
        durs = [0 if e < 0 else draw(st.integers(1 << e, (2 << e) - 1)) for e in exps]
        if n:
            b.add_events(track, starts, durs, [names[i % 4] for i in range(n)])
    if draw(st.booleans()):
        ctr = b.track(sec, "mem", kind="counter")
        k = draw(st.integers(1, 30))
        times = sorted(draw(st.lists(st.integers(0, SPAN), min_size=k, max_size=k)))
        values = draw(st.lists(st.floats(-1e6, 1e6), min_size=k, max_size=k))
        b.add_counter(ctr, times, values)
    trace = b.finalize()
    return trace


def host(trace, name="h"):
    return HostTrace(name, trace, lod.build(trace), key=name)


def tiles_at(tl: Timeline, level: int):
    width = lod.BASE_PS << level
    count = max(1, -(-(tl.span_ps + 1) // width))
    return [(x, tl.tile(level, x)) for x in range(count)]


def event_rows(tl: Timeline):
    """(host, index, session start ps, dur ps, global track, depth) for every event."""
    for h, hd in enumerate(tl.hosts):
        t = hd.trace
        for i in range(t.num_events):
            yield (
                h,
                i,
                int(t.ev_start_ps[i]) + tl.offsets_ps[h],
                int(t.ev_dur_ps[i]),
                int(t.ev_track[i]) + int(tl.track_base[h]),
                int(t.ev_depth[i]),
            )


def check_level(tl: Timeline, level: int) -> None:
    width = lod.BASE_PS << level
    px = lod.pixel_ps(level)
    shown: dict[tuple[int, int], set[int]] = {}
    summarized_count = 0
    summarized_busy = 0.0
    boxes = []  # (global track, depth, session start ps, count)
    for x, tile in tiles_at(tl, level):
        data = tiles.decode(tiles.encode(tile))
        assert data.level == level and data.index == x
        ev = data.events
        hosts_of = [tl.host_of_track(int(t))[0] for t in ev["track"]]
        for h, i in zip(hosts_of, ev["id"].tolist()):
            shown.setdefault((h, i), set()).add(x)
        # Bounded: per row, slices in a tile do not overlap, instants at most one per pixel.
        rows = {}
        for t, d, s, du in zip(ev["track"], ev["depth"], ev["start"], ev["dur"]):
            rows.setdefault((int(t), int(d)), []).append((float(s), float(du)))
        for items in rows.values():
            assert sum(du > 0 for _, du in items) <= lod.TILE_PX + 1
            assert sum(du == 0 for _, du in items) <= lod.TILE_PX + 1
        sm = data.summaries
        assert sm["count"].sum() == tile.summaries["count"].sum()
        summarized_count += int(sm["count"].sum())
        summarized_busy += float(tile.summaries["busy"].astype(np.float64).sum())
        key = list(zip(sm["track"].tolist(), sm["depth"].tolist(), tile.summaries["start"].tolist()))
        assert len(set(key)) == len(key), "one summary box per row and pixel"
        for (t, d, s), c in zip(key, sm["count"].tolist()):
            boxes.append((t, d, round(s * 1000) + x * width, c))
    box_at = {(t, d, s): c for t, d, s, c in boxes}
    expected_summarized = 0
    expected_busy = 0
    for h, i, start, dur, track, depth in event_rows(tl):
        first, last = start // width, max(start, start + dur - 1) // width
        overlapped = set(range(first, last + 1))
        if dur >= px:
            assert shown.get((h, i)) == overlapped, f"event {h}/{i} dur {dur} at level {level}"
        elif (h, i) in shown:
            assert dur == 0 and shown[(h, i)] == overlapped
        else:
            expected_summarized += 1
            expected_busy += dur
            local = start - tl.offsets_ps[h]
            box_start = (local >> level << level) + tl.offsets_ps[h]
            assert box_at.get((track, depth, box_start), 0) >= 1, f"event {h}/{i} not covered"
    assert summarized_count == expected_summarized
    assert summarized_busy == pytest.approx(expected_busy / 1000, rel=1e-5, abs=1e-3)
    # Every distinct shown event plus every summarized one adds up to the whole trace.
    assert len(shown) + summarized_count == sum(h.trace.num_events for h in tl.hosts)
    check_instants(tl, level, shown)


def check_instants(tl: Timeline, level: int, shown) -> None:
    """Each pixel of a row that holds instants shows at least one of them exactly."""
    needed: dict[tuple, list] = {}
    for h, i, start, dur, track, depth in event_rows(tl):
        if dur == 0:
            local = start - tl.offsets_ps[h]
            needed.setdefault((h, track, depth, local >> level), []).append((h, i))
    for key, members in needed.items():
        assert any(m in shown for m in members), f"instants vanished at level {level}: {key}"
        assert sum(m in shown for m in members) == 1, "at most one exact instant per pixel and row"


def owner_tile(box_start: int, width: int) -> int:
    """Tile that holds a pixel box: the one its start is in; tile 0 also takes a box that
    straddles the session start."""
    return max(box_start // width, 0)


def check_counters(tl: Timeline, level: int) -> None:
    width = lod.BASE_PS << level
    for x, tile in tiles_at(tl, level):
        c = tile.counters
        for h, hd in enumerate(tl.hosts):
            t = hd.trace
            for track in np.unique(np.asarray(t.ctr_track)).tolist():
                sel = np.asarray(t.ctr_track) == track
                local = np.asarray(t.ctr_time_ps)[sel]
                values = np.asarray(t.ctr_value)[sel]
                mine = c["track"] == track + int(tl.track_base[h])
                starts = np.round(c["start"][mine] * 1000).astype(np.int64) + x * width
                bins = local >> level
                owned = [
                    b
                    for b in np.unique(bins).tolist()
                    if owner_tile((b << level) + tl.offsets_ps[h], width) == x
                ]
                for b in owned:
                    hit = np.flatnonzero(starts == (b << level) + tl.offsets_ps[h])
                    assert hit.shape[0] == 1
                    vals = values[bins == b]
                    k = np.flatnonzero(mine)[hit[0]]
                    assert c["min"][k] == vals.min() and c["max"][k] == vals.max()
                    assert c["last"][k] == vals[-1]
                # Beyond the owned bins, only one box may carry the value in from the left.
                assert mine.sum() - len(owned) <= 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(), st.data())
def test_tile_invariants_single_host(trace, data):
    tl = Timeline([host(trace)])
    level = data.draw(st.integers(0, tl.max_level))
    check_level(tl, level)
    check_counters(tl, level)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(origin=1), traces(origin=37), traces(), st.data())
def test_tile_invariants_merged_hosts(a, b, c, data):
    tl = Timeline([host(a, "a"), host(b, "b"), host(c, "c")])
    level = data.draw(st.integers(0, tl.max_level))
    check_level(tl, level)
    check_counters(tl, level)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(), st.data())
def test_tiles_do_not_depend_on_stored_summary_levels(trace, data):
    level_probe = data.draw(st.integers(0, 40))
    encoded = []
    for gain in (1, 4, 10**9):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(lod, "PYRAMID_GAIN", gain)
            tl = Timeline([host(trace)])
        level = min(level_probe, tl.max_level)
        encoded.append([tiles.encode(t) for _, t in tiles_at(tl, level)])
    assert encoded[0] == encoded[1] == encoded[2]


def test_pyramid_is_stored_for_dense_rows():
    b = TraceBuilder("dense", "test")
    track = b.track(b.section("s"), "t")
    n = 20_000
    b.add_events(track, np.arange(n) * 1000, np.full(n, 500), np.full(n, b.intern("k")))
    index = lod.build(b.finalize())
    assert index.summary_levels, "a dense row must get stored summary levels"
    total = sum(len(s) for s in index.summary_levels.values())
    assert total < n, "the pyramid stays smaller than the events"


def test_full_view_tile_size_is_bounded_by_pixels_not_events():
    b = TraceBuilder("big", "test")
    track = b.track(b.section("s"), "t")
    n = 200_000
    b.add_events(track, np.arange(n) * 1000, np.full(n, 400), np.full(n, b.intern("k")))
    tl = Timeline([host(b.finalize())])
    tile = tl.tile(tl.max_level, 0)
    assert tile.events["id"].shape[0] == 0
    assert 0 < tile.summaries["count"].shape[0] <= lod.TILE_PX
    assert int(tile.summaries["count"].sum()) == n
    assert len(tiles.encode(tile)) < 40 * lod.TILE_PX


def empty_columns(columns):
    return {name: np.zeros(0, dtype=dtype) for name, dtype in columns}


def test_encode_decode_layout():
    tile = tiles.Tile(
        level=3,
        index=7,
        start_ns=57.344,
        width_ns=8.192,
        names=["a", "ü"],
        events={
            "id": np.array([1, 2]),
            "track": np.array([0, 4]),
            "name": np.array([0, 1]),
            "start": np.array([-1.5, 2.0]),
            "dur": np.array([3.0, 0.0]),
            "depth": np.array([0, 2]),
        },
        summaries=empty_columns(tiles.SUMMARY_COLUMNS),
        counters={
            "track": np.array([5]),
            "start": np.array([0.5]),
            "width": np.array([1.0]),
            "min": np.array([1.0]),
            "max": np.array([2.0]),
            "last": np.array([1.5]),
        },
        flows=empty_columns(tiles.FLOW_COLUMNS),
    )
    data = tiles.encode(tile)
    assert data[:4] == b"PST1"
    head_len = int.from_bytes(data[4:8], "little")
    assert (8 + head_len) % 8 == 0
    # Events: 5 columns of 2 x 4 bytes, each padded to 8, then u16 depth (4 bytes -> 8).
    off = 8 + head_len
    assert np.frombuffer(data, "<u4", 2, off).tolist() == [1, 2]
    assert np.frombuffer(data, "<u4", 2, off + 8).tolist() == [0, 4]
    assert np.frombuffer(data, "<f4", 2, off + 24).tolist() == [-1.5, 2.0]
    assert np.frombuffer(data, "<u2", 2, off + 40).tolist() == [0, 2]
    # Counters follow directly (no summaries): u32 track at off + 48.
    assert np.frombuffer(data, "<u4", 1, off + 48).tolist() == [5]
    back = tiles.decode(data)
    assert back.names == ["a", "ü"] and back.level == 3 and back.index == 7
    assert back.counters["last"].tolist() == [1.5]
    with pytest.raises(ValueError):
        tiles.decode(b"XXXX" + data[4:])
    with pytest.raises(ValueError):
        tiles.decode(data[:-8])


def test_flows_touching_a_tiles_events_are_found_without_reading_every_flow() -> None:
    """The flows of a tile's events come from a binary search through the flow order (no gather of
    the whole flow column per tile); on a real Kineto trace they are exactly the flows with an end
    among the events, for any subset of them."""

    import fsspec

    from profscope.formats.chrome import reader as chrome_json

    path = DATA_DIR / "kineto" / "bert_small.pt.trace.json.gz"
    trace = chrome_json.read(str(path), fsspec.filesystem("file"))
    index = lod.build(trace)
    src, dst = np.asarray(trace.flow_src), np.asarray(trace.flow_dst)
    assert src.shape[0] == 62
    rng = np.random.default_rng(3)
    for size in (1, 10, 500, trace.num_events):
        events = np.sort(rng.choice(trace.num_events, size, replace=False))
        expected = np.flatnonzero(np.isin(src, events) | np.isin(dst, events))
        assert np.array_equal(lod.flows_touching(trace, index, events), expected)
    for column, order in ((src, index.flow_by_src), (dst, index.flow_by_dst)):
        values = np.arange(-1, trace.num_events + 1)
        for side in ("left", "right"):
            assert np.array_equal(
                lod.searchsorted_through(column, order, values, side),
                np.searchsorted(column[order], values, side),
            )
