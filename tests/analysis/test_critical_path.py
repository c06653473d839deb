"""The critical path (`analysis/critical_path.py`) against HolisticTraceAnalysis' own answers.

`simple_add`: HTA's overlaid output of the whole trace (tests/data/hta_critical_path) marks the
events on the path and draws its dependency, launch and sync edges; profscope's path has the same
events and the same edges, with the same weights, in the same order. The one documented difference
(docs/OVERVIEW.md "Critical path"): HTA writes the start of a sync flow leaving a device event's end
up to 1 µs early (`HTA_FLOW_SLACK_US`). HTA's own test of one `measure|forward` window states 159
events and 315 nodes on the path, which profscope's path of that window has too. The event-sync
traces: HTA's test asks for device → host sync edges and (multi-stream) a device → device one."""

from __future__ import annotations

import collections
import gzip
import json
import shutil
import time

import numpy as np
import pytest

from profscope.analysis import critical_path as cp
from tests.support import DATA_DIR
from tests.support.overview import host_events

INPUTS = DATA_DIR / "hta/inputs"
HTA_OUTPUT = DATA_DIR / "hta_critical_path/simple_add.hta_overlaid_critical_path.json.gz"
HTA_FLOW_SLACK_US = 1
PS_PER_US = 1_000_000
HTA_KINDS = {cp.DEPENDENCY: "dependency", cp.LAUNCH: "kernel_launch_delay", cp.SYNC: "sync_dependency"}
MEASURE = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"


def _whole(name: str) -> tuple[object, cp.CriticalPath]:
    events = host_events(INPUTS / f"{name}.pt.trace.json.gz")
    trace = events.trace
    end = int((trace.ev_start_ps + trace.ev_dur_ps).max())
    return events, cp.find(events, int(trace.ev_start_ps.min()), end)


def _hta_output() -> tuple[set, list]:
    with gzip.open(HTA_OUTPUT) as f:
        records = json.load(f)["traceEvents"]
    critical = {
        (r["ts"], r["dur"], r["name"])
        for r in records
        if r["ph"] == "X" and r.get("args", {}).get("critical")
    }
    flows: dict[int, dict] = collections.defaultdict(dict)
    for r in records:
        if r.get("cat") == "critical_path":
            flows[r["id"]][r["ph"]] = r
    edges = sorted(
        (
            f["s"]["ts"],
            f["f"]["ts"],
            f["s"]["args"]["type"].removeprefix("critical_path_"),
            f["s"]["args"]["weight"],
        )
        for f in flows.values()
    )
    return critical, edges


def _origin_us() -> int:
    with gzip.open(INPUTS / "simple_add.pt.trace.json.gz") as f:
        return min(r["ts"] for r in json.load(f)["traceEvents"] if r.get("ph") == "X")


def test_simple_add_path_is_htas() -> None:
    events, path = _whole("simple_add")
    trace = events.trace
    origin = _origin_us() - int(trace.ev_start_ps.min()) // PS_PER_US

    def us(ps: int) -> int:
        return round(ps / PS_PER_US) + origin

    def node_us(event: int, is_end: bool) -> int:
        return us(int(trace.ev_start_ps[event] + (trace.ev_dur_ps[event] if is_end else 0)))

    critical, hta_edges = _hta_output()
    ours = {
        (us(trace.ev_start_ps[i]), round(trace.ev_dur_ps[i] / PS_PER_US), trace.strings[trace.ev_name[i]])
        for i in path.events
    }
    assert len(path.events) == len(ours) == len(critical) == 624
    assert ours == critical
    drawn = [e for e in path.edges if e.kind in HTA_KINDS]
    our_edges = sorted(
        (
            node_us(e.src_event, e.src_is_end),
            node_us(e.dst_event, e.dst_is_end),
            HTA_KINDS[e.kind],
            e.weight_ps // PS_PER_US,
        )
        for e in drawn
    )
    assert len(our_edges) == len(hta_edges) == 192
    for hta, own in zip(hta_edges, our_edges):
        assert hta[2:] == own[2:]
        assert abs(hta[0] - own[0]) <= HTA_FLOW_SLACK_US and hta[1] == own[1]
    early = sum(h[0] != o[0] for h, o in zip(hta_edges, our_edges))
    assert early == 17  # the sync flows leaving a device event's end
    # The path in order: every edge leaves the node the previous one reached, forward in time.
    for before, after in zip(path.edges, path.edges[1:]):
        assert (before.dst_event, before.dst_is_end) == (after.src_event, after.src_is_end)
    assert path.total_ps == sum(e.weight_ps for e in path.edges) == 41_435_012 * PS_PER_US
    assert sum(v for k, v in path.by_cause_ps.items() if k != "idle") == path.total_ps


