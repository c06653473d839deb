"""The columnar model: sort order, depth layout, args records, flow binding, counters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profscope.model import columns as model
from profscope.model import layout
from profscope.model.columns import TraceBuilder, layout_depths

pytestmark = pytest.mark.stack_independent


def one_track(starts, durs):
    b = TraceBuilder("t", "test")
    track = b.track(b.section("s"), "t")
    names = [b.intern(f"e{i}") for i in range(len(starts))]
    b.add_events(track, starts, durs, names)
    return b.finalize()


def by_name(trace):
    return {
        trace.strings[int(n)]: (int(s), int(d), int(r))
        for n, s, d, r in zip(trace.ev_name, trace.ev_start_ps, trace.ev_dur_ps, trace.ev_depth)
    }


def test_nested_slices_get_their_nesting_depth():
    #   e0 [0, 100)  e1 [10, 50)  e2 [20, 30)  e3 [60, 90)  e4 [100, 110) instant e5 at 25
    t = one_track([0, 10, 20, 60, 100, 25], [100, 40, 10, 30, 10, 0])
    d = {k: v[2] for k, v in by_name(t).items()}
    assert d == {"e0": 0, "e1": 1, "e2": 2, "e3": 1, "e4": 0, "e5": 3}
    assert t.tracks[0].max_depth == 3


def test_same_start_longer_first_and_identical_slices_nest():
    t = one_track([0, 0, 0], [10, 50, 50])
    assert t.ev_dur_ps.tolist() == [50, 50, 10]
    assert t.ev_depth.tolist() == [0, 1, 2]


def test_overlapping_slices_that_do_not_nest_get_separate_rows():
    # e0 [0, 50) and e1 [40, 90) overlap without nesting; e2 [60, 70) sits inside e1 only.
    t = one_track([0, 40, 60], [50, 50, 10])
    rows = {k: v[2] for k, v in by_name(t).items()}
    assert rows["e0"] != rows["e1"]
    # No two slices of one row overlap.
    for r in set(rows.values()):
        spans = sorted((s, s + d) for s, d, rr in by_name(t).values() if rr == r and d > 0)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 60)), min_size=1, max_size=60))
def test_rows_never_overlap_and_nested_data_keeps_nesting_depth(items):
    starts = np.array([s for s, _ in items], dtype=np.int64)
    durs = np.array([d for _, d in items], dtype=np.int64)
    order = np.lexsort((-durs, starts))
    starts, durs = starts[order], durs[order]
    track = np.zeros(starts.shape[0], np.int32)
    rows = layout_depths(track, starts, durs)
    positive = durs > 0
    for r in np.unique(rows[positive]):
        sel = np.flatnonzero(positive & (rows == r))
        s, e = starts[sel], starts[sel] + durs[sel]
        o = np.argsort(s, kind="stable")
        assert np.all(s[o][1:] >= e[o][:-1]), "slices of one row overlap"
    pos = np.flatnonzero(positive)
    nested = all(
        starts[i] + durs[i] <= starts[j]
        or starts[j] + durs[j] <= starts[i]  # disjoint
        or (starts[i] <= starts[j] and starts[j] + durs[j] <= starts[i] + durs[i])  # i holds j
        or (starts[j] <= starts[i] and starts[i] + durs[i] <= starts[j] + durs[j])  # j holds i
        for i in pos
        for j in pos
    )
    if nested:
        # Properly nested input: the row is the number of enclosing slices.
        for i in np.flatnonzero(positive):
            enclosing = sum(
                1
                for j in np.flatnonzero(positive)
                if j != i and starts[j] <= starts[i] and starts[i] + durs[i] <= starts[j] + durs[j] and j < i
            )
            assert rows[i] == enclosing


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(-5, 12), st.integers(0, 6)), max_size=120),
    st.sampled_from([1, 70_000]),
)
def test_event_order_is_the_stable_lexsort(events, track_scale):
    track = np.array([e[0] for e in events], dtype=np.int32) * track_scale
    start = np.array([e[1] for e in events], dtype=np.int64)
    dur = np.array([e[2] for e in events], dtype=np.int64)
    assert layout.event_order(track, start, dur).tolist() == np.lexsort((-dur, start, track)).tolist()


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3), st.integers(0, 1000), st.integers(0, 100), st.binary(max_size=12) | st.none()
        ),
        max_size=80,
    ),
    st.integers(1, 4),
    st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_args_follow_their_event_through_the_sort(events, chunks, bulk):
    b = TraceBuilder("t", "test")
    sec = b.section("s")
    tracks = [b.track(sec, f"t{i}") for i in range(4)]
    # Each event's name encodes its original position, so its args can be checked after sorting.
    tagged = [(tracks[t], s, d, b.intern(f"ev{i}"), a) for i, (t, s, d, a) in enumerate(events)]
    step = max(1, -(-len(tagged) // chunks))
    for k, lo in enumerate(range(0, len(tagged), step)):
        part = tagged[lo : lo + step]
        columns = ([p[0] for p in part], [p[1] for p in part], [p[2] for p in part], [p[3] for p in part])
        if bulk[k]:  # the same args as one blob + lengths, as bytes or as an array
            blob = b"".join(p[4] or b"" for p in part)
            lengths = [len(p[4] or b"") for p in part]
            b.add_events(
                *columns, args_blob=blob if k % 2 else np.frombuffer(blob, np.uint8), args_lengths=lengths
            )
        else:
            b.add_events(*columns, args=[p[4] for p in part])
    t = b.finalize()
    assert t.args_off.shape[0] == t.num_events + 1 and np.all(np.diff(t.args_off) >= 0)
    assert np.array_equal(t.args_event[t.ev_args], np.arange(t.num_events))
    # Records stay in the order the events were added.
    assert t.args_blob.tobytes() == b"".join(e[3] or b"" for e in events)
    for i in range(t.num_events):
        original = int(t.strings[int(t.ev_name[i])][2:])
        assert t.args_json(i) == (events[original][3] or b"")
    keys = list(zip(t.ev_track.tolist(), t.ev_start_ps.tolist(), (-t.ev_dur_ps).tolist()))
    assert keys == sorted(keys)


def test_args_of_sorted_and_argless_events():
    b = TraceBuilder("t", "test")
    track = b.track(b.section("s"), "t")
    b.add_events(track, [0, 10], [5, 5], [b.intern("a"), b.intern("b")], args=[b'{"x":1}', b'{"y":2}'])
    t = b.finalize()
    assert t.args_json(0) == b'{"x":1}' and t.args_json(1) == b'{"y":2}'
    b = TraceBuilder("t", "test")
    track = b.track(b.section("s"), "t")
    b.add_events(track, [10, 0], [5, 5], [b.intern("a"), b.intern("b")])
    t = b.finalize()
    assert t.args_blob.shape[0] == 0 and t.args_json(0) == b""


def test_bulk_args_must_match_the_events():
    b = TraceBuilder("t", "test")
    track = b.track(b.section("s"), "t")
    names = [b.intern("a"), b.intern("b")]
    with pytest.raises(ValueError, match="add up"):
        b.add_events(track, [0, 1], [1, 1], names, args_blob=b'{"x":1}', args_lengths=[3, 3])
    with pytest.raises(ValueError, match="differs in length"):
        b.add_events(track, [0, 1], [1, 1], names, args_blob=b'{"x":1}', args_lengths=[7])
    with pytest.raises(ValueError, match="go together"):
        b.add_events(track, [0, 1], [1, 1], names, args_blob=b'{"x":1}')
    with pytest.raises(ValueError, match="not both"):
        b.add_events(track, [0, 1], [1, 1], names, args=[None, None], args_blob=b"", args_lengths=[0, 0])
    with pytest.raises(ValueError, match="uint8"):
        b.add_events(track, [0, 1], [1, 1], names, args_blob=np.zeros(2, np.int64), args_lengths=[8, 8])
    assert b.num_events == 0
    b.add_events(track, [1, 0], [1, 1], names, args_blob=b'{"x":1}', args_lengths=[0, 7])
    t = b.finalize()
    assert [t.args_json(i) for i in range(2)] == [b'{"x":1}', b""]


def test_args_records_stay_in_the_order_events_were_added():
    b = TraceBuilder("t", "test")
    track = b.track(b.section("s"), "t")
    n = 50
    starts = list(range(n, 0, -1))
    args = [f'{{"s":{s}}}'.encode() for s in starts]
    b.add_events(track, starts, [1] * n, [b.intern(str(s)) for s in starts], args=args)
    t = b.finalize()
    assert t.args_blob.tobytes() == b"".join(args)
    assert t.ev_args.tolist() == list(range(n - 1, -1, -1)) and t.args_event.tolist() == t.ev_args.tolist()
    for i in range(n):
        assert t.args_json(i) == f'{{"s":{int(t.ev_start_ps[i])}}}'.encode()


def test_flow_points_bind_to_enclosing_and_next_slices():
    b = TraceBuilder("t", "test")
    sec = b.section("s")
    cpu = b.track(sec, "cpu")
    gpu = b.track(sec, "gpu")
    outer = b.add_event(cpu, 0, 100, b.intern("outer"))
    b.add_event(cpu, 10, 20, b.intern("launch"))
    b.add_event(gpu, 50, 10, b.intern("kernel"))
    b.add_event(gpu, 70, 10, b.intern("kernel2"))
    name = b.intern("ac2g")
    # Bound to the deepest enclosing slice at ts=15 (launch, not outer); flow end binds to "next".
    b.add_flow_point("k1", name, "s", cpu, 15)
    b.add_flow_point("k1", name, "f", gpu, 45, binding="next")
    # A chain s -> t -> f over three slices.
    b.add_flow_point("k2", name, "s", cpu, 5)
    b.add_flow_point("k2", name, "t", gpu, 55)
    b.add_flow_point("k2", name, "f", gpu, 75)
    # Single endpoint and an endpoint with nothing to bind to are skipped and counted.
    b.add_flow_point("lonely", name, "s", cpu, 15)
    b.add_flow_point("k3", name, "s", cpu, 500)
    b.add_flow_point("k3", name, "f", gpu, 55)
    b.add_flow(outer, 3)
    t = b.finalize()
    names = t.strings
    pairs = {(names[t.ev_name[s]], names[t.ev_name[d]]) for s, d in zip(t.flow_src, t.flow_dst)}
    assert pairs == {("launch", "kernel"), ("outer", "kernel"), ("kernel", "kernel2"), ("outer", "kernel2")}
    assert t.skipped == {"flow with a single endpoint": 2, "flow endpoint with no slice to bind to": 1}
    assert set(names[i] for i in t.flow_name) == {"ac2g", ""}


def test_counters_sorted_by_track_and_time():
    b = TraceBuilder("t", "test")
    sec = b.section("s")
    c1 = b.track(sec, "c1", kind="counter")
    c0 = b.track(sec, "c0", kind="counter")
    b.add_counter(c1, [30, 10], [3.0, 1.0])
    b.add_counter(c0, [20], [2.0])
    t = b.finalize()
    rows = list(zip(t.ctr_track.tolist(), t.ctr_time_ps.tolist(), t.ctr_value.tolist()))
    assert rows == [(c1, 10, 1.0), (c1, 30, 3.0), (c0, 20, 2.0)]


def test_bad_input_is_refused():
    b = TraceBuilder("t", "test")
    track = b.track(b.section("s"), "t")
    with pytest.raises(ValueError, match="negative duration"):
        b.add_events(track, [0], [-1], [0])
    with pytest.raises(ValueError, match="differ in length"):
        b.add_events(track, [0, 1], [1], [0, 0])
    with pytest.raises(ValueError, match="section kind"):
        b.section("x", kind="fpga")
    with pytest.raises(ValueError, match="flow phase"):
        b.add_flow_point("k", 0, "x", track, 0)
    with pytest.raises(ValueError, match="FLOW_PHASES"):
        b.add_flow_points([0], [0], [3], [track], [0], [False])
    with pytest.raises(ValueError, match="differ in length"):
        b.add_flow_points([0, 0], [0], [0], [track], [0], [False])


def test_new_tracks_are_found_by_no_key_and_the_trace_takes_them():
    b = TraceBuilder("t", "test")
    sec = b.section("s")
    first = b.new_track(sec, "t")
    assert b.new_track(sec, "t") == first + 1  # same section and name: a track of its own
    assert b.track(sec, "t") == first + 2  # nor does the default key find them
    with pytest.raises(ValueError, match="track kind"):
        b.new_track(sec, "x", kind="fpga")
    b.add_event(first, 0, 5, b.intern("a"))
    trace = b.finalize()
    assert [(t.id, t.name, t.max_depth) for t in trace.tracks] == [(0, "t", 0), (1, "t", 0), (2, "t", 0)]


def test_time_span_covers_events_and_counters():
    b = TraceBuilder("t", "test")
    sec = b.section("s")
    b.add_event(b.track(sec, "t"), 100, 50, b.intern("a"))
    b.add_counter(b.track(sec, "c", kind="counter"), [10, 400], [1.0, 2.0])
    assert b.finalize().time_span_ps() == (10, 400)
    assert TraceBuilder("e", "test").finalize().time_span_ps() == (0, 0)


def test_bulk_flows_are_remapped_like_single_ones():
    b = TraceBuilder("t", "test")
    sec = b.section("s")
    cpu, gpu = b.track(sec, "cpu"), b.track(sec, "gpu")
    # Added out of time order, so finalize() reorders the events and must remap the flows.
    first = b.add_events(cpu, [30, 20, 10], [5, 5, 5], [b.intern(f"launch{i}") for i in range(3)])
    kernels = b.add_events(gpu, [35, 25, 15], [2, 2, 2], [b.intern(f"kernel{i}") for i in range(3)])
    b.add_flows(np.arange(first, first + 2), np.arange(kernels, kernels + 2), b.intern("ac2g"))
    b.add_flow(first + 2, kernels + 2)
    with pytest.raises(ValueError, match="differ in length"):
        b.add_flows([0, 1], [2])
    t = b.finalize()
    names = t.strings
    pairs = sorted(
        (names[t.ev_name[s]], names[t.ev_name[d]], names[n])
        for s, d, n in zip(t.flow_src, t.flow_dst, t.flow_name)
    )
    assert pairs == [
        ("launch0", "kernel0", "ac2g"),
        ("launch1", "kernel1", "ac2g"),
        ("launch2", "kernel2", ""),
    ]


def scalar_binding(track, start, dur, depth, trk, ts, binding):
    """One point at a time, as the docstring of add_flow_point states it."""
    end = start + dur
    on = np.flatnonzero(track == trk)
    if on.shape[0] == 0:
        return -1
    if binding == "next":
        later = on[start[on] >= ts]
        return int(later[0]) if later.shape[0] else -1
    for i in on[start[on] <= ts][::-1]:
        if end[i] > ts or start[i] == ts:
            return int(i)
        if depth[i] == 0 and end[i] <= ts:
            return -1
    return -1


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 100), st.integers(0, 40)), max_size=40),
    st.lists(st.tuples(st.integers(0, 3), st.integers(-5, 150), st.booleans()), max_size=20),
)
def test_flow_points_bind_like_the_one_at_a_time_rule(events, points):
    track = np.array([e[0] for e in events], dtype=np.int32)
    start = np.array([e[1] for e in events], dtype=np.int64)
    dur = np.array([e[2] for e in events], dtype=np.int64)
    order = np.lexsort((-dur, start, track))
    track, start, dur = track[order], start[order], dur[order]
    depth = layout_depths(track, start, dur)
    p_track = np.array([p[0] for p in points], dtype=np.int64)
    p_ts = np.array([p[1] for p in points], dtype=np.int64)
    p_next = np.array([p[2] for p in points], dtype=bool)
    got = model._bind_flow_points(p_track, p_ts, p_next, track, start, dur, depth).tolist()
    expected = [
        scalar_binding(track, start, dur, depth, trk, ts, "next" if nxt else "enclosing")
        for trk, ts, nxt in points
    ]
    assert got == expected


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, 100), st.integers(0, 40)), min_size=1, max_size=30),
    st.lists(
        st.tuples(
            st.integers(0, 4),
            st.integers(0, 2),
            st.integers(0, 2),
            st.integers(0, 1),
            st.integers(-5, 150),
            st.booleans(),
        ),
        max_size=25,
    ),
    st.integers(0, 25),
)
def test_bulk_flow_points_give_what_points_one_by_one_give(events, points, split):
    def build(bulk):
        b = TraceBuilder("t", "test")
        sec = b.section("s")
        tracks = [b.track(sec, "a"), b.track(sec, "b")]
        names = [b.intern(f"n{i}") for i in range(3)]
        for trk, s, d in events:
            b.add_event(tracks[trk], s, d, names[0])
        # The first `split` points one by one (keys as strings), the rest in one bulk call whose
        # flow ids are scaled (only equality counts); a flow never spans the two.
        one, rest = points[:split], points[split:]
        for key, name, phase, trk, ts, nxt in one:
            b.add_flow_point(
                f"k{key}",
                names[name],
                model.FLOW_PHASES[phase],
                tracks[trk],
                ts,
                "next" if nxt else "enclosing",
            )
        if bulk:
            if rest:
                cols = list(zip(*rest))
                b.add_flow_points(
                    [100 - 7 * k for k in cols[0]],
                    [names[n] for n in cols[1]],
                    cols[2],
                    [tracks[t] for t in cols[3]],
                    cols[4],
                    cols[5],
                )
        else:
            for key, name, phase, trk, ts, nxt in rest:
                b.add_flow_point(
                    ("bulk", key),
                    names[name],
                    model.FLOW_PHASES[phase],
                    tracks[trk],
                    ts,
                    "next" if nxt else "enclosing",
                )
        return b.finalize()

    a, b = build(True), build(False)
    assert a.flow_src.tolist() == b.flow_src.tolist() and a.flow_dst.tolist() == b.flow_dst.tolist()
    assert a.flow_name.tolist() == b.flow_name.tolist() and a.skipped == b.skipped
