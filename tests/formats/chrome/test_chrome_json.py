"""The Chrome / Kineto reader on real PyTorch profiler traces, checked against the source JSON.

Expectations are computed here independently with the standard library (`json`, `gzip`, exact
`Decimal` times), never from the reader's own helpers.
"""

from __future__ import annotations

import collections
import gzip
import json
import re
import shutil
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

import fsspec
import numpy as np
import pytest

from profscope.errors import UnreadableProfile
from profscope.formats.chrome import helper as chrome_helper
from profscope.formats.chrome import reader as chrome_json
from profscope.formats.chrome import scan as chrome_scan
from profscope.formats.chrome import spill as chrome_spill
from profscope.model.spill import budget as spill_budget
from tests.support import DATA_DIR

pytestmark = pytest.mark.stack_independent

T = TypeVar("T")

DATA = DATA_DIR / "kineto"
TRACES = sorted(p.name for p in DATA.glob("*.json.gz"))
NS_TRACE = "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
OLD_TRACE = "worker0.1623143089861.pt.trace.json.gz"
BERT = "bert_small.pt.trace.json.gz"
GPU_CATS = {
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "gpu_user_annotation",
    "cuda_sync",
    "Kernel",
    "Memcpy",
    "Memset",
}


def source(name: str, exact: bool = True) -> dict[str, Any]:
    raw = gzip.decompress((DATA / name).read_bytes())
    doc = json.loads(raw, parse_float=Decimal) if exact else json.loads(raw)
    return doc if isinstance(doc, dict) else {"traceEvents": doc}


def read(path: str | Path) -> chrome_json.Trace:
    return chrome_json.read(str(path), fsspec.filesystem("file"))


@pytest.fixture(scope="module")
def traces() -> dict[str, Any]:
    return {name: read(DATA / name) for name in TRACES}


def ps(value: Any) -> int:
    return int(Decimal(value) * 1_000_000)


def zero_ps(doc: dict[str, Any]) -> int:
    low = min(ps(e["ts"]) for e in doc["traceEvents"] if e.get("ph") != "M" and "ts" in e)
    return low - low % 1000


def event_rows(trace: Any) -> list[tuple[str, int, int]]:
    names = [trace.strings[i] for i in trace.ev_name.tolist()]
    return sorted(zip(names, trace.ev_start_ps.tolist(), trace.ev_dur_ps.tolist()))


def expected_rows(doc: dict[str, Any]) -> list[tuple[str, int, int]]:
    zero = zero_ps(doc)
    rows = []
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            rows.append((e.get("name", ""), ps(e["ts"]) - zero, ps(e["dur"])))
        elif e["ph"] in ("i", "I", "R"):
            rows.append((e.get("name", ""), ps(e["ts"]) - zero, 0))
    return sorted(rows)


def index_of(trace: Any, name: str, start_ps: int) -> int:
    names = np.asarray(trace.strings, dtype=object)[trace.ev_name]
    hits = np.flatnonzero((names == name) & (trace.ev_start_ps == start_ps))
    assert hits.shape[0] == 1, (name, start_ps, hits)
    return int(hits[0])


@pytest.mark.parametrize("name", TRACES)
def test_every_complete_event_and_instant_is_loaded_with_exact_times(
    traces: dict[str, Any], name: str
) -> None:
    doc = source(name)
    trace = traces[name]
    by_phase = collections.Counter(e["ph"] for e in doc["traceEvents"])
    assert trace.num_events == by_phase["X"] + by_phase["i"] + by_phase["I"] + by_phase["R"]
    assert event_rows(trace) == expected_rows(doc)
    assert trace.skipped.keys() <= {"flow with a single endpoint"}


@pytest.mark.parametrize("name", TRACES)
def test_phase_counts_match_the_source(traces: dict[str, Any], name: str) -> None:
    by_phase = collections.Counter(e["ph"] for e in source(name)["traceEvents"])
    assert traces[name].metadata["reader"]["events_by_phase"] == dict(by_phase)


@pytest.mark.parametrize("name", TRACES)
def test_device_work_runs_on_gpu_streams_and_host_work_on_threads(traces: dict[str, Any], name: str) -> None:
    trace = traces[name]
    cats = np.asarray(trace.strings, dtype=object)[trace.ev_cat]
    track_kind = np.array([trace.tracks[t].kind for t in trace.ev_track.tolist()])
    section_kind = np.array([trace.sections[trace.tracks[t].section].kind for t in trace.ev_track.tolist()])
    device = np.isin(cats, list(GPU_CATS))
    host = np.isin(cats, ["cpu_op", "cuda_runtime", "cuda_driver", "Operator", "Runtime", "user_annotation"])
    assert (track_kind[device] == "stream").all() and (section_kind[device] == "gpu").all()
    assert (track_kind[host] == "thread").all() and (section_kind[host] == "cpu").all()


