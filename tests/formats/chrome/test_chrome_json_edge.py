"""The Chrome / Kineto reader on hand-written inputs: the damage real traces show, and every phase.

Real traces cover the common shapes (tests/test_chrome_json.py); these synthetic files cover what
the corpus lacks: truncation, bare N/A, ids past int64, invalid UTF-8, unsorted events, B/E
mismatch, overlapping slices, both document forms, displayTimeUnit, async, counters, flows.
"""

from __future__ import annotations

import collections
import dataclasses
import gzip
import json
import random
import tracemalloc
from pathlib import Path
from typing import Any

import fsspec
import pytest

from profscope.errors import UnreadableProfile
from profscope.formats.chrome import reader as chrome_json
from profscope.formats.chrome import scan as chrome_scan
from profscope.formats.chrome import tracks as chrome_layout
from tests.support import DATA_DIR
from tests.support.same_trace import assert_same_trace

pytestmark = pytest.mark.stack_independent

DATA = DATA_DIR / "kineto"


def read_bytes(tmp_path: Path, content: bytes | str, name: str = "trace.json") -> Any:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return chrome_json.read(str(path), fsspec.filesystem("file"))


def doc(events: list[dict[str, Any]], **top: Any) -> str:
    return json.dumps({"traceEvents": events, **top})


def X(name: str, ts: Any, dur: Any, tid: Any = 1, pid: Any = 1, **extra: Any) -> dict[str, Any]:
    return {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, **extra}


def rows(trace: Any) -> list[tuple[str, int, int]]:
    names = [trace.strings[i] for i in trace.ev_name.tolist()]
    return sorted(zip(names, trace.ev_start_ps.tolist(), trace.ev_dur_ps.tolist()))


def find(trace: Any, name: str) -> int:
    hits = [i for i, n in enumerate(trace.ev_name.tolist()) if trace.strings[n] == name]
    assert len(hits) == 1, (name, hits)
    return hits[0]


def track_of(trace: Any, index: int) -> Any:
    return trace.tracks[int(trace.ev_track[index])]


def flows(trace: Any) -> set[tuple[str, str]]:
    name = trace.strings
    return {
        (name[trace.ev_name[s]], name[trace.ev_name[d]])
        for s, d in zip(trace.flow_src.tolist(), trace.flow_dst.tolist())
    }


MANY = [X(f"op{i}", 10 * i, 5, args={"i": i, "text": "x" * 40}) for i in range(60)]


# -- damage ---------------------------------------------------------------------------------------


def test_file_cut_in_the_middle_of_an_event(tmp_path: Path) -> None:
    text = doc(MANY)
    cut = text.index('"name": "op30"') + 5
    trace = read_bytes(tmp_path, text[:cut])
    assert [r[0] for r in rows(trace)] == sorted(f"op{i}" for i in range(30))
    assert trace.skipped == {"event cut off by the end of the file": 1}
    assert any("truncated" in w for w in trace.warnings)


@pytest.mark.parametrize("window", [256, 4096])
def test_truncation_with_small_windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int) -> None:
    monkeypatch.setattr(chrome_scan, "WINDOW_BYTES", window)
    monkeypatch.setattr(chrome_scan, "MIN_WINDOW_BYTES", 64)
    text = doc(MANY)
    cut = text.index('"name": "op47"') + 3
    trace = read_bytes(tmp_path, text[:cut])
    assert trace.num_events == 47
    assert trace.skipped == {"event cut off by the end of the file": 1}


