"""Event details, whole-trace search and range summaries, checked against brute force."""

from __future__ import annotations

import json
import threading
import time

import fsspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profscope.engine import query, store
from profscope.engine.answers import FlowLink
from profscope.engine.ingest import manager as ingest
from profscope.engine.lod import index as lod
from profscope.engine.search_pool import SearchCancelled, SearchPool
from profscope.engine.timeline import HostTrace, Timeline
from profscope.formats.chrome import reader as chrome_json
from profscope.model.columns import TraceBuilder
from tests.support import DATA_DIR

pytestmark = pytest.mark.stack_independent

DATA = DATA_DIR / "trace" / "logdir"


def timeline_of(trace):
    return Timeline([HostTrace("h", trace, lod.build(trace), "k")])


def test_self_time_subtracts_direct_children_only():
    b = TraceBuilder("t", "test")
    track = b.track(b.section("s"), "t")
    other = b.track(b.section("s"), "other")
    n = [b.intern(x) for x in ("root", "child", "grandchild", "child2", "elsewhere")]
    b.add_events(track, [0, 10, 12, 50], [100, 30, 20, 10], [n[0], n[1], n[2], n[3]])
    b.add_event(other, 0, 100, n[4])
    t = b.finalize()
    tl = timeline_of(t)
    selfs = {e.name: e.self_ns * 1000 for e in (tl.event(i) for i in range(t.num_events))}
    assert selfs == {"root": 60, "child": 10, "grandchild": 20, "child2": 10, "elsewhere": 100}


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(-50, 400), st.integers(0, 120)), min_size=1, max_size=50
    )
)
def test_self_times_match_brute_force(events):
    b = TraceBuilder("t", "test")
    sec = b.section("s")
    tids = [b.track(sec, f"t{i}") for i in range(3)]
    for t, s, d in events:
        b.add_event(tids[t], s, d, b.intern("e"))
    trace = b.finalize()
    row_base = np.zeros(len(trace.tracks) + 1, dtype=np.int64)
    np.cumsum([t.max_depth + 1 for t in trace.tracks], out=row_base[1:])
    got = lod.self_times(trace, row_base)
    row = row_base[trace.ev_track] + trace.ev_depth
    start, end = trace.ev_start_ps.tolist(), (trace.ev_start_ps + trace.ev_dur_ps).tolist()
    covered = [0] * trace.num_events
    for c in range(trace.num_events):
        above = [p for p in range(trace.num_events) if row[p] == row[c] - 1 and start[p] <= start[c]]
        if trace.ev_depth[c] > 0 and above:
            p = max(above, key=lambda p: (start[p], p))  # the last one starting at or before c
            if start[c] < end[p]:
                covered[p] += min(end[c], end[p]) - start[c]
    assert got.tolist() == [max(0, end[i] - start[i] - covered[i]) for i in range(trace.num_events)]


def test_event_details_args_and_flows():
    b = TraceBuilder("t", "test")
    sec = b.section("s", "cpu")
    cpu, gpu = b.track(sec, "cpu"), b.track(sec, "gpu", kind="stream")
    launch = b.add_event(
        cpu, 0, 10, b.intern("launch"), b.intern("cuda_runtime"), b'{"correlation": 7, "x": [1, 2]}'
    )
    kernel = b.add_event(gpu, 20, 5, b.intern("kernel"), args=b'{"bad json')
    b.add_flow(launch, kernel, b.intern("ac2g"))
    tl = timeline_of(b.finalize())
    ev = tl.event(0)
    assert ev.name == "launch" and ev.category == "cuda_runtime"
    assert ev.args == {"correlation": 7, "x": [1, 2]}
    assert ev.flows_out == [FlowLink(id=1, name="kernel", flow="ac2g", start_ns=0.02, dur_ns=0.005, track=1)]
    assert ev.flows_in == []
    k = tl.event(1)
    assert k.flows_in[0].id == 0 and k.args == {} and "not valid JSON" in k.args_error
    with pytest.raises(KeyError):
        tl.event(2)


# Letters of both cases, digits, space and a non-ASCII letter (lowercase only: argument values are
# folded ASCII-only, names fully).
ALPHABET = "abcXYZ12 é"