def test_measure_window_matches_htas_counts() -> None:
    events = host_events(INPUTS / "simple_add.pt.trace.json.gz")
    trace = events.trace
    marks = np.flatnonzero(np.array(trace.strings)[trace.ev_name] == MEASURE)
    second = marks[np.argsort(trace.ev_start_ps[marks])][1]
    start = int(trace.ev_start_ps[second])
    path = cp.find(events, start, start + int(trace.ev_dur_ps[second]))
    assert len(path.events) == 159
    assert len(path.edges) + 1 == 315
    assert path.by_cause_ps["cpu"] > path.by_cause_ps["compute"] > 0


@pytest.mark.parametrize("name", ["event_sync", "event_sync_multi_stream"])
def test_sync_edges(name: str) -> None:
    events = host_events(INPUTS / f"{name}.pt.trace.json.gz")
    trace = events.trace
    graph, _ = cp.build(
        events, int(trace.ev_start_ps.min()), int((trace.ev_start_ps + trace.ev_dur_ps).max())
    )
    syncs = [
        (src >> 1, dst >> 1, w)
        for dst, into in graph.into.items()
        for src, kind, w in into
        if kind == cp.SYNC
    ]
    assert syncs and all(w == 0 for _, _, w in syncs)
    on_device = events.device_track[trace.ev_track]
    to_host = {trace.strings[trace.ev_name[d]] for s, d, _ in syncs if on_device[s] and not on_device[d]}
    assert {"cudaDeviceSynchronize", "cudaEventQuery"} <= to_host
    device_to_device = [(s, d) for s, d, _ in syncs if on_device[s] and on_device[d]]
    assert len(device_to_device) == (1 if name == "event_sync_multi_stream" else 0)


def test_event_sync_path_waits_through_the_kernel() -> None:
    events, path = _whole("event_sync")
    names = [events.trace.strings[events.trace.ev_name[i]] for i in path.events]
    assert names.index("at::cuda::(anonymous namespace)::spin_kernel(long)") < names.index(
        "cudaEventSynchronize"
    )
    assert path.by_cause_ps["launch"] > 0 and path.by_cause_ps["compute"] > 0


def test_the_trace_route_answers_a_steps_path(plugin_client, tmp_path) -> None:
    """`trace/critical_path` (tools/trace/routes.py) on the bert H100 trace: ids, tracks and
    times as the trace routes give them, the step asked for or the one holding `at`."""
    logdir = tmp_path / "logdir"
    shutil.copytree(DATA_DIR / "trace/logdir", logdir)
    _, client = plugin_client(logdir)
    subject = "run=bert&session=pytorch&host=bert_small"
    base = "/data/plugin/profscope/trace"
    deadline = time.monotonic() + 120
    while (res := client.get(f"{base}/critical_path?{subject}")).status_code == 202:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert res.status_code == 200, res.get_data(as_text=True)
    (host,) = res.get_json()["hosts"]
    assert host["host"] == "bert_small" and host["step"] is not None and host["events"]
    assert host["total_ns"] == pytest.approx(sum(e["weight_ns"] for e in host["edges"]))
    assert host["start_ns"] <= host["edges"][0]["src_ns"] <= host["edges"][-1]["dst_ns"]
    first = host["events"][0]
    event = client.get(f"{base}/event?{subject}&id={first['id']}").get_json()
    assert event["start_ns"] == pytest.approx(first["start_ns"]) == pytest.approx(host["edges"][0]["src_ns"])
    assert event["track"] == first["track"]
    middle = (host["start_ns"] + host["end_ns"]) / 2
    again = client.get(f"{base}/critical_path?{subject}&at={middle}").get_json()["hosts"][0]
    assert again["step"] == host["step"]
    assert client.get(f"{base}/critical_path?{subject}&step=999999").status_code == 404