def test_gpu_streams_sit_in_a_section_per_gpu_and_threads_keep_their_names(traces: dict[str, Any]) -> None:
    trace = traces[NS_TRACE]
    sections = {s.name: s for s in trace.sections}
    gpu = sections["GPU 0 (Tesla V100-SXM2-32GB)"]
    assert gpu.kind == "gpu"
    host = sections["penv#native-main#platform-runtime#python#py_version_3_10 (pid 1102)"]
    assert host.kind == "cpu" and host.sort_index < gpu.sort_index
    tracks = {(t.section, t.name): t for t in trace.tracks}
    stream = tracks[(gpu.id, "stream 7 (annotations, kernels, memcpy, memset)")]
    assert stream.kind == "stream"
    # thread_name metadata names the host threads; the later of two names for one tid wins.
    assert tracks[(host.id, "thread 1102 (pt_main_thread)")].kind == "thread"
    assert tracks[(host.id, "thread 1262 (pt_autograd_0)")].kind == "thread"


def test_old_kineto_format_string_tids_and_stream_names(traces: dict[str, Any]) -> None:
    trace = traces[OLD_TRACE]
    doc = source(OLD_TRACE)
    sections = {s.name: s for s in trace.sections}
    gpu = sections["GPU 0 (Tesla V100-DGXS-32GB)"]
    host = sections["python (pid 25738)"]
    names = {(t.section, t.name) for t in trace.tracks}
    assert (gpu.id, "stream 7 (kernels, memcpy, memset)") in names
    # X events carry tid "25738" (a string) and [memory] instants tid 25738: one thread.
    main = [t for t in trace.tracks if t.section == host.id and t.name == "thread 25738 (python)"]
    assert len(main) == 1
    on_main = sum(
        1
        for e in doc["traceEvents"]
        if e["ph"] in ("X", "i") and str(e.get("tid")) == "25738" and e.get("pid") == 25738
    )
    assert int((trace.ev_track == main[0].id).sum()) == on_main


def launch_pairs(doc: dict[str, Any]) -> set[tuple[str, int, str, int]]:
    """(host name, host start, device name, device start) for every device event whose correlation
    id matches a host event; with several host events on one id, the latest-starting one."""
    zero = zero_ps(doc)
    gpu_pids = {
        e["pid"]
        for e in doc["traceEvents"]
        if e["ph"] == "M"
        and e["name"] == "process_labels"
        and str(e["args"].get("labels", "")).startswith("GPU")
    }
    host: dict[int, tuple[int, str]] = {}
    device = []
    for e in doc["traceEvents"]:
        corr = e.get("args", {}).get("correlation") if e["ph"] == "X" else None
        if corr is None:
            continue
        if e["pid"] in gpu_pids:
            device.append((corr, e["name"], ps(e["ts"]) - zero))
        elif corr not in host or host[corr][0] < ps(e["ts"]) - zero:
            host[corr] = (ps(e["ts"]) - zero, e["name"])
    return {(host[c][1], host[c][0], n, t) for c, n, t in device if c in host}


def flow_rows(trace: Any, name: str) -> set[tuple[str, int, str, int]]:
    strings = trace.strings
    rows = set()
    for s, d, n in zip(trace.flow_src.tolist(), trace.flow_dst.tolist(), trace.flow_name.tolist()):
        if strings[n] == name:
            rows.add(
                (
                    strings[trace.ev_name[s]],
                    int(trace.ev_start_ps[s]),
                    strings[trace.ev_name[d]],
                    int(trace.ev_start_ps[d]),
                )
            )
    return rows


@pytest.mark.parametrize("name", TRACES)
def test_host_launches_link_to_their_device_work_through_correlation_ids(
    traces: dict[str, Any], name: str
) -> None:
    expected = launch_pairs(source(name))
    trace = traces[name]
    assert flow_rows(trace, "launch") == expected
    assert trace.metadata["reader"]["launch_flows_from_correlation"] == len(expected)
    # Kineto's own launch flow events (ac2g, or async/launch in 2021 traces) are not kept on top.
    names = collections.Counter(trace.strings[n] for n in trace.flow_name.tolist())
    assert names["launch"] == len(expected) and names["ac2g"] == 0