@st.composite
def searchable(draw):
    b = TraceBuilder("t", "test")
    track = b.track(b.section("s"), "t")
    names = draw(st.lists(st.text(ALPHABET, max_size=6), min_size=1, max_size=5))
    ids = [b.intern(x) for x in names]
    n = draw(st.integers(1, 25))
    leaf = st.text(ALPHABET, max_size=8) | st.integers(-5000, 5000) | st.booleans() | st.none()
    value = st.recursive(
        leaf,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(ALPHABET, max_size=4), inner, max_size=2)
        ),
        max_leaves=5,
    )
    args_objs = draw(
        st.lists(
            st.dictionaries(st.text(ALPHABET, min_size=1, max_size=6), value, max_size=3) | st.none(),
            min_size=n,
            max_size=n,
        )
    )
    spaced = draw(st.booleans())  # Chrome files keep their own spacing, msgspec writes none
    args = [
        None
        if a is None
        else json.dumps(a, ensure_ascii=False, separators=(", ", ": ") if spaced else (",", ":")).encode()
        for a in args_objs
    ]
    b.add_events(track, list(range(0, n * 10, 10)), [5] * n, [ids[i % len(ids)] for i in range(n)], args=args)
    return b.finalize(), args_objs


def leaves(value):
    """Text of every value (not key) as JSON writes it."""
    if isinstance(value, dict):
        for v in value.values():
            yield from leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from leaves(v)
    elif isinstance(value, str):
        yield value
    else:
        yield json.dumps(value)


@settings(max_examples=150, deadline=None)
@given(searchable(), st.text(ALPHABET, min_size=1, max_size=3), st.sampled_from([1 << 25, 7, 64]))
def test_search_matches_names_and_argument_values_not_keys(data, q, chunk):
    trace, args_objs = data
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(query, "SCAN_CHUNK", chunk)
        got = query.Searcher(trace).matches(q).tolist()
    ql = q.strip().lower()
    if not ql:
        assert got == []
        return
    expected = []
    for i in range(trace.num_events):
        name = trace.strings[int(trace.ev_name[i])]
        original = int(trace.ev_start_ps[i]) // 10
        hit = ql in name.lower() or any(ql in text.lower() for text in leaves(args_objs[original] or {}))
        if hit:
            expected.append(i)
    assert got == expected


def test_search_folds_case_and_reports_total_and_first_matches():
    b = TraceBuilder("t", "test")
    track = b.track(b.section("s"), "t")
    conv = b.intern("Conv2D")
    other = b.intern("relu")
    n = 300
    names = [conv if i % 3 == 0 else other for i in range(n)]
    args = [b'{"layer": "ENCODER.block"}' if i % 5 == 0 else b'{"Layer": 1}' for i in range(n)]
    b.add_events(track, list(range(n, 0, -1)), [1] * n, names, args=args)
    tl = timeline_of(b.finalize())
    r = tl.search("conv2d", limit=10)
    assert r.total == 100 and len(r.matches) == 10 and r.truncated
    starts = [m.start_ns for m in r.matches]
    assert starts == sorted(starts)
    assert tl.search("encoder", limit=0).total == 60
    assert tl.search("layer").total == 0, "keys are not searched"
    assert tl.search("zzz").total == 0


def test_search_folds_ascii_letters_only():
    # Bytes one bit 0x20 away from a letter's other case that are not letters: @ ` [ { ] } ^ ~.
    values = ["@", "`", "[", "{", "]", "}", "^", "~", "Z", "z", "A", "a", "É", "é"]
    b = TraceBuilder("t", "test")
    track = b.track(b.section("s"), "t")
    name = b.intern("e")
    args = [json.dumps({"k": f"x{v}y"}, ensure_ascii=False).encode() for v in values]
    b.add_events(track, list(range(len(values))), [1] * len(values), [name] * len(values), args=args)
    searcher = query.Searcher(b.finalize())
    ascii_lower = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
    for v in values:
        q = f"x{v}y"
        expected = [i for i, w in enumerate(values) if f"x{w}y".translate(ascii_lower) == q.lower()]
        assert searcher.matches(q).tolist() == expected, q


