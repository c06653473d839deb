"""Each misreading of issue 39 fixed by its cause: the device figures of a capture without steps
take the device's active region and say so; graph captures and graph launches are said; launch
delays leave out synchronous calls and negative delays with their counts; a CPU-only capture reads
"not observed" for kernel launch / runtime; device work counts in the step that launched it.

Real captures where one shows the problem; the graph traces are hand-made (no capture in
tests/data or the shared corpus holds a CUDA/HIP graph call)."""

from __future__ import annotations

import decimal
import gzip
import json

import pytest

from profscope.analysis import breakdown, events, launch_delay
from profscope.analysis.results import HostInput, Options
from profscope.answers import UNSET
from profscope.engine.lod import index as lod
from profscope.formats import registry
from profscope.model.columns import TraceBuilder
from profscope.tools.overview import analysis
from tests.support.overview import A100, CPU_ONLY, RANK0, V100_NS, host_result, overview, raw_kineto

US = 1_000_000  # ps
DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}
DEVICE_PARTS = breakdown.DEVICE_CATEGORIES


def _union_us(intervals: list[tuple[decimal.Decimal, decimal.Decimal]]) -> decimal.Decimal:
    total, reach = decimal.Decimal(0), decimal.Decimal("-Infinity")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


# -- (a) the device figures' window without steps ---------------------------------------------------------
def test_without_steps_the_device_figures_take_the_device_active_region() -> None:
    # alexnet on an A100: no step markers, a 43.4 s capture in which the GPU works 66 ms, all of it
    # in the last 12.9 s; read over the capture the device was "99.85 % idle".
    device = [e for e in raw_kineto(A100) if e.get("cat") in DEVICE_CATEGORIES]
    first = min(e["ts"] for e in device)
    last = max(e["ts"] + e["dur"] for e in device)
    devices = host_result(A100).answer.devices
    assert devices.scope == "device active region"
    (gpu,) = devices.devices
    assert gpu.window_ns == pytest.approx((last - first) * 1000, abs=1)
    assert gpu.busy_fraction == pytest.approx(gpu.busy_ns / gpu.window_ns)
    assert devices.window_note.startswith("analysed 12.9 s of device activity out of a 43.4 s capture")


def test_with_steps_the_device_figures_keep_the_steady_steps() -> None:
    devices = host_result(V100_NS).answer.devices
    assert devices.scope.startswith("steady steps") and devices.window_note is UNSET


# -- (b) graph captures and graph launches (hand-made: no real trace holds one) -----------------------------
def _graph_trace(api: str, launched: bool) -> events.HostEvents:
    """One thread: a stream capture recording 3 kernel launches (no kernel runs for them), then, when
    `launched`, 2 graph launches running 3 kernels each, and one plain launch of one kernel."""
    b = TraceBuilder("graphs", registry.CHROME_TRACE)
    thread = b.track(b.section("python (pid 1)", "cpu"), "thread 1", "thread")
    stream = b.track(b.section("GPU 0", "gpu"), "stream 7", "stream")
    cat = {c: b.intern(c) for c in ("cuda_runtime", "kernel")}

    def add(track, name, start_us, end_us, category):
        start, end = round(start_us * US), round(end_us * US)
        return b.add_event(track, start, end - start, b.intern(name), cat[category])

    add(thread, f"{api}StreamBeginCapture", 0, 1, "cuda_runtime")
    for k in range(3):
        add(thread, f"{api}LaunchKernel", 2 + 2 * k, 3 + 2 * k, "cuda_runtime")
    add(thread, f"{api}StreamEndCapture", 8, 9, "cuda_runtime")
    add(thread, f"{api}GraphInstantiate", 10, 12, "cuda_runtime")
    if launched:
        for at in (20, 40):
            graph = add(thread, f"{api}GraphLaunch", at, at + 2, "cuda_runtime")
            for k in range(3):
                b.add_flow(graph, add(stream, f"graph kernel {k}", at + 3 + 4 * k, at + 6 + 4 * k, "kernel"))
        plain = add(thread, f"{api}LaunchKernel", 60, 61, "cuda_runtime")
        b.add_flow(plain, add(stream, "plain kernel", 63, 64, "kernel"))
    trace = b.finalize()
    return events.build("graphs", trace, lod.build(trace).self_ps)


@pytest.mark.parametrize("api", ["cuda", "hip"])
def test_graph_captures_and_launches_are_said_and_left_out_of_the_launch_delay(api: str) -> None:
    devices = analysis.answer("t", [HostInput(_graph_trace(api, True), 0, 0)], Options()).per_host[0].devices
    assert devices.graph_note == (
        f"3 launch calls in 1 stream capture ({api}StreamBeginCapture) were recorded into a graph, not "
        f"executed: no device event ran for them; 6 device events ran through 2 graph launches "
        f"({api}GraphLaunch): one call runs the whole graph, so their launch delays are left out"
    )
    (graph,) = devices.launch_excluded
    assert (graph.kind, graph.count) == ("graph", 6)
    assert devices.launch_delay.count == 1 and devices.launch_delay.median_ns == pytest.approx(2000)