def test_truncated_gzip_loads_what_inflates(tmp_path: Path) -> None:
    packed = gzip.compress(doc(MANY * 20).encode())
    trace = read_bytes(tmp_path, packed[: len(packed) * 2 // 3], "trace.json.gz")
    assert 0 < trace.num_events < 1200
    assert any("gzip stream is truncated" in w for w in trace.warnings)


def _bytes_scanned(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts how many bytes the scanner's value scans pass over (work, not time)."""
    scanned = [0]
    length = chrome_scan.ValueScan.length

    def counting(self: chrome_scan.ValueScan, buf: bytes, start: int, *limit: int | None) -> int | None:
        before = self.rel
        found = length(self, buf, start, *limit)
        scanned[0] += (self.rel if found is None else found) - before
        return found

    monkeypatch.setattr(chrome_scan.ValueScan, "length", counting)
    return scanned


def test_damaged_gzip_loads_what_inflates_before_the_damage_in_linear_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the damage zlib inflates megabytes of JSON-like garbage before its checksum fails:
    each `{` there once cost a scan to the end of the input (10-20 s for these 4.5 MB). Only the
    CRC-32 tells of the damage, so what inflated is all kept, with that warning."""
    rng = random.Random(7)
    events = [X(f"op{i}", i, 1, args={"noise": rng.randbytes(64).hex()}) for i in range(20000)]
    text = json.dumps(events).encode()
    packed = bytearray(gzip.compress(text, compresslevel=1))
    packed[len(packed) // 2 : len(packed) // 2 + 64] = bytes(64)
    scanned = _bytes_scanned(monkeypatch)
    trace = read_bytes(tmp_path, bytes(packed), "trace.json.gz")
    assert 5000 < trace.num_events < 20000
    assert any("CRC-32 does not match" in w for w in trace.warnings), trace.warnings
    assert scanned[0] < 4 * len(text), scanned[0]


def test_events_after_a_stretch_of_garbage_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two megabytes of JSON-like garbage (no `]`, which would end the array) between good events: the events after it are kept, and
    the garbage is passed over in work proportional to its size."""
    rng = random.Random(3)
    garbage = "".join(rng.choice('{}[",:a0 ') for _ in range(2 << 20))
    before = [X(f"before{i}", i, 1) for i in range(1000)]
    after = [X(f"after{i}", 10_000 + i, 1) for i in range(1000)]
    text = doc(before)[:-2] + ", " + garbage + ", " + doc(after)[len('{"traceEvents": [') :]
    scanned = _bytes_scanned(monkeypatch)
    trace = read_bytes(tmp_path, text)
    names = {trace.strings[i] for i in trace.ev_name.tolist()}
    assert {f"before{i}" for i in range(1000)} <= names
    assert {f"after{i}" for i in range(1000)} <= names
    assert trace.skipped.get("unparseable text in traceEvents", 0) > 0
    assert scanned[0] < 4 * len(text), scanned[0]


def test_gzip_damaged_from_the_start_is_unreadable(tmp_path: Path) -> None:
    packed = bytearray(gzip.compress(doc(MANY).encode()))
    packed[10:40] = bytes(30)
    with pytest.raises(UnreadableProfile, match="gzip"):
        read_bytes(tmp_path, bytes(packed), "broken.json.gz")


def test_bare_na_values(tmp_path: Path) -> None:
    text = (
        '{"traceEvents": ['
        '{"ph": "X", "name": "good", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {"Input Dims": N/A, "n": 1}},'
        '{"ph": "X", "name": "no dur", "pid": 1, "tid": 1, "ts": 3, "dur": N/A},'
        '{"ph": "X", "name": "quoted", "pid": 1, "tid": 1, "ts": "N/A", "dur": 1},'
        '{"ph": "X", "name": "nan", "pid": 1, "tid": 1, "ts": 5, "dur": 1, "args": {"bw": NaN, "x": Infinity}}'
        "]}"
    )
    trace = read_bytes(tmp_path, text)
    assert [r[0] for r in rows(trace)] == ["good", "nan"]
    assert json.loads(trace.args_json(find(trace, "good"))) == {"Input Dims": "N/A", "n": 1}
    assert json.loads(trace.args_json(find(trace, "nan"))) == {"bw": "NaN", "x": "Infinity"}
    assert trace.skipped == {
        "X events without a valid numeric dur": 1,
        "events without a valid numeric ts": 1,
    }
    assert "repaired: bare N/A values kept as strings (2)" in trace.warnings


def test_ids_past_int64(tmp_path: Path) -> None:
    big = 2**70
    events = [
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        X(
            "cudaLaunchKernel",
            10,
            5,
            pid=big + 1,
            tid=big + 2,
            cat="cuda_runtime",
            args={"correlation": big + 5},
        ),
        X("kern", 20, 5, pid=0, tid=7, cat="kernel", args={"correlation": big + 5}),
        X("a", 100, 10, pid=big + 1, tid=big + 2),
        X("b", 200, 10, pid=big + 1, tid=big + 2),
        {"ph": "s", "id": big * 3, "cat": "c", "name": "link", "pid": big + 1, "tid": big + 2, "ts": 101},
        {
            "ph": "f",
            "id": big * 3,
            "cat": "c",
            "name": "link",
            "pid": big + 1,
            "tid": big + 2,
            "ts": 201,
            "bp": "e",
        },
        # Same digits except the last: must not be confused with the flow above.
        {"ph": "f", "id": big * 3 + 1, "cat": "c", "name": "link", "pid": big + 1, "tid": big + 2, "ts": 205},
    ]
    trace = read_bytes(tmp_path, doc(events))
    assert flows(trace) == {("cudaLaunchKernel", "kern"), ("a", "b")}
    assert trace.skipped == {"flow with a single endpoint": 1}
    assert track_of(trace, find(trace, "a")).name == f"thread {big + 2}"
    assert json.loads(trace.args_json(find(trace, "kern")))["correlation"] == big + 5


def test_invalid_utf8_in_names_and_args(tmp_path: Path) -> None:
    text = (
        b'{"traceEvents": ['
        b'{"ph": "X", "name": "ok", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"s": "caf\xc3\xa9"}},'
        b'{"ph": "X", "name": "bad\xffname", "pid": 1, "tid": 1, "ts": 2, "dur": 1},'
        b'{"ph": "X", "name": "badargs", "pid": 1, "tid": 1, "ts": 3, "dur": 1, "args": {"s": "x\xfe\xfdy"}}'
        b"]}"
    )
    trace = read_bytes(tmp_path, text)
    assert [r[0] for r in rows(trace)] == sorted(["bad\ufffdname", "badargs", "ok"])
    assert json.loads(trace.args_json(find(trace, "ok"))) == {"s": "café"}
    assert json.loads(trace.args_json(find(trace, "badargs"))) == {"s": "x\ufffd\ufffdy"}
    assert "repaired: invalid UTF-8 bytes replaced by U+FFFD (3)" in trace.warnings
    for i in range(trace.num_events):
        trace.args_json(i).decode("utf-8")


def test_control_characters_inside_strings(tmp_path: Path) -> None:
    text = '{"traceEvents": [{"ph": "X", "name": "tab\there", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"stack": "a\nb"}}]}'
    trace = read_bytes(tmp_path, text)
    assert trace.strings[trace.ev_name[0]] == "tab\there"
    assert json.loads(trace.args_json(0)) == {"stack": "a\nb"}


def test_elements_that_are_not_events_and_garbage_between_events(tmp_path: Path) -> None:
    text = (
        '{"traceEvents": [1, "x", null, [1, 2], '
        '{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}, '
        'garbage!, {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 2, "dur": 1}]}'
    )
    trace = read_bytes(tmp_path, text)
    assert [r[0] for r in rows(trace)] == ["a", "b"]
    assert trace.skipped == {"array element is not an event object": 5}


def test_empty_objects_closing_tensorflow_traces_are_not_events(tmp_path: Path) -> None:
    trace = read_bytes(tmp_path, doc([X("a", 1, 1), {}]))
    assert trace.num_events == 1 and trace.skipped == {} and trace.warnings == []
    no_phase = read_bytes(tmp_path, doc([X("a", 1, 1), {"name": "b", "ts": 2}]), "no_phase.json")
    assert no_phase.skipped == {"event without a phase ('ph')": 1}


def test_fields_of_unexpected_types_are_coerced(tmp_path: Path) -> None:
    events = [
        {"ph": "X", "name": 42, "pid": 1.0, "tid": "7", "ts": "12.5", "dur": 1.5e3},
        {"ph": "X", "name": "same thread", "pid": 1, "tid": 7, "ts": 13, "dur": 1, "cat": None},
    ]
    trace = read_bytes(tmp_path, doc(events))
    assert rows(trace) == [("42", 0, 1_500_000_000), ("same thread", 500_000, 1_000_000)]
    assert len({int(t) for t in trace.ev_track}) == 1
    assert any("unexpected type" in w for w in trace.warnings)


def test_negative_durations_and_far_outliers_are_skipped(tmp_path: Path) -> None:
    events = [X("ok", 1712195495519689, 3), X("neg", 1712195495519690, -1), X("zero ts", 0, 1)]
    events += [X("ok2", 1712195495519699, 1), X("ok3", 1712195495519709, 1)]
    trace = read_bytes(tmp_path, doc(events))
    assert rows(trace) == [
        ("ok", 0, 3_000_000),
        ("ok2", 10_000_000, 1_000_000),
        ("ok3", 20_000_000, 1_000_000),
    ]
    assert trace.clock_origin_ns == 1712195495519689000
    assert trace.skipped == {
        "X events with a negative dur": 1,
        "events more than 25 days away from the rest of the trace": 1,
    }


@pytest.mark.parametrize(
    "content", [b"", b"hello", b"\x00\x01\x02binary", b'{"foo": 1}', b"[", b'{"traceEvents": [ {"ph": "X"']
)
def test_nothing_readable_raises_naming_the_file(tmp_path: Path, content: bytes) -> None:
    with pytest.raises(UnreadableProfile) as info:
        read_bytes(tmp_path, content, "broken.json")
    assert "broken.json" in str(info.value)


def test_empty_events_array_is_an_empty_trace(tmp_path: Path) -> None:
    trace = read_bytes(tmp_path, '{"traceEvents": [], "schemaVersion": 1}')
    assert trace.num_events == 0 and trace.metadata["schemaVersion"] == 1
    assert trace.warnings == ["the trace holds no events"]


# -- ordering, pairing, layout --------------------------------------------------------------------


def test_unsorted_events_give_the_same_trace(tmp_path: Path) -> None:
    events = [X(f"op{i}", 7 * i, 3, tid=i % 3) for i in range(40)]
    events += [
        {"ph": "s", "id": 1, "cat": "f", "name": "f", "pid": 1, "tid": 0, "ts": 1},
        {"ph": "f", "id": 1, "cat": "f", "name": "f", "pid": 1, "tid": 1, "ts": 8, "bp": "e"},
    ]
    shuffled = list(events)
    random.Random(4).shuffle(shuffled)
    a = read_bytes(tmp_path, doc(events), "a.json")
    b = read_bytes(tmp_path, doc(shuffled), "b.json")
    assert rows(a) == rows(b) and flows(a) == flows(b) == {("op0", "op1")}


def test_begin_end_pairs_nest_and_mismatches_are_reported(tmp_path: Path) -> None:
    events = [
        {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 0, "args": {"x": 1}},
        {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 1},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 2},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 3, "args": {"y": 2}},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 4},
        {"ph": "B", "name": "open", "pid": 1, "tid": 1, "ts": 5},
        X("last", 9, 1, tid=2),
    ]
    trace = read_bytes(tmp_path, doc(events))
    assert rows(trace) == [
        ("inner", 1_000_000, 1_000_000),
        ("last", 9_000_000, 1_000_000),
        ("open", 5_000_000, 5_000_000),
        ("outer", 0, 3_000_000),
    ]
    assert json.loads(trace.args_json(find(trace, "outer"))) == {"x": 1, "y": 2}
    assert trace.ev_depth[find(trace, "inner")] == 1
    assert trace.skipped == {"E events without a matching B": 1}
    assert "1 B events have no matching E; shown until the end of the trace" in trace.warnings


