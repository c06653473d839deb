"""The breakdown adds up to wall time and follows its priorities; device figures (busy, idle split,
launch delay) on a hand-made trace; self + children = total; CPU-only captures read not observed."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from profscope import answers
from profscope.analysis import breakdown, events, intervals
from profscope.analysis.results import HostInput, Options
from profscope.answers import UNSET
from profscope.engine.lod import index as lod
from profscope.formats import registry
from profscope.model.columns import TraceBuilder
from profscope.tools.overview import analysis
from profscope.tools.overview.answers import OverviewAnswer
from tests.support.overview import (
    CPU_ONLY,
    JAX_CPU,
    KINETO_FILES,
    PREFETCH,
    RANK0,
    RANK1,
    SLOW_INPUT,
    TF_CPU,
    V100,
    XPLANE_FILES,
    host_events,
    overview,
)

US = 1_000_000  # ps


def _sum(parts: dict[str, float]) -> float:
    return sum(parts.values())


@pytest.mark.parametrize("path", KINETO_FILES + XPLANE_FILES, ids=lambda p: p.name)
def test_parts_add_up_to_wall_time(path) -> None:
    answer = overview(path, batch_size=8)
    assert msgspec.json.decode(answers.encode(answer), type=OverviewAnswer) == answer
    for host in answer.per_host:
        assert _sum(host.capture.parts) == pytest.approx(host.capture.wall_ns, rel=1e-12, abs=1e-6)
        for row in host.steps.rows:
            assert _sum(row.parts) == pytest.approx(row.wall_ns, rel=1e-12, abs=1e-6)
            assert all(v >= 0 for v in row.parts.values())
        if host.steady is not UNSET:
            steady_rows = [r for r in host.steps.rows if r.phase == "steady"]
            assert host.steady.wall_ns == pytest.approx(sum(r.wall_ns for r in steady_rows))
            assert _sum(host.steady.parts) == pytest.approx(host.steady.wall_ns, rel=1e-12, abs=1e-6)
            assert sum(host.steady.fractions.values()) == pytest.approx(1.0)


def test_multi_rank_hosts_each_add_up_and_compare_their_steps() -> None:
    answer = overview(RANK0, RANK1)
    assert [h.host for h in answer.per_host] == ["rank-0", "rank-1"]
    assert [s.step for s in answer.ranks.steps] == [551, 552]  # tests/analysis/test_collectives.py: the rest
    for host in answer.per_host:
        overlap = host.overlap
        assert 0 < overlap.overlapped_ns < overlap.communication_ns
        assert overlap.fraction == pytest.approx(overlap.overlapped_ns / overlap.communication_ns)


@pytest.mark.parametrize("path", [CPU_ONLY, JAX_CPU, TF_CPU, SLOW_INPUT], ids=lambda p: p.name)
def test_cpu_only_device_figures_are_not_observed(path) -> None:
    answer = overview(path)
    device_categories = [c for c in answer.categories if c.side == "device"]
    assert device_categories and all(not c.observed for c in device_categories)
    assert all("not observed" in c.reason and "CPU-only" in c.reason for c in device_categories)
    host = answer.per_host[0]
    assert not host.devices.observed and "CPU-only" in host.devices.reason
    assert host.devices.devices == [] and host.devices.launch_delay is UNSET
    for parts in [host.capture.parts, *(r.parts for r in host.steps.rows)]:
        assert not set(parts) & breakdown.DEVICE_CATEGORIES
    assert answer.tables.kernels == [] and "not observed" in answer.tables.kernels_reason
    assert not [f for f in answer.findings if f.kind == "not_observed"]


@pytest.mark.parametrize("path", [V100, RANK0, CPU_ONLY, SLOW_INPUT, JAX_CPU], ids=lambda p: p.name)
def test_self_plus_children_is_total(path) -> None:
    host = host_events(path)
    trace = host.trace
    chosen = host.of_roles(*events.HOST_ROLES)
    start, end = trace.ev_start_ps, host.end_ps
    children = np.flatnonzero(host.parent >= 0)
    parent = host.parent[children]
    clipped = np.minimum(end[children], end[parent]) - start[children]
    children_ps = np.bincount(parent, weights=clipped, minlength=trace.num_events)
    assert np.array_equal(
        host.self_ps[chosen] + children_ps[chosen].astype(np.int64), trace.ev_dur_ps[chosen]
    )
    rows = overview(path).tables.host_ops
    assert all(0 <= r.self_ns <= r.total_ns and r.min_ns <= r.avg_ns <= r.max_ns for r in rows)


def test_input_counts_only_on_the_step_thread() -> None:
    # The prefetching twin reads batches on worker threads (label prefetch_worker_read): host compute there,
    # while its step thread waits for a ready batch in batch_read, which stays short.
    answer = overview(PREFETCH)
    assert "batch_read" in answer.categories[breakdown.CATEGORY_IDS.index("input")].counts
    steady = answer.per_host[0].steady
    assert steady.fractions["input"] < 0.05


# -- a hand-made trace: every number below is worked out in the comments -----------------------------
def _hand_made() -> events.HostEvents:
    b = TraceBuilder("hand", registry.CHROME_TRACE)
    cpu = b.section("python (pid 1)", "cpu")
    gpu = b.section("GPU 0", "gpu")
    thread = b.track(cpu, "thread 1", "thread")
    stream = b.track(gpu, "stream 7", "stream")
    names = {
        n: b.intern(n)
        for n in ("ProfilerStep#1", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
    }
    cat = {c: b.intern(c) for c in ("user_annotation", "cpu_op", "cuda_runtime", "kernel", "gpu_memcpy")}

    def add(track, name, start_us, end_us, category):
        start, end = round(start_us * US), round(end_us * US)
        return b.add_event(track, start, end - start, names.get(name) or b.intern(name), cat[category])

    add(thread, "ProfilerStep#1", 0, 100, "user_annotation")
    add(thread, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 30, "user_annotation")
    add(thread, "aten::addmm", 40, 60, "cpu_op")
    launch1 = add(thread, "cudaLaunchKernel", 45, 50, "cuda_runtime")
    launch2 = add(thread, "cudaLaunchKernel", 51, 52, "cuda_runtime")
    add(thread, "cudaDeviceSynchronize", 60, 90, "cuda_runtime")
    launch3 = add(thread, "cudaLaunchKernel", 96, 97, "cuda_runtime")
    k1 = add(stream, "gemm", 55, 80, "kernel")
    add(stream, "Memcpy HtoD (Pageable -> Device)", 82, 85, "gpu_memcpy")
    k2 = add(stream, "gemm", 85.02, 88, "kernel")
    k3 = add(stream, "relu", 98, 99, "kernel")
    for src, dst in ((launch1, k1), (launch2, k2), (launch3, k3)):
        b.add_flow(src, dst)
    trace = b.finalize()
    return events.build("hand", trace, lod.build(trace).self_ps)


def test_priority_sweep_on_a_hand_made_step() -> None:
    answer = analysis.answer("t", [HostInput(_hand_made(), 0, 0)], Options())
    (row,) = answer.per_host[0].steps.rows
    assert row.wall_ns == pytest.approx(100_000)
    expected_us = {
        "device_compute": 25 + 2.98 + 1,  # kernels [55,80) [85.02,88) [98,99)
        "memcpy_h2d": 3,  # [82,85)
        "runtime": 5 + 1 + (2 + 0.02 + 2) + 1,  # launches, and the sync where the device is not busy
        "input": 30,  # the data loader
        "host_compute": 5 + 1 + 3,  # addmm outside its launches and the kernel it overlaps
        "idle": 10 + 8,  # [30,40) and [90,96) [97,98) [99,100)
    }
    parts = {k: v for k, v in row.parts.items() if v}
    assert parts == pytest.approx({k: v * 1000 for k, v in expected_us.items()})


def test_device_idle_split_and_launch_delay_on_a_hand_made_stream() -> None:
    answer = analysis.answer("t", [HostInput(_hand_made(), 0, 0)], Options())
    devices = answer.per_host[0].devices
    (device,) = devices.devices
    (stream,) = device.streams
    assert stream.events == 4 and stream.idle.gaps == 3
    assert stream.busy_ns == pytest.approx((25 + 3 + 2.98 + 1) * 1000)
    assert device.busy_fraction == pytest.approx(31.98 / 100)
    # Memcpy after 2 µs with no launch linked and gemm 20 ns after it (its launch came before the
    # memcpy ended): kernel wait, both under 30 µs; relu 10 µs after: host wait (launched at 96 µs,
    # after 88 µs).
    assert stream.idle.other_ns == 0
    assert stream.idle.kernel_wait_ns == pytest.approx(2000 + 20)
    assert stream.idle.host_wait_ns == pytest.approx(10_000)
    delay = devices.launch_delay
    assert delay.count == 3
    assert (delay.min_ns, delay.median_ns, delay.max_ns) == pytest.approx((1000, 5000, 33_020))
    kernels = {k.name: k for k in answer.tables.kernels}
    assert kernels["gemm"].framework_op == "aten::addmm" and kernels["gemm"].calls == 2
    assert kernels["relu"].framework_op is UNSET  # launched straight from the step marker


def test_interval_helpers_agree_with_brute_force() -> None:
    rng = np.random.default_rng(0)
    start = rng.integers(0, 1000, 200)
    end = start + rng.integers(0, 50, 200)
    covered = np.zeros(1100, bool)
    for s, e in zip(start, end):
        covered[s:e] = True
    merged = intervals.merge(start, end)
    assert merged.total() == covered.sum()
    lo, hi = np.array([0, 100, 500]), np.array([50, 400, 1100])
    assert intervals.covered(merged, lo, hi).tolist() == [covered[a:b].sum() for a, b in zip(lo, hi)]
    other = intervals.merge(start[::2] + 7, end[::2] + 20)
    other_mask = np.zeros(1100, bool)
    for s, e in zip(start[::2] + 7, end[::2] + 20):
        other_mask[s:e] = True
    assert intervals.intersect(merged, other).total() == (covered & other_mask).sum()
    table = intervals.partition([other, merged], lo, hi)
    assert table[0].tolist() == [other_mask[a:b].sum() for a, b in zip(lo, hi)]
    assert table[1].tolist() == [(covered & ~other_mask)[a:b].sum() for a, b in zip(lo, hi)]
    assert (table.sum(axis=0) == hi - lo).all()