def test_a_capture_without_graph_launch_is_not_read_as_a_cpu_only_run() -> None:
    devices = (
        analysis.answer("t", [HostInput(_graph_trace("cuda", False), 0, 0)], Options()).per_host[0].devices
    )
    assert not devices.observed
    assert "were recorded into a graph, not executed" in devices.reason
    assert devices.reason.endswith(
        "the trace holds no graph launch: the captured work did not run in this capture"
    )


# -- (c) launch-delay outliers explained ------------------------------------------------------------------
def test_launch_delay_leaves_out_synchronous_calls_and_negative_delays_with_their_counts() -> None:
    # rank-0 of the sampled multi-rank job: 10 device events end before their launch call returns
    # (cudaMemcpyAsync to pageable memory waits), 77 start before it returns.
    result = host_result(RANK0)
    devices = result.answer.devices
    by_kind = {x.kind: x for x in devices.launch_excluded}
    assert {k: x.count for k, x in by_kind.items()} == {"synchronous": 10, "negative": 77}
    assert devices.launch_delay.count + 10 + 77 == result.launches.device.shape[0]
    assert devices.launch_delay.min_ns >= 0
    assert all(b.lo_ns >= 0 for b in devices.launch_delay.histogram)
    negative = result.launches.delay_ps[result.launches.excluded == launch_delay.NEGATIVE]
    assert by_kind["negative"].max_ns == pytest.approx(-negative.min() / 1e3)
    assert (
        by_kind["synchronous"].text
        == "10 launches excluded: synchronous calls (the call waited for the device)"
    )
    assert by_kind["negative"].text.startswith(
        "77 launches excluded: negative, the device started up to 9 µs"
    )


# -- (d) kernel launch / runtime on a CPU-only capture ------------------------------------------------------
def test_a_cpu_only_capture_reads_runtime_not_observed() -> None:
    assert not any(e.get("cat") in ("cuda_runtime", "cuda_driver") for e in raw_kineto(CPU_ONLY))
    answer = overview(CPU_ONLY)
    runtime = answer.categories[breakdown.CATEGORY_IDS.index("runtime")]
    assert not runtime.observed and runtime.reason == breakdown.NO_RUNTIME
    host = answer.per_host[0]
    assert "runtime" not in host.capture.parts
    assert all("runtime" not in row.parts for row in host.steps.rows)


# -- (e) device work counted by the step of its launch ---------------------------------------------------
def test_device_work_counts_in_the_step_that_launched_it() -> None:
    # The V100 job's device lags its host: step 101 launches 94.6 ms of device work in a 35 ms window,
    # which ran on under steps 102–103; capped windows counted it there. Times read exactly (the JSON's
    # absolute µs, 1.7e15, hold only a quarter µs as doubles).
    with gzip.open(V100_NS, "rt") as f:
        raw = json.load(f, parse_float=decimal.Decimal)["traceEvents"]
    markers = sorted(e["ts"] for e in raw if str(e.get("name", "")).startswith("ProfilerStep#"))
    launch_at = {e["args"]["correlation"]: e["ts"] for e in raw if e.get("cat") == "cuda_runtime"}
    device = [
        e for e in raw if e.get("cat") in DEVICE_CATEGORIES and e["args"].get("correlation") in launch_at
    ]
    rows = host_result(V100_NS).answer.steps.rows
    shift_us = markers[0] - decimal.Decimal(rows[0].start_ns) / 1000  # the reader's zero
    for row in rows:
        lo = decimal.Decimal(row.start_ns) / 1000 + shift_us
        hi = decimal.Decimal(row.end_ns) / 1000 + shift_us
        mine = [
            (e["ts"], e["ts"] + e["dur"]) for e in device if lo <= launch_at[e["args"]["correlation"]] < hi
        ]
        assert row.launched_device_ns == pytest.approx(float(_union_us(mine)) * 1000, abs=1)
        inside = [(max(a, lo), min(b, hi)) for a, b in mine if b > lo and a < hi]
        device_parts = sum(v for c, v in row.parts.items() if c in DEVICE_PARTS)
        assert device_parts == pytest.approx(float(_union_us(inside)) * 1000, abs=1)
    assert rows[0].launched_device_ns == pytest.approx(94.57e6, rel=1e-3)
    assert rows[1].wall_ns < rows[0].launched_device_ns