def test_search_on_a_real_trace_agrees_with_decoded_args():
    trace = chrome_json.read(str(DATA / "bert" / "bert_small.pt.trace.json.gz"), fsspec.filesystem("file"))
    searcher = query.Searcher(trace)
    for q in ("aten::", "cuda", "float", "1"):
        got = set(searcher.matches(q).tolist())
        expected = set()
        for i in range(trace.num_events):
            raw = trace.args_json(i)
            values = leaves(json.loads(raw)) if raw else []
            if q in trace.strings[int(trace.ev_name[i])].lower() or any(q in v.lower() for v in values):
                expected.add(i)
        assert got == expected, q


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 500), st.integers(0, 80), st.integers(0, 3)),
        min_size=1,
        max_size=40,
    ),
    st.integers(-50, 600),
    st.integers(0, 300),
    st.sets(st.integers(0, 2)) | st.none(),
)
def test_range_summary_matches_brute_force(events, lo, width, tracks):
    b = TraceBuilder("t", "test")
    sec = b.section("s")
    tids = [b.track(sec, f"t{i}") for i in range(3)]
    names = [b.intern(f"n{i}") for i in range(4)]
    for t, s, d, n in events:
        b.add_event(tids[t], s, d, names[n])
    trace = b.finalize()
    index = lod.build(trace)
    hi = lo + width
    got = query.range_events(trace, index, None if tracks is None else sorted(tracks), lo, hi)
    expected = [
        i
        for i in range(trace.num_events)
        if (tracks is None or int(trace.ev_track[i]) in tracks)
        and (
            (
                trace.ev_dur_ps[i] > 0
                and trace.ev_start_ps[i] < hi
                and trace.ev_start_ps[i] + trace.ev_dur_ps[i] > lo
            )
            or (trace.ev_dur_ps[i] == 0 and lo <= trace.ev_start_ps[i] <= hi)
        )
    ]
    assert got.tolist() == expected
    rows = query.summarize(trace, index, got)
    assert sum(r["count"] for r in rows) == len(expected)
    for r in rows:
        sel = [i for i in expected if trace.strings[int(trace.ev_name[i])] == r["name"]]
        durs = [int(trace.ev_dur_ps[i]) for i in sel]
        assert r["count"] == len(sel) and r["total_ps"] == sum(durs)
        assert r["min_ps"] == min(durs) and r["max_ps"] == max(durs)
        assert r["self_ps"] == int(np.sum(index.self_ps[sel]))


@pytest.mark.parametrize("chunk", [1 << 25, 100, 4096])
def test_search_reads_a_cached_blob_through_the_file(tmp_path, chunk, monkeypatch):
    trace = chrome_json.read(str(DATA / "bert" / "bert_small.pt.trace.json.gz"), fsspec.filesystem("file"))
    arrays, meta = ingest.build_extras(trace)
    path = store.write(trace, str(tmp_path), "e" * 64, extra=arrays, extra_meta=meta)
    opened = ingest.open_entry(path, "e" * 64)
    assert isinstance(opened.searcher.trace.args_blob, np.memmap)
    reads = []
    real_open = open

    def spy_open(file, *args, **kwargs):
        reads.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", spy_open)
    monkeypatch.setattr(query, "SCAN_CHUNK", chunk)
    found = 0
    for q in ("Float", "cuda", "aten::linear", "1", "grid"):
        hits = opened.searcher.matches(q).tolist()
        assert hits == query.Searcher(trace).matches(q).tolist(), q
        found += len(hits)
    assert found > 1000
    assert reads and all(r.endswith("args_blob.npy") for r in reads)


def test_key_check_near_few_hits_equals_the_scan_of_the_window() -> None:
    """A search with few hits in a chunk looks for the key-closing quote only after each hit (a pass
    over the whole 1 MB window per chunk took half of a search that matches in args); on a real
    trace's args, at every place, both ways find the same quotes."""

    import fsspec

    from profscope.formats.chrome import reader as chrome_json

    path = DATA_DIR / "kineto" / "bert_small.pt.trace.json.gz"
    blob = np.asarray(chrome_json.read(str(path), fsspec.filesystem("file")).args_blob)
    rng = np.random.default_rng(11)
    for size in (0, 1, 50, 2000):
        after = np.sort(rng.choice(blob.shape[0], size, replace=False)).astype(np.int64)
        near, scanned = query._next_quotes_near(blob, after), query._next_quotes_scan(blob, after)
        assert np.array_equal(near[1], scanned[1]) and np.array_equal(
            near[0][near[1]], scanned[0][scanned[1]]
        )
        if size:
            assert near[1].any()
    every = np.arange(blob.shape[0] - 100, blob.shape[0], dtype=np.int64)  # the window's end
    near, scanned = query._next_quotes_near(blob, every), query._next_quotes_scan(blob, every)
    assert np.array_equal(near[1], scanned[1]) and np.array_equal(near[0][near[1]], scanned[0][scanned[1]])