@pytest.mark.parametrize("name", TRACES)
def test_host_annotations_link_to_device_annotations_through_external_ids(
    traces: dict[str, Any], name: str
) -> None:
    doc = source(name)
    zero = zero_ps(doc)
    host = {
        e["args"]["External id"]: (e["name"], ps(e["ts"]) - zero)
        for e in doc["traceEvents"]
        if e["ph"] == "X" and e.get("cat") == "user_annotation" and "External id" in e.get("args", {})
    }
    expected = {
        (*host[e["args"]["External id"]], e["name"], ps(e["ts"]) - zero)
        for e in doc["traceEvents"]
        if e["ph"] == "X" and e.get("cat") == "gpu_user_annotation" and e["args"].get("External id") in host
    }
    assert flow_rows(traces[name], "annotation") == expected
    assert traces[name].metadata["reader"]["annotation_flows_from_external_id"] == len(expected)
    if name == BERT:
        assert {(h, d) for h, _, d, _ in expected} == {("ProfilerStep#6", "ProfilerStep#6")}


def test_cuda_launch_kernel_args_and_its_kernel(traces: dict[str, Any]) -> None:
    doc, plain = source(NS_TRACE), source(NS_TRACE, exact=False)
    trace = traces[NS_TRACE]
    zero = zero_ps(doc)
    k = next(i for i, e in enumerate(doc["traceEvents"]) if e.get("name") == "cudaLaunchKernel")
    launch = doc["traceEvents"][k]
    corr = launch["args"]["correlation"]
    kernel = next(
        e for e in doc["traceEvents"] if e.get("cat") == "kernel" and e["args"].get("correlation") == corr
    )
    src = index_of(trace, "cudaLaunchKernel", ps(launch["ts"]) - zero)
    dst = index_of(trace, kernel["name"], ps(kernel["ts"]) - zero)
    assert json.loads(trace.args_json(src)) == plain["traceEvents"][k]["args"]
    kernel_args = json.loads(trace.args_json(dst))
    assert kernel_args["correlation"] == corr and kernel_args["stream"] == 7
    links = {(s, d) for s, d in zip(trace.flow_src.tolist(), trace.flow_dst.tolist())}
    assert (src, dst) in links
    assert trace.ev_dur_ps[dst] == ps(kernel["dur"])


def test_forward_backward_flow_events_become_flows(traces: dict[str, Any]) -> None:
    doc = source(NS_TRACE)
    trace = traces[NS_TRACE]
    starts = collections.Counter(
        e["id"] for e in doc["traceEvents"] if e["ph"] == "s" and e["cat"] == "fwdbwd"
    )
    ends = collections.Counter(e["id"] for e in doc["traceEvents"] if e["ph"] == "f" and e["cat"] == "fwdbwd")
    pairs = sum(min(starts[i], ends[i]) for i in starts)
    linked = sum(1 for n in trace.flow_name.tolist() if trace.strings[n] == "fwdbwd")
    assert pairs == 905 and linked == pairs - trace.skipped.get("flow endpoint with no slice to bind to", 0)
    assert linked > 800


def test_profiler_steps_are_listed(traces: dict[str, Any]) -> None:
    doc = source(BERT)
    trace = traces[BERT]
    zero = zero_ps(doc)
    expected = sorted(
        (ps(e["ts"]) - zero, e["name"], ps(e["dur"]))
        for e in doc["traceEvents"]
        if e["ph"] == "X" and e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
    )
    assert [s[1] for s in expected] == ["ProfilerStep#6"]
    steps = trace.metadata["reader"]["profiler_steps"]
    assert [(s["start_ps"], s["name"], s["dur_ps"]) for s in steps] == expected
    index_of(trace, "ProfilerStep#6", expected[0][0])


@pytest.mark.parametrize("name", TRACES)
def test_top_level_keys_are_kept_in_metadata(traces: dict[str, Any], name: str) -> None:
    doc = source(name, exact=False)
    meta = traces[name].metadata
    for key, value in doc.items():
        if key != "traceEvents":
            assert meta[key] == value, key
    if "deviceProperties" in doc:
        assert meta["deviceProperties"] == doc["deviceProperties"]


def test_display_time_unit_ns_does_not_change_the_unit_of_ts(traces: dict[str, Any]) -> None:
    doc = source(NS_TRACE)
    assert doc["displayTimeUnit"] == "ns"
    trace = traces[NS_TRACE]
    assert trace.metadata["displayTimeUnit"] == "ns"
    # ts stay µs: the trace spans about 0.6 s, not 0.6 ms.
    start, end = trace.time_span_ps()
    assert 0.5e12 < end - start < 0.7e12


def test_clock_origin_from_epoch_ts_and_from_base_time(traces: dict[str, Any]) -> None:
    ns_doc = source(NS_TRACE)
    assert traces[NS_TRACE].clock_origin_ns == zero_ps(ns_doc) // 1000
    bert = source(BERT)
    assert traces[BERT].clock_origin_ns == bert["baseTimeNanoseconds"] + zero_ps(bert) // 1000
    # ns-resolution epoch µs text survives exactly: 1712195495406752.797 µs.
    assert traces[NS_TRACE].clock_origin_ns == 1712195495406752797
    assert traces[NS_TRACE].metadata["reader"]["time_zero_us"] == "1712195495406752.797"