def test_overlapping_slices_on_one_thread_get_extra_rows(tmp_path: Path) -> None:
    events = [X("a", 0, 10), X("b", 5, 10), X("c", 1, 2), X("d", 20, 1), X("e", 6, 2)]
    trace = read_bytes(tmp_path, doc(events))
    assert [r[0] for r in rows(trace)] == ["a", "b", "c", "d", "e"]
    depth = {trace.strings[n]: int(d) for n, d in zip(trace.ev_name.tolist(), trace.ev_depth.tolist())}
    assert depth["a"] == 0 and depth["d"] == 0 and depth["b"] >= 1
    # No two slices share a row where they overlap.
    spans = sorted(
        zip(
            trace.ev_depth.tolist(),
            trace.ev_start_ps.tolist(),
            (trace.ev_start_ps + trace.ev_dur_ps).tolist(),
        )
    )
    for (d1, _, e1), (d2, s2, _) in zip(spans, spans[1:]):
        assert d1 != d2 or s2 >= e1
    assert trace.tracks[0].max_depth >= 2


def test_async_events_get_their_own_tracks(tmp_path: Path) -> None:
    events = [
        {"ph": "b", "cat": "net", "name": "request", "id": "0x1", "pid": 1, "tid": 1, "ts": 1},
        {"ph": "b", "cat": "net", "name": "parse", "id": "0x1", "pid": 1, "tid": 9, "ts": 2},
        {"ph": "n", "cat": "net", "name": "chunk", "id": "0x1", "pid": 1, "tid": 1, "ts": 3},
        {"ph": "e", "cat": "net", "name": "parse", "id": "0x1", "pid": 1, "tid": 9, "ts": 4},
        {
            "ph": "e",
            "cat": "net",
            "name": "request",
            "id": "0x1",
            "pid": 1,
            "tid": 1,
            "ts": 6,
            "args": {"status": 200},
        },
        {"ph": "b", "cat": "net", "name": "request", "id": "0x2", "pid": 1, "tid": 1, "ts": 2},
        {"ph": "e", "cat": "net", "name": "nobody", "id": "0x2", "pid": 1, "tid": 1, "ts": 3},
        {"ph": "S", "cat": "legacy", "name": "old", "id": 5, "pid": 1, "tid": 1, "ts": 1},
        {"ph": "F", "cat": "legacy", "name": "old", "id": 5, "pid": 1, "tid": 1, "ts": 2},
    ]
    trace = read_bytes(tmp_path, doc(events))
    assert rows(trace) == [
        ("chunk", 2_000_000, 0),
        ("old", 0, 1_000_000),
        ("parse", 1_000_000, 2_000_000),
        ("request", 0, 5_000_000),
        ("request", 1_000_000, 4_000_000),
    ]
    request = [i for i in range(trace.num_events) if trace.strings[trace.ev_name[i]] == "request"]
    assert {track_of(trace, i).kind for i in request} == {"async"}
    assert track_of(trace, request[0]).id != track_of(trace, request[1]).id
    assert track_of(trace, find(trace, "parse")).id == track_of(trace, find(trace, "chunk")).id
    assert trace.ev_depth[find(trace, "parse")] == 1
    assert trace.skipped == {"async end events without a matching begin": 1}
    assert "1 async begin events have no matching end; shown until the end of the trace" in trace.warnings


