"""Session timelines: hosts aligned on their clock origins, global ids, merged answers."""

from __future__ import annotations

import fsspec
import pytest

from profscope.engine.lod import index as lod
from profscope.engine.timeline import HOST_SHIFT, HostTrace, Timeline
from profscope.formats.chrome import reader as chrome_json
from profscope.model.columns import TraceBuilder
from tests.support import DATA_DIR

pytestmark = pytest.mark.stack_independent

DATA = DATA_DIR / "trace" / "logdir"


def host_trace(name, origin_ns, events, counters=()):
    b = TraceBuilder(name, "test")
    b.clock_origin_ns = origin_ns
    sec = b.section(f"{name} cpu", "cpu")
    track = b.track(sec, "main")
    for start, dur, label in events:
        b.add_event(track, start, dur, b.intern(label))
    if counters:
        b.add_counter(b.track(sec, "mem", kind="counter"), [c[0] for c in counters], [c[1] for c in counters])
    trace = b.finalize()
    return HostTrace(name, trace, lod.build(trace), key=name)


def test_hosts_align_on_clock_origins():
    # Host a starts 5 µs (5e6 ps) after host b in absolute time.
    a = host_trace("a", 1_000_005_000, [(0, 1000, "x"), (2000, 500, "y")])
    b = host_trace("b", 1_000_000_000, [(1_000_000, 1000, "x")])
    tl = Timeline([a, b])
    # b's first event is at absolute 1_000_000_000 ns + 1 µs, a's at +5 µs: the session starts at b's.
    assert tl.offsets_ps == [4_000_000, -1_000_000]
    meta = tl.meta()
    assert meta.span_ns == (0.0, 4002.5)
    assert [h.offset_ns for h in meta.hosts] == [4000.0, -1000.0]
    assert not meta.warnings
    assert [t.id for t in meta.tracks] == [0, 1] and [t.host for t in meta.tracks] == [0, 1]
    assert [s.id for s in meta.sections] == [0, 1]
    assert meta.num_events == 3
    ev = tl.event((1 << HOST_SHIFT) + 0)
    assert ev.start_ns == 0.0 and ev.track == 1 and ev.section == 1 and ev.host == 1
    assert tl.event(1).start_ns == 4002.0


def test_hosts_without_origin_start_at_zero_with_a_warning():
    a = host_trace("a", 5_000, [(100, 10, "x")])
    b = host_trace("b", None, [(700, 10, "x")])
    tl = Timeline([a, b])
    assert tl.offsets_ps == [-100, -700]
    assert any("no clock origin for b" in w for w in tl.meta().warnings)
    single = Timeline([host_trace("c", None, [(700, 10, "x")])])
    assert single.offsets_ps == [-700] and not single.meta().warnings


def test_tiles_carry_global_track_ids_and_local_event_ids():
    a = host_trace("a", 0, [(0, 4096, "long"), (10, 1, "tiny")], counters=[(0, 1.0), (50, 2.0)])
    b = host_trace("b", 0, [(0, 8192, "other")])
    tl = Timeline([a, b])
    tile = tl.tile(tl.max_level, 0)
    # Host b's track is the third timeline track (a has main + mem).
    pairs = sorted(zip(tile.events["track"].tolist(), tile.events["id"].tolist()))
    names = [tile.names[i] for i in tile.events["name"]]
    assert set(names) >= {"long", "other"}
    assert (2, 0) in pairs and (0, 0) in pairs
    assert set(tile.counters["track"].tolist()) == {1}
    total = len(set(pairs)) + int(tile.summaries["count"].sum())
    assert total == 3


def test_search_and_summary_merge_hosts_by_time_and_name():
    a = host_trace("a", 1_000, [(0, 100, "allreduce"), (500, 100, "matmul")])
    b = host_trace("b", 1_000, [(200, 300, "AllReduce_ring"), (900, 50, "matmul")])
    tl = Timeline([a, b])
    r = tl.search("allreduce")
    assert r.total == 2
    assert [(m.id >> HOST_SHIFT, m.name) for m in r.matches] == [
        (0, "allreduce"),
        (1, "AllReduce_ring"),
    ]
    s = tl.summary()
    rows = {row.name: row for row in s.rows}
    assert rows["matmul"].count == 2 and rows["matmul"].total_ns == 0.15
    assert rows["matmul"].min_ns == 0.05 and rows["matmul"].max_ns == 0.1
    assert s.num_events == 4
    # A range on host b's track only.
    only_b = tl.summary(0.0, 0.3, tracks=[1])
    assert [r.name for r in only_b.rows] == ["AllReduce_ring"]
    by_ids = tl.summary(ids=[0, (1 << HOST_SHIFT) + 1])
    assert {r.name: r.count for r in by_ids.rows} == {"allreduce": 1, "matmul": 1}
    with pytest.raises(KeyError):
        tl.summary(tracks=[7])
    with pytest.raises(KeyError):
        tl.summary(ids=[(5 << HOST_SHIFT)])


def test_tile_arguments_are_checked():
    tl = Timeline([host_trace("a", None, [(0, 10, "x")])])
    with pytest.raises(ValueError, match="level"):
        tl.tile(tl.max_level + 1, 0)
    with pytest.raises(ValueError, match="index"):
        tl.tile(0, -1)
    assert tl.tile(0, 10**6).events["id"].shape[0] == 0
    with pytest.raises(ValueError):
        Timeline([])


def test_two_real_ranks_line_up():
    fs = fsspec.filesystem("file")
    hosts = []
    for rank in ("rank-0", "rank-1"):
        trace = chrome_json.read(str(DATA / "ranks" / f"{rank}.pt.trace.json.gz"), fs)
        hosts.append(HostTrace(rank, trace, lod.build(trace), key=rank))
    tl = Timeline(hosts)
    origins = [h.trace.clock_origin_ns for h in hosts]
    # Offsets keep the absolute distance between the ranks' clocks (ns -> ps).
    assert tl.offsets_ps[1] - tl.offsets_ps[0] == (origins[1] - origins[0]) * 1000
    firsts = [h.trace.time_span_ps()[0] + off for h, off in zip(hosts, tl.offsets_ps)]
    assert min(firsts) == 0


def test_search_pages_through_every_match_in_time_order_across_hosts():
    a = host_trace("a", 0, [(t, 5, f"step{t}") for t in range(0, 200, 20)])
    b = host_trace("b", 0, [(t, 5, f"step{t}") for t in range(10, 200, 20)])
    tl = Timeline([a, b])
    whole = tl.search("step", limit=100)
    assert whole.total == 20 and not whole.truncated
    starts = [m.start_ns for m in whole.matches]
    assert starts == sorted(starts)
    pages = [tl.search("step", limit=3, offset=o) for o in range(0, 24, 3)]
    assert [p.offset for p in pages] == list(range(0, 24, 3))
    assert [m.id for p in pages for m in p.matches] == [m.id for m in whole.matches]
    assert [p.truncated for p in pages] == [True] * 6 + [False, False]
    assert pages[-1].matches == []