def plain_copy(tmp_path: Path, name: str) -> Path:
    plain = tmp_path / name.removesuffix(".gz")
    with gzip.open(DATA / name) as src, open(plain, "wb") as out:
        shutil.copyfileobj(src, out)
    return plain


def spy_results(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record whether the helper's half is joined into the trace."""
    used: list[bool] = []
    original = chrome_helper.HelperProcess.result

    def result(self: Any) -> Any:
        used.append(True)
        return original(self)

    monkeypatch.setattr(chrome_helper.HelperProcess, "result", result)
    return used


def assert_a_helper_gives_the_one_process_trace(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    helpers_from: Callable[[pytest.MonkeyPatch], T] = lambda _: None,
) -> T:
    """`name` read in one process, then with a helper process (set up by `helpers_from`, whose
    answer is returned): the helper's half is joined, and the traces are the same."""
    plain = plain_copy(tmp_path, name)
    sequential = read(plain)
    monkeypatch.setattr(chrome_json, "PARALLEL_MIN_BYTES", 0)
    helpers = helpers_from(monkeypatch)
    used = spy_results(monkeypatch)
    parallel = read(plain)
    assert used == [True]  # the helper's half was joined
    assert_same_trace(parallel, sequential)
    return helpers


@pytest.mark.parametrize("name", [NS_TRACE, OLD_TRACE])
def test_second_process_gives_the_same_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    assert_a_helper_gives_the_one_process_trace(tmp_path, monkeypatch, name)


def read_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, events: list[dict[str, Any]]) -> Any:
    """`events` written as a file and read by one process and by two (a helper decoding the second
    half): both give the same trace; returns the one read by two."""
    plain = tmp_path / "trace.json"
    plain.write_text(json.dumps({"traceEvents": events}, indent=1))
    sequential = read(plain)
    monkeypatch.setattr(chrome_json, "PARALLEL_MIN_BYTES", 0)
    used = spy_results(monkeypatch)
    parallel = read(plain)
    assert used == [True]
    assert_same_trace(parallel, sequential)
    return parallel