def test_single_slice_async_ids_share_a_track_per_name(tmp_path: Path) -> None:
    """A thousand request spans (one id each, two at a time) are two rows of one track, as in
    Perfetto, not a thousand one-slice tracks; an id with nested events keeps its own track."""
    events: list[dict[str, Any]] = []
    for i in range(1000):
        begin = {"ph": "b", "cat": "net", "name": "request", "id": i, "pid": 1, "tid": 1, "ts": 10 * i}
        events += [begin, {**begin, "ph": "e", "ts": 10 * i + 15}]
    events += [
        {"ph": "n", "cat": "net", "name": "ping", "id": "p", "pid": 1, "tid": 1, "ts": 3},
        {"ph": "b", "cat": "net", "name": "request", "id": "big", "pid": 1, "tid": 1, "ts": 0},
        {"ph": "b", "cat": "net", "name": "parse", "id": "big", "pid": 1, "tid": 1, "ts": 1},
        {"ph": "e", "cat": "net", "name": "parse", "id": "big", "pid": 1, "tid": 1, "ts": 2},
        {"ph": "e", "cat": "net", "name": "request", "id": "big", "pid": 1, "tid": 1, "ts": 5},
        {"ph": "b", "cat": "net", "name": "request", "id": 7, "pid": 2, "tid": 1, "ts": 0},
        {"ph": "e", "cat": "net", "name": "request", "id": 7, "pid": 2, "tid": 1, "ts": 1},
    ]
    trace = read_bytes(tmp_path, doc(events))
    asynchronous = [t for t in trace.tracks if t.kind == "async"]
    assert sorted((t.section, t.name) for t in asynchronous) == [
        (0, "ping"),
        (0, "request"),
        (0, "request"),
        (1, "request"),
    ]
    spans = [i for i in range(trace.num_events) if trace.strings[trace.ev_name[i]] == "request"]
    pid1_spans = [i for i in spans if track_of(trace, i).section == 0]
    shared = {track_of(trace, i).id for i in pid1_spans} - {track_of(trace, find(trace, "parse")).id}
    assert len(shared) == 1
    shared_track = trace.tracks[shared.pop()]
    assert shared_track.max_depth == 1  # span i overlaps span i + 1 only
    on_shared = [i for i in pid1_spans if int(trace.ev_track[i]) == shared_track.id]
    assert len(on_shared) == 1000
    assert {int(trace.ev_depth[i]) for i in on_shared} == {0, 1}
    # Each end closes the begin of its own id, not the latest begin on the shared track.
    assert {int(trace.ev_dur_ps[i]) for i in on_shared} == {15_000_000}
    big = track_of(trace, find(trace, "parse"))
    assert big.name == "request" and big.id != shared_track.id and trace.ev_depth[find(trace, "parse")] == 1