def test_a_cancelled_search_stops_within_one_chunk(monkeypatch) -> None:
    """A newer search of the same client cancels a running one: its scan of the args blob stops
    at the next chunk instead of reading the rest of the trace, and the newer one then runs."""
    trace = chrome_json.read(str(DATA / "bert" / "bert_small.pt.trace.json.gz"), fsspec.filesystem("file"))
    expected = int(query.Searcher(trace).matches("cuda").shape[0])
    monkeypatch.setattr(query, "SCAN_CHUNK", 4096)
    chunks = -(-int(trace.args_blob.shape[0]) // 4096)
    assert chunks > 20, "the scan has many chunks to skip"
    pool = SearchPool(max_running=1, max_waiting=1)
    windows = query._windows
    cancelled_thread = threading.current_thread()
    read = 0
    newer: list[int] = []
    newer_thread = threading.Thread(
        target=lambda: newer.append(
            pool.run(lambda: int(query.Searcher(trace).matches("cuda").shape[0]), "c")
        )
    )

    def windows_superseded_at_the_third(trace, step):  # type: ignore[no-untyped-def]
        nonlocal read
        for window in windows(trace, step):
            if threading.current_thread() is cancelled_thread:
                read += 1
                if read == 3:
                    newer_thread.start()
                    deadline = time.monotonic() + 60
                    while pool.counts() != (1, 1):  # the newer search has cancelled this one and waits
                        assert time.monotonic() < deadline
                        time.sleep(0.001)
            yield window

    monkeypatch.setattr(query, "_windows", windows_superseded_at_the_third)
    with pytest.raises(SearchCancelled):
        pool.run(lambda: query.Searcher(trace).matches("a"), "c")
    assert read == 3, f"the cancelled scan read {read} of {chunks} chunks"
    newer_thread.join(60)
    assert newer == [expected] and expected > 0


def _filter_trace():
    b = TraceBuilder("t", "test")
    track = b.track(b.section("s"), "t")
    names = [
        b.intern(x) for x in ("volta_sgemm_128x64", "void at::native::vectorized<float>", "cudaLaunchKernel")
    ]
    args = [
        b'{"stream": 7, "kernel_details": "regs:32 grid:1024,1,1"}',
        b'{"stream":17,"note":"say \\"stream\\":7"}',
        b'{"stream": "7", "device": 0}',
        b'{"Stream": 7}',
        None,
    ]
    b.add_events(track, [0, 10, 20, 30, 40], [5] * 5, [names[i % 3] for i in range(5)], args=args)
    return b.finalize()


def test_arg_filters_match_whole_values_with_wildcards_and_case_folded():
    searcher = query.Searcher(_filter_trace())
    f = query.parse_arg_filters
    assert searcher.matches("", args=f("stream:7")).tolist() == [0, 2], "17 and an escaped key do not match"
    assert searcher.matches("", args=f("stream:1*")).tolist() == [1]
    assert searcher.matches("", args=f("kernel_details:*GRID:1024*")).tolist() == [0]
    assert searcher.matches("sgemm", args=f("stream:7")).tolist() == [0], "the query and the filter both hold"
    assert searcher.matches("", args=f("stream:7 device:0")).tolist() == [2]
    assert searcher.matches("", args=f("missing:1")).tolist() == []
    with pytest.raises(ValueError, match="not key:value"):
        f("stream")


@pytest.mark.parametrize("chunk", [1 << 20, 16])
def test_arg_filters_find_keys_across_scan_chunks(chunk, monkeypatch):
    monkeypatch.setattr(query, "SCAN_CHUNK", chunk)
    assert query.Searcher(_filter_trace()).matches("", args=query.parse_arg_filters("stream:7")).tolist() == [
        0,
        2,
    ]


def test_regex_matches_names_only_case_folded():
    searcher = query.Searcher(_filter_trace())
    assert searcher.matches(r"^volta_.*64$", regex=True).tolist() == [0, 3]
    assert searcher.matches(r"vectorized<\w+>", regex=True).tolist() == [1, 4]
    assert searcher.matches("regs", regex=True).tolist() == [], "argument values are not matched by a regex"
    with pytest.raises(ValueError, match="invalid regular expression"):
        searcher.matches("(", regex=True)


def test_search_matches_carry_their_row():
    trace = _filter_trace()
    r = timeline_of(trace).search("", args=query.parse_arg_filters("stream:7"))
    assert [(m.name, m.depth) for m in r.matches] == [("volta_sgemm_128x64", 0), ("cudaLaunchKernel", 0)]