def test_pairs_and_flows_across_the_split_offset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Flow, B/E and async halves on both sides of the split are still joined."""
    events: list[dict[str, Any]] = [
        {
            "ph": "X",
            "name": f"op{i}",
            "pid": 1,
            "tid": 1 + i % 2,
            "ts": i,
            "dur": 1,
            "args": {"pad": "x" * 60},
        }
        for i in range(4000)
    ]
    events[5:5] = [
        {"ph": "s", "id": 1, "cat": "c", "name": "across", "pid": 1, "tid": 1, "ts": 0},
        {"ph": "B", "name": "long", "pid": 1, "tid": 3, "ts": 10},
        {"ph": "b", "name": "req", "cat": "a", "id": 9, "pid": 1, "tid": 1, "ts": 20},
    ]
    events += [
        {"ph": "f", "id": 1, "cat": "c", "name": "across", "pid": 1, "tid": 2, "ts": 3999, "bp": "e"},
        {"ph": "E", "pid": 1, "tid": 3, "ts": 3990},
        {"ph": "e", "name": "req", "cat": "a", "id": 9, "pid": 1, "tid": 1, "ts": 3980},
    ]
    parallel = read_split(tmp_path, monkeypatch, events)
    assert flow_rows(parallel, "across") == {("op0", 0, "op3999", 3999_000_000)}
    assert ("long", 10_000_000, 3980_000_000) in event_rows(parallel)
    assert ("req", 20_000_000, 3960_000_000) in event_rows(parallel)
    assert parallel.skipped == {}


def test_an_async_track_is_named_by_the_first_event_of_its_id_on_either_side_of_the_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Track names come from the chunks of both processes in file order: an id first seen
    before the split keeps that event's name, one seen only after it gets its own first name."""
    events: list[dict[str, Any]] = [
        {"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1, "args": {"pad": "x" * 60}}
        for i in range(4000)
    ]
    nested = [("b", "outer", 100), ("b", "inner", 101), ("e", "inner", 102), ("e", "outer", 103)]
    events[5:5] = [
        {"ph": ph, "name": name, "cat": "a", "id": "early", "pid": 1, "tid": 1, "ts": ts}
        for ph, name, ts in nested[:2]
    ]
    events += [
        {"ph": ph, "name": name, "cat": "a", "id": "early", "pid": 1, "tid": 1, "ts": ts}
        for ph, name, ts in nested[2:]
    ]
    events += [
        {"ph": ph, "name": name.upper(), "cat": "a", "id": "late", "pid": 1, "tid": 1, "ts": ts + 3000}
        for ph, name, ts in nested
    ]
    parallel = read_split(tmp_path, monkeypatch, events)
    assert sorted(t.name for t in parallel.tracks if t.kind == "async") == ["OUTER", "outer"]


def test_a_split_that_is_not_an_event_boundary_is_detected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = plain_copy(tmp_path, NS_TRACE)
    sequential = read(plain)
    text = plain.read_bytes()
    inside = text.index(b'"args": {', len(text) // 2) + len(b'"args": ')  # an args object, not an event
    monkeypatch.setattr(chrome_json, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(chrome_helper, "split_offset", lambda source_fd, start, total: inside)
    used = spy_results(monkeypatch)
    assert_same_trace(read(plain), sequential)
    assert used == []  # the bad split was caught and this process read everything itself


def _threads_file(tmp_path: Path, tids: list[int]) -> Path:
    plain = tmp_path / "threads.json"
    events = [{"ph": "X", "name": "op", "pid": 1, "tid": t, "ts": i, "dur": 1} for i, t in enumerate(tids)]
    plain.write_text(json.dumps({"traceEvents": events}, indent=1))
    return plain


def _read_in_budget(plain: Path) -> Any:
    """`plain` read inside an ingest of a 1 MB budget: its limit is `MIN_TRACK_KEYS` track keys."""
    with spill_budget.use(spill_budget.IngestMemory(str(plain.parent), 1 << 20)):
        assert chrome_spill.track_key_limit() == chrome_spill.MIN_TRACK_KEYS
        return read(plain)


@pytest.mark.parametrize("helper", [False, True])
def test_more_track_keys_than_the_budget_holds_stop_the_read_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, helper: bool
) -> None:
    """Per-key memory is not spilled: past the budget's keys the ingest ends with a clear error
    instead of growing past its budget. With a helper, its own half past the limit ends the read
    (no fallback that would read that half again here), and two halves under the limit whose keys
    together pass it are stopped before the layout."""
    limit = chrome_spill.MIN_TRACK_KEYS
    monkeypatch.setattr(chrome_scan, "WINDOW_BYTES", 64 << 10)  # batches of a few hundred events here
    if helper:
        monkeypatch.setattr(chrome_json, "PARALLEL_MIN_BYTES", 0)
    used = spy_results(monkeypatch)
    fits = _threads_file(tmp_path, list(range(limit)))
    assert len(_read_in_budget(fits).tracks) == limit
    assert used == ([True] if helper else [])
    # The keys all at the end (a helper reads a quarter of a file this small, `split_offset`, in
    # batches of 512 KB: several here).
    shapes = [([0] * (12 * limit) + list(range(1, 4 * limit)), True)]
    if helper:  # three quarters on 3,000 threads, the last quarter on 3,000 others: found merging
        shapes.append((list(range(3000)) * 3 + list(range(3000, 6000)), False))
    for tids, while_decoding in shapes:
        used.clear()
        plain = _threads_file(tmp_path, tids)
        with pytest.raises(
            UnreadableProfile, match="distinct threads, counter series and async ids"
        ) as raised:
            _read_in_budget(plain)
        assert raised.value.path == str(plain) and "--profscope_ingest_memory_mb" in str(raised.value)
        assert f"more than {limit:,} tracks" in raised.value.reason
        stopped_at = int(
            re.search(r"([\d,]+) when the read stopped", raised.value.reason).group(1).replace(",", "")
        )
        assert limit < stopped_at <= len(set(tids))
        assert (stopped_at < len(set(tids))) == while_decoding  # not once every key was read
        assert used == ([True] if helper else [])
    assert "reading on in one process" not in caplog.text
    assert len(read(plain).tracks) == len(set(tids))  # outside an ingest: no budget to keep


def test_async_ids_with_tracks_of_their_own_count_against_the_budget(tmp_path: Path) -> None:
    """An async id with nested events gets a track like a thread; ids that are one slice each
    share their name's track and cost only what numbering them holds, about 80 bytes each: many
    times more of them are let through, but not without bound."""

    def asyncs(count: int, nested: bool) -> Path:
        events = []
        for i in range(count):
            events.append({"ph": "b", "name": "req", "cat": "c", "pid": 1, "tid": 1, "id": i, "ts": 10 * i})
            if nested:
                events.append(
                    {"ph": "b", "name": "in", "cat": "c", "pid": 1, "tid": 1, "id": i, "ts": 10 * i + 1}
                )
                events.append(
                    {"ph": "e", "name": "in", "cat": "c", "pid": 1, "tid": 1, "id": i, "ts": 10 * i + 2}
                )
            events.append(
                {"ph": "e", "name": "req", "cat": "c", "pid": 1, "tid": 1, "id": i, "ts": 10 * i + 5}
            )
        plain = tmp_path / f"async-{nested}.json"
        plain.write_text(json.dumps({"traceEvents": events}))
        return plain

    limit = chrome_spill.MIN_TRACK_KEYS
    assert _read_in_budget(asyncs(3 * limit, nested=False)).num_events == 3 * limit
    assert _read_in_budget(asyncs(limit - 10, nested=True)).num_events == 2 * (limit - 10)
    with pytest.raises(UnreadableProfile, match=f"more than {limit:,} tracks"):
        _read_in_budget(asyncs(limit + 10, nested=True))
    # What the budget leaves after the file's one interned key (the ids' scope: pid, category), at
    # 68 bytes plus twice the width of these 5-character ids per id.
    one_slice_limit = (limit - 1) * chrome_spill.TRACK_KEY_BYTES // (chrome_spill.ASYNC_ID_BYTES + 10)
    assert 12 * limit > one_slice_limit > 9 * limit
    assert _read_in_budget(asyncs(9 * limit, nested=False)).num_events == 9 * limit
    with pytest.raises(UnreadableProfile, match="distinct async ids") as raised:
        _read_in_budget(asyncs(12 * limit, nested=False))
    assert f"more than about {one_slice_limit:,} distinct async ids" in raised.value.reason
    assert "--profscope_ingest_memory_mb" in raised.value.reason


@pytest.mark.parametrize("width", [8, 300])
@pytest.mark.parametrize("helper", [False, True])
def test_more_distinct_names_than_the_budget_holds_stop_the_read(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    helper: bool,
    width: int,
) -> None:
    """A name per event (a request id in each) is kept per distinct text, about 0.2 KB each:
    names count against what the budget leaves after the tracks, plus `MIN_NAME_BYTES`. While a
    helper reads, each process may hold half; past it the helper stops and this process reads on
    alone, so a file opens or not as in one process."""
    monkeypatch.setattr(chrome_scan, "WINDOW_BYTES", 64 << 10)
    if helper:
        monkeypatch.setattr(chrome_json, "PARALLEL_MIN_BYTES", 0)

    def named(count: int, distinct: int | None = None, same_first: int = 0) -> Path:
        """`count` events, named by `i % distinct` after the first `same_first` (all one name, of
        the same width: the events' bytes go as their number)."""
        plain = tmp_path / f"names{count}_{distinct}_{same_first}.json"
        names = [
            "s" * width if i < same_first else f"r{i % (distinct or count):0{width - 1}d}"
            for i in range(count)
        ]
        events = [{"ph": "X", "name": n, "pid": 1, "tid": 1, "ts": i, "dur": 1} for i, n in enumerate(names)]
        plain.write_text(json.dumps({"traceEvents": events}, indent=1))
        return plain

    def fell_back() -> str:
        text = caplog.text
        caplog.clear()
        if "the helper's names past half the budget" in text:
            return "helper"
        return "reader" if "names past half the budget" in text else ""

    # Room: (4096 - 2 tracks) · 768 bytes + 1 MiB; each name 188 bytes + twice its width ("" is
    # a name too).
    room = (chrome_spill.MIN_TRACK_KEYS - 2) * chrome_spill.TRACK_KEY_BYTES + chrome_spill.MIN_NAME_BYTES
    fit = room // (chrome_spill.NAME_BYTES + 2 * width) - 10
    # The helper reads the last quarter of a file this small (`split_offset`): here the first three
    # quarters hold more than half the budget's names.
    assert _read_in_budget(named(fit)).num_events == fit
    assert fell_back() == ("reader" if helper else "")
    # The same names twice over: each half holds fewer than half the budget's.
    assert _read_in_budget(named(2 * fit, distinct=fit // 3)).num_events == 2 * fit
    assert fell_back() == ""
    # The names all in the last quarter: the helper holds more than half, this process reads on.
    tail = named(4 * (fit * 7 // 10), same_first=3 * (fit * 7 // 10))
    assert _read_in_budget(tail).num_events == 4 * (fit * 7 // 10)
    assert fell_back() == ("helper" if helper else "")
    # A fifth more than fit: stopped while decoding, in one process either way.
    too_many = fit * 6 // 5
    with pytest.raises(UnreadableProfile, match="more distinct event names and categories") as raised:
        _read_in_budget(named(too_many))
    assert "--profscope_ingest_memory_mb" in raised.value.reason
    stopped_at = int(re.search(r"hold \(([\d,]+) when", raised.value.reason).group(1).replace(",", ""))
    assert fit < stopped_at < too_many
    assert read(named(too_many)).num_events == too_many  # outside an ingest: no budget to keep


def test_names_that_fit_while_decoding_are_counted_again_once_the_async_tracks_are_known(
    tmp_path: Path,
) -> None:
    """Async ids with nested events become tracks only when the parts are merged: their tracks
    take room the names had while decoding, so the names are counted again then."""
    width, nested = 8, 100
    room = (chrome_spill.MIN_TRACK_KEYS - 2) * chrome_spill.TRACK_KEY_BYTES + chrome_spill.MIN_NAME_BYTES
    names = room // (chrome_spill.NAME_BYTES + 2 * width) - 10  # fits, with under 100 tracks' room to spare
    events: list[dict[str, Any]] = [
        {"ph": "X", "name": f"r{i:0{width - 1}d}", "pid": 1, "tid": 1, "ts": i, "dur": 1}
        for i in range(names)
    ]
    for i in range(nested):
        for ph, name, ts in (("b", "req", 0), ("b", "in", 1), ("e", "in", 2), ("e", "req", 3)):
            events.append(
                {"ph": ph, "name": name, "cat": "c", "pid": 1, "tid": 1, "id": i, "ts": 10 * i + ts}
            )
    plain = tmp_path / "names_and_ids.json"
    plain.write_text(json.dumps({"traceEvents": events}))
    with pytest.raises(UnreadableProfile, match="more distinct event names and categories") as raised:
        _read_in_budget(plain)
    stopped_at = int(re.search(r"hold \(([\d,]+) when", raised.value.reason).group(1).replace(",", ""))
    assert stopped_at >= names  # every name read: stopped at the merge, not while decoding
    assert read(plain).num_events == names + 2 * nested


def assert_a_failing_helper_falls_back_to_one_process(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    failure: str,
    helpers_from: Callable[[pytest.MonkeyPatch], T] = lambda _: None,
) -> T:
    """A helper (set up by `helpers_from`, whose answer is returned) that raises or dies: its
    result is asked for, fails, and this process reads on to the one-process trace."""
    plain = plain_copy(tmp_path, NS_TRACE)
    sequential = read(plain)
    monkeypatch.setattr(chrome_json, "PARALLEL_MIN_BYTES", 0)
    helpers = helpers_from(monkeypatch)
    original_start = chrome_helper.HelperProcess.start

    def start(self: Any, offset: int, bare: bool) -> None:
        if failure == "helper raises":  # a negative offset: the helper sends the exception back
            original_start(self, -1, bare)
        else:
            original_start(self, offset, bare)
            self._started.proc.kill()

    monkeypatch.setattr(chrome_helper.HelperProcess, "start", start)
    used = spy_results(monkeypatch)
    assert_same_trace(read(plain), sequential)
    assert used == [True]  # the helper's result was asked for, failed, and this process read on
    return helpers


@pytest.mark.parametrize("failure", ["helper raises", "helper dies"])
def test_a_failing_helper_falls_back_to_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    assert_a_failing_helper_falls_back_to_one_process(tmp_path, monkeypatch, failure)


def assert_same_trace(a: Any, b: Any) -> None:
    assert event_rows(a) == event_rows(b)
    assert flow_rows(a, "launch") == flow_rows(b, "launch")
    assert a.flow_src.shape == b.flow_src.shape
    assert [(s.name, s.kind) for s in a.sections] == [(s.name, s.kind) for s in b.sections]
    assert sorted((t.name, t.kind) for t in a.tracks) == sorted((t.name, t.kind) for t in b.tracks)
    assert a.metadata == b.metadata
    assert a.skipped == b.skipped and a.warnings == b.warnings
    assert a.clock_origin_ns == b.clock_origin_ns
    order_a = np.lexsort((a.ev_dur_ps, a.ev_start_ps))
    order_b = np.lexsort((b.ev_dur_ps, b.ev_start_ps))
    args_a = [json.loads(a.args_json(i) or b"{}") for i in order_a.tolist()[:2000]]
    args_b = [json.loads(b.args_json(i) or b"{}") for i in order_b.tolist()[:2000]]
    assert args_a == args_b


@pytest.mark.parametrize("compressed", [True, False])
def test_progress_reaches_the_file_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compressed: bool
) -> None:
    monkeypatch.setattr(chrome_json, "PROGRESS_STEP_BYTES", 1)
    path = DATA / OLD_TRACE if compressed else plain_copy(tmp_path, OLD_TRACE)
    seen: list[tuple[int, int]] = []
    trace = chrome_json.read(str(path), fsspec.filesystem("file"), progress=lambda d, t: seen.append((d, t)))
    size = path.stat().st_size
    assert trace.num_events > 0
    assert seen[-1] == (size, size)
    assert all(t == size for _, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    if not compressed:  # compressed bytes arrive in one read block here; plain ones window by window
        assert len([d for d, _ in seen if d < size]) > 3


def test_reads_through_any_fsspec_filesystem() -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe("/profiles/run1/bert.pt.trace.json.gz", (DATA / BERT).read_bytes())
    trace = chrome_json.read("/profiles/run1/bert.pt.trace.json.gz", fs)
    assert event_rows(trace) == expected_rows(source(BERT))


@pytest.mark.parametrize(
    ("speed", "lag", "share"), [(1, 0, 0.5), (1, 1800, 0.55), (0.5, 0, 1 / 3), (1, 10**9, 0.75)]
)
def test_the_split_lets_both_processes_finish_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, speed: float, lag: int, share: float
) -> None:
    """The reader's share of the events array: as fast as the helper at `MAIN_SPEED`, the helper
    `HELPER_LAG_BYTES` late, never less than a quarter for the helper; the split falls on the next
    event start."""
    event = b'{"ph":"X","ts":1},'  # 18 bytes
    text = b'{"traceEvents":[' + event * 1000 + b"]}"
    path = tmp_path / "t.json"
    path.write_bytes(text)
    events_start = text.index(b"[") + 1
    monkeypatch.setattr(chrome_helper, "MAIN_SPEED", speed)
    monkeypatch.setattr(chrome_helper, "HELPER_LAG_BYTES", lag)
    with open(path, "rb") as source:
        offset = chrome_helper.split_offset(source.fileno(), events_start, len(text))
    assert offset is not None and text[offset : offset + 1] == b"{"
    wanted = events_start + share * (len(text) - events_start)
    assert wanted - 1 <= offset < wanted + len(event)


def test_progress_polls_after_the_helper_finished_first(tmp_path: Path) -> None:
    """The helper sends its result and exits before this process asks for progress again: polling
    must neither read the closed pipe (EOFError failed whole ingests) nor lose the result."""
    plain = plain_copy(tmp_path, NS_TRACE)
    text = plain.read_bytes()
    events_start = text.index(b"[", text.index(b'"traceEvents"')) + 1
    with open(plain, "rb") as source:
        offset = chrome_helper.split_offset(source.fileno(), events_start, len(text))
        assert offset is not None
        helper = chrome_helper.HelperProcess(source.fileno())
        try:
            helper.start(offset, False)
            while helper._pending is None:
                helper.poll_progress()
            helper._started.proc.wait(timeout=60)  # the helper has exited: its pipe end is closed
            helper.poll_progress()
            tail = helper.result()
        finally:
            helper.stop()
    assert tail.collector is not None


def test_helper_columns_come_back_through_its_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helper writes its columns chunk by chunk; only ids, counts and chunk places come
    through the pipe."""
    plain = plain_copy(tmp_path, NS_TRACE)
    sequential = read(plain)
    monkeypatch.setattr(chrome_json, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(chrome_helper, "HELPER_LAG_BYTES", 0)  # the helper takes about half
    monkeypatch.setattr(chrome_spill, "CHUNK_BYTES", 256 << 10)
    tails: list[Any] = []
    original = chrome_helper.HelperProcess.result

    def result(self: Any) -> Any:
        tails.append(original(self))
        return tails[-1]

    monkeypatch.setattr(chrome_helper.HelperProcess, "result", result)
    assert_same_trace(read(plain), sequential)
    (tail,) = tails
    collector = tail.collector
    assert len(collector.chunks) > 3 and sum(ref.rows.get("ev", 0) for ref in collector.chunks) > 10_000
    assert collector.pending_bytes == 0 and not any(collector.ev.values()) and not collector.ev_args


def test_without_a_temporary_file_one_process_reads_into_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = plain_copy(tmp_path, NS_TRACE)
    sequential = read(plain)
    monkeypatch.setattr(chrome_json, "PARALLEL_MIN_BYTES", 0)

    def no_file(*args: Any, **kwargs: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(chrome_spill.tempfile, "TemporaryFile", no_file)
    used = spy_results(monkeypatch)
    assert_same_trace(read(plain), sequential)
    assert used == []  # no helper: it could not have written its columns anywhere


@pytest.mark.parametrize("memory", [False, True])
def test_spill_file_round_trip(memory: bool) -> None:
    spill = chrome_spill.SpillFile(memory=memory)
    columns = {
        "i": np.arange(5, dtype=np.int32),
        "s": np.array([b"7", b"12345678901234567890", b""]),
        "b": np.array([True, False]),
        "blob": [b'{"a": 1}', b"", b'{"b": 2}'],
        "empty": np.zeros(0, np.int64),
    }
    refs = [spill.write({"t": columns}, chrome_spill.ChunkRef()) for _ in range(2)]
    try:
        for ref in refs:
            back = spill.read(ref, "t", tuple(columns))
            assert back["i"].tolist() == [0, 1, 2, 3, 4] and back["i"].dtype == np.int32
            assert back["s"].tolist() == [b"7", b"12345678901234567890", b""]
            assert back["b"].tolist() == [True, False]
            assert back["blob"].tobytes() == b'{"a": 1}{"b": 2}'
            assert back["empty"].shape == (0,) and back["empty"].dtype == np.int64
    finally:
        spill.close()