def test_single_slice_async_ids_are_grouped_the_same_a_slice_of_keys_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tens of millions of ids are put in their groups a slice of keys at a time. With slices of
    7 keys (groups met again in later slices, groups first met in a later slice, ids with a
    track of their own between), the trace is the one a single slice gives, and each shared
    track sits where its first id appeared among the tracks of its name."""

    def nested(pid: int, name: str) -> list[dict[str, Any]]:
        span = {"cat": "net", "name": name, "id": f"own{pid}", "pid": pid, "tid": 1}
        inner = {**span, "ph": "n", "name": "inner", "ts": 4}
        return [{**span, "ph": "b", "ts": 3}, inner, {**span, "ph": "e", "ts": 5}]

    events: list[dict[str, Any]] = []
    for i in range(60):
        pid = 1 + i % 2
        if pid == 1:
            name = "late" if i >= 40 and i % 3 == 0 else "fetch"
        else:
            name = "request" if i >= 30 else "ping"
        begin = {"ph": "b", "cat": "net", "name": name, "id": i, "pid": pid, "tid": 1, "ts": 10 * i}
        events += [begin, {**begin, "ph": "e", "ts": 10 * i + 15}]
        if i == 0:  # right after the first "fetch" id, in its slice
            events += nested(1, "fetch")
        if i == 9:  # before pid 2's first "request" id (id 31, in the fifth slice)
            events += nested(2, "request")
    whole = read_bytes(tmp_path, doc(events))
    monkeypatch.setattr(chrome_layout, "GROUP_SLICE", 7)
    sliced = read_bytes(tmp_path, doc(events), name="again.json")
    assert_same_trace(dataclasses.replace(sliced, source=whole.source), whole)
    asynchronous = [t for t in whole.tracks if t.kind == "async"]
    own = {
        track_of(whole, i).id for i in range(whole.num_events) if whole.strings[whole.ev_name[i]] == "inner"
    }
    assert [(t.section, t.name, t.id in own) for t in asynchronous] == [
        (0, "fetch", False),
        (0, "fetch", True),
        (0, "late", False),
        (1, "ping", False),
        (1, "request", True),
        (1, "request", False),
    ]
    per_track = collections.Counter(int(t) for t in whole.ev_track)
    assert [per_track[t.id] for t in asynchronous] == [27, 2, 3, 15, 2, 15]


def _requests(count: int, distinct_ids: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for i in range(count):
        begin = {"ph": "b", "cat": "net", "name": "request", "id": i % distinct_ids, "pid": 1, "tid": 1}
        events += [{**begin, "ts": 10 * i}, {**begin, "ph": "e", "ts": 10 * i + 5}]
    return events


def _read_traced(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int, int]:
    """(trace, peak, memory held when decoding ends) of reading `path`, Python allocations
    (tracemalloc) from the start of the read."""
    assemble = chrome_json._assemble
    held: list[int] = []

    def measured(*args: Any) -> None:
        # Without the chunk its write-behind thread may still hold (one or none, as the thread ran):
        # what decoding keeps, the same however the threads were scheduled.
        for part in args[1]:
            if part.spill is not None and part.spill._behind is not None:
                part.spill._behind.drain()
        held.append(tracemalloc.get_traced_memory()[0])
        assemble(*args)

    monkeypatch.setattr(chrome_json, "_assemble", measured)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        trace = chrome_json.read(str(path), fsspec.filesystem("file"))
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return trace, peak, held[0] - base


def test_memory_per_async_id_stays_small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A serving trace gives every request an id of its own. Reading 50 k such ids peaks at
    about 650 bytes each (most of it decoded batches and chunks, which the same events with ten
    ids hold too). What decoding holds per distinct id until the assembly is 16 bytes, the id
    texts in the chunks' id column: the ids are numbered in arrays (`chrome_async_keys`), not
    kept as a key tuple each in a dict (254 bytes each before)."""
    distinct = tmp_path / "requests.json"
    distinct.write_text(doc(_requests(50_000, 50_000)))
    reused = tmp_path / "ten_ids.json"
    reused.write_text(doc(_requests(50_000, 10)))
    trace, peak, held = _read_traced(distinct, monkeypatch)
    assert trace.num_events == 50_000
    assert peak / 50_000 < 800
    _, _, held_ten_ids = _read_traced(reused, monkeypatch)
    assert (held - held_ten_ids) / 50_000 < 40


def test_counters_become_one_track_per_series(tmp_path: Path) -> None:
    events = [
        {"ph": "C", "name": "memory", "pid": 1, "ts": 1, "args": {"used": 10, "free": 5}},
        {"ph": "C", "name": "memory", "pid": 1, "ts": 2, "args": {"used": 12.5, "free": "N/A"}},
        {"ph": "C", "name": "queue", "id": 3, "pid": 1, "ts": 2, "args": {"value": 7}},
        X("work", 0, 3),
    ]
    trace = read_bytes(tmp_path, doc(events))
    by_track: dict[str, list[tuple[int, float]]] = {}
    for t, time, value in zip(trace.ctr_track.tolist(), trace.ctr_time_ps.tolist(), trace.ctr_value.tolist()):
        track = trace.tracks[t]
        assert track.kind == "counter"
        by_track.setdefault(track.name, []).append((time, value))
    assert by_track == {
        "memory used": [(1_000_000, 10.0), (2_000_000, 12.5)],
        "memory free": [(1_000_000, 5.0)],
        "queue 3": [(2_000_000, 7.0)],
    }
    assert trace.skipped == {"counter values that are not numbers": 1}


def test_flow_events_bind_to_enclosing_or_next_slices(tmp_path: Path) -> None:
    events = [
        X("A", 0, 10, tid=1),
        X("B", 20, 10, tid=2),
        X("C", 40, 10, tid=3),
        X("D", 60, 10, tid=4),
        {"ph": "s", "id": 7, "cat": "c", "name": "chain", "pid": 1, "tid": 1, "ts": 5},
        {"ph": "t", "id": 7, "cat": "c", "name": "chain", "pid": 1, "tid": 2, "ts": 25},
        {"ph": "f", "id": 7, "cat": "c", "name": "chain", "pid": 1, "tid": 3, "ts": 45, "bp": "e"},
        {"ph": "s", "id": 8, "cat": "c", "name": "next", "pid": 1, "tid": 1, "ts": 6},
        # No "bp": "e": binds to the next slice that starts at or after ts on that thread.
        {"ph": "f", "id": 8, "cat": "c", "name": "next", "pid": 1, "tid": 4, "ts": 50},
    ]
    trace = read_bytes(tmp_path, doc(events))
    assert flows(trace) == {("A", "B"), ("B", "C"), ("A", "D")}


def test_flow_v2_bind_ids(tmp_path: Path) -> None:
    events = [
        X("producer", 0, 5, bind_id="0xab", flow_out=True),
        X("consumer", 10, 5, tid=2, bind_id="0xab", flow_in=True),
        X("orphan", 20, 5, bind_id="0xcd", flow_out=True),
    ]
    trace = read_bytes(tmp_path, doc(events))
    assert flows(trace) == {("producer", "consumer")}
    assert trace.skipped == {"flow_out events with no later flow_in": 1}


def test_metadata_events_name_and_order_sections_and_tracks(tmp_path: Path) -> None:
    events = [
        {"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "trainer"}},
        {"ph": "M", "name": "process_sort_index", "pid": 7, "args": {"sort_index": 5}},
        {"ph": "M", "name": "process_name", "pid": 3, "args": {"name": "loader"}},
        {"ph": "M", "name": "process_sort_index", "pid": 3, "args": {"sort_index": 9}},
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 70, "args": {"name": "main"}},
        {"ph": "M", "name": "thread_sort_index", "pid": 7, "tid": 70, "args": {"sort_index": 2}},
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 71, "args": {"name": "worker"}},
        {"ph": "M", "name": "thread_sort_index", "pid": 7, "tid": 71, "args": {"sort_index": 1}},
        X("a", 0, 1, pid=7, tid=70),
        X("b", 0, 1, pid=7, tid=71),
        X("c", 0, 1, pid=3, tid=30),
        {"ph": "i", "name": "everywhere", "pid": 7, "tid": 70, "ts": 0, "s": "g"},
        {"ph": "i", "name": "process-wide", "pid": 7, "tid": 70, "ts": 0, "s": "p"},
        {"ph": "I", "name": "thread", "pid": 7, "tid": 70, "ts": 0},
    ]
    trace = read_bytes(tmp_path, doc(events))
    sections = sorted(trace.sections, key=lambda s: s.sort_index)
    assert [(s.name, s.kind) for s in sections] == [
        ("trainer (pid 7)", "cpu"),
        ("loader (pid 3)", "cpu"),
        ("Global", "other"),
    ]
    trainer = [t for t in trace.tracks if t.section == sections[0].id]
    assert [t.name for t in sorted(trainer, key=lambda t: t.sort_index)] == [
        "process events",
        "worker",
        "main",
    ]
    assert trace.metadata["reader"]["events_by_phase"] == {"M": 8, "X": 3, "i": 2, "I": 1}
    assert track_of(trace, find(trace, "everywhere")).name == "global events"
    assert track_of(trace, find(trace, "process-wide")).name == "process events"
    assert track_of(trace, find(trace, "thread")).name == "main"


def test_tracks_are_numbered_by_section_sort_index_name_then_first_appearance(tmp_path: Path) -> None:
    """Track ids are the timeline's order: within a section by sort index, then name, then the
    order their keys first appear in the file; process events first, counters last."""
    named = {73: "zeta", 72: "alpha", 74: "same", 75: "same"}
    events = [
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": t, "args": {"name": n}} for t, n in named.items()
    ]
    events += [
        {"ph": "M", "name": "thread_sort_index", "pid": 7, "tid": t, "args": {"sort_index": 4}} for t in named
    ]
    events += [
        {"ph": "C", "name": "memory", "pid": 7, "ts": 0, "args": {"bytes": 1}},
        X("late", 0, 1, pid=7, tid=80),
        *(X(f"on {t}", 0, 1, pid=7, tid=t) for t in (75, 73, 74, 72)),
        X("early", 0, 1, pid=7, tid=2),
        {"ph": "i", "name": "process-wide", "pid": 7, "tid": 70, "ts": 0, "s": "p"},
    ]
    trace = read_bytes(tmp_path, doc(events))
    assert [t.id for t in trace.tracks] == list(range(len(trace.tracks)))
    order = [
        (t.name, trace.strings[int(trace.ev_name[trace.ev_track == t.id][0])])
        for t in trace.tracks
        if t.kind != "counter"
    ]
    assert order == [
        ("process events", "process-wide"),
        ("thread 2", "early"),
        ("alpha", "on 72"),
        ("same", "on 75"),
        ("same", "on 74"),
        ("zeta", "on 73"),
        ("thread 80", "late"),
    ]
    assert trace.tracks[-1].kind == "counter"


def test_gpu_sections_from_device_categories_without_metadata(tmp_path: Path) -> None:
    events = [
        X("aten::mm", 0, 10, pid=100, tid=100, cat="cpu_op"),
        X("gemm", 2, 3, pid=1, tid=7, cat="kernel"),
        X("copy", 6, 1, pid=1, tid=9, cat="gpu_memcpy"),
    ]
    trace = read_bytes(tmp_path, doc(events, deviceProperties=[{"id": 1, "name": "Some GPU"}]))
    gemm = track_of(trace, find(trace, "gemm"))
    assert (gemm.name, gemm.kind) == ("stream 7 (kernels)", "stream")
    assert track_of(trace, find(trace, "copy")).name == "stream 9 (memcpy)"
    assert trace.sections[gemm.section].name == "GPU 1 (Some GPU)"
    assert trace.sections[gemm.section].kind == "gpu"
    assert trace.sections[track_of(trace, find(trace, "aten::mm")).section].kind == "cpu"


# -- document forms and times ---------------------------------------------------------------------


def test_object_and_bare_array_forms(tmp_path: Path) -> None:
    events = [X("a", 1, 2), X("b", 3, 4)]
    as_object = read_bytes(tmp_path, doc(events), "o.json")
    as_array = read_bytes(tmp_path, json.dumps(events), "a.json")
    # The JSON Array Format allows leaving out the closing bracket.
    unclosed = read_bytes(tmp_path, json.dumps(events)[:-1] + ",\n", "u.json")
    assert rows(as_object) == rows(as_array) == rows(unclosed)
    assert unclosed.warnings == [] and unclosed.skipped == {}


def test_display_time_unit_ns_keeps_ts_in_microseconds(tmp_path: Path) -> None:
    trace = read_bytes(tmp_path, doc([X("a", 1.5, 0.25), X("b", 2, 1)], displayTimeUnit="ns"))
    assert rows(trace) == [("a", 0, 250_000), ("b", 500_000, 1_000_000)]
    assert trace.metadata["displayTimeUnit"] == "ns"


def test_epoch_timestamps_keep_nanoseconds_exactly(tmp_path: Path) -> None:
    text = (
        '{"traceEvents": ['
        '{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1712195495519689.047, "dur": 0.001},'
        '{"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 1712195495519689.048, "dur": 63.813},'
        '{"ph": "X", "name": "c", "pid": 1, "tid": 1, "ts": 1712195495519690.0000015, "dur": 1e-3}'
        "]}"
    )
    trace = read_bytes(tmp_path, text)
    assert rows(trace) == [("a", 0, 1000), ("b", 1000, 63_813_000), ("c", 953_002, 1000)]
    assert trace.clock_origin_ns == 1712195495519689047


def test_base_time_nanoseconds_sets_the_clock_origin(tmp_path: Path) -> None:
    trace = read_bytes(tmp_path, doc([X("a", 1000.5, 1)], baseTimeNanoseconds=1_700_000_000_000_000_000))
    assert trace.clock_origin_ns == 1_700_000_000_000_000_000 + 1_000_500
    relative = read_bytes(tmp_path, doc([X("a", 1000.5, 1)]), "relative.json")
    assert relative.clock_origin_ns is None


def test_keys_after_the_events_array_are_read(tmp_path: Path) -> None:
    text = '{"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 5, "dur": 1}], "baseTimeNanoseconds": 1000, "displayTimeUnit": "ms"}'
    trace = read_bytes(tmp_path, text)
    assert trace.metadata["baseTimeNanoseconds"] == 1000 and trace.metadata["displayTimeUnit"] == "ms"
    assert trace.clock_origin_ns == 1000 + 5000


def test_concatenated_gzip_members(tmp_path: Path) -> None:
    text = doc(MANY).encode()
    half = len(text) // 2
    packed = gzip.compress(text[:half]) + gzip.compress(text[half:])
    trace = read_bytes(tmp_path, packed, "trace.json.gz")
    assert trace.num_events == len(MANY) and trace.warnings == []


def test_false_boundaries_inside_strings_and_nested_args(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chrome_scan, "WINDOW_BYTES", 200)
    monkeypatch.setattr(chrome_scan, "MIN_WINDOW_BYTES", 64)
    events = [
        X('tricky}, {"ph": "X"', 1, 1, args={"groups": [{"a": 1}, {"b": [{"c": "}, {"}]}]}),
        X("plain", 2, 1, args={"s": "]}, {"}),
    ] * 10
    trace = read_bytes(tmp_path, doc(events))
    assert trace.num_events == 20 and trace.skipped == {} and trace.warnings == []
    assert json.loads(trace.args_json(find_first(trace, "plain"))) == {"s": "]}, {"}


def find_first(trace: Any, name: str) -> int:
    return next(i for i, n in enumerate(trace.ev_name.tolist()) if trace.strings[n] == name)


@pytest.mark.parametrize("window", [512, 5000])
def test_small_windows_read_a_real_trace_identically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    path = DATA / "bert_small.pt.trace.json.gz"
    reference = chrome_json.read(str(path), fsspec.filesystem("file"))
    monkeypatch.setattr(chrome_scan, "WINDOW_BYTES", window)
    monkeypatch.setattr(chrome_scan, "MIN_WINDOW_BYTES", 128)
    small = chrome_json.read(str(path), fsspec.filesystem("file"))
    assert rows(small) == rows(reference)
    assert small.flow_src.shape == reference.flow_src.shape
    assert small.metadata == reference.metadata and small.skipped == reference.skipped
    assert [small.args_json(i) for i in range(0, small.num_events, 37)] == [
        reference.args_json(i) for i in range(0, reference.num_events, 37)
    ]


def test_an_async_begin_without_a_category_pairs_with_an_end_whose_category_is_empty(tmp_path: Path) -> None:
    """A missing `cat` and `"cat": ""` are one async key (the collector keeps them apart, the
    parts read both as ""), and so is a pid written as text."""
    events = [
        {"ph": "b", "name": "req", "id": 1, "pid": 1, "tid": 1, "ts": 10},
        {"ph": "e", "name": "req", "cat": "", "id": 1, "pid": "1", "tid": 1, "ts": 25},
        {"ph": "X", "name": "work", "pid": 1, "tid": 1, "ts": 0, "dur": 40},
    ]
    trace = read_bytes(tmp_path, doc(events))
    req = find(trace, "req")
    assert int(trace.ev_dur_ps[req]) == 15_000_000
    assert [t.name for t in trace.tracks if t.kind == "async"] == ["req"]
    assert trace.skipped == {} and not any("no matching end" in w for w in trace.warnings)
