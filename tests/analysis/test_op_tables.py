"""Op, kernel and HLO tables on real traces: totals against the raw events, framework ops through the
launch flows, kernel details, grouping by input shapes, and links to the Trace tab."""

from __future__ import annotations

from collections import Counter

import pytest

from profscope.analysis import op_tables
from profscope.analysis.device_idle import in_windows
from profscope.answers import UNSET
from tests.support.overview import (
    H100,
    MI300,
    REPEATED_COPY,
    SLOW_INPUT,
    TPU,
    V100,
    host_result,
    overview,
    raw_kineto,
    trace_of,
)


def test_host_op_totals_match_the_events_in_scope() -> None:
    answer = overview(SLOW_INPUT)
    result = host_result(SLOW_INPUT)
    trace = trace_of(SLOW_INPUT)
    lo, hi = result.scope_lo, result.scope_hi
    rows = {r.name: r for r in answer.tables.host_ops}
    mm = [
        i
        for i in range(trace.num_events)
        if trace.strings[trace.ev_name[i]] == "aten::mm"
        and any(a <= trace.ev_start_ps[i] < b for a, b in zip(lo.tolist(), hi.tolist()))
    ]
    assert rows["aten::mm"].calls == len(mm)
    assert rows["aten::mm"].total_ns == pytest.approx(sum(int(trace.ev_dur_ps[i]) for i in mm) / 1e3)
    assert answer.tables.scope == "steady steps 2–7"
    assert rows["aten::mm"].total_fraction == pytest.approx(
        rows["aten::mm"].total_ns / answer.per_host[0].steady.wall_ns
    )
    assert all(r.search == r.name for r in answer.tables.host_ops)
    # Step markers and Python frames are not ops.
    assert not [r for r in answer.tables.host_ops if r.name.startswith("ProfilerStep#")]
    assert answer.tables.host_ops_total == len(rows) <= op_tables.ROW_LIMIT


def test_grouping_by_input_shapes_splits_a_name() -> None:
    by_name = {r.name: r for r in overview(REPEATED_COPY).tables.host_ops}
    shaped = [r for r in overview(REPEATED_COPY, group_by="shapes").tables.host_ops if r.name == "aten::mm"]
    assert len(shaped) > 1 and all(r.shapes.startswith("[[") for r in shaped)
    assert sum(r.calls for r in shaped) == by_name["aten::mm"].calls
    assert by_name["aten::mm"].shapes is UNSET


def test_kernels_name_their_framework_op_and_launch_details() -> None:
    kernels = overview(H100).tables.kernels
    cutlass = next(k for k in kernels if k.name.startswith("void cutlass::Kernel2<cutlass_80_wmma"))
    assert cutlass.framework_op == "aten::addmm" and cutlass.kind == "kernel"
    assert cutlass.details.grid == [40, 2, 1] and cutlass.details.block == [128, 1, 1]
    assert cutlass.details.registers_per_thread == 88 and cutlass.details.shared_memory == 33792
    copy = next(k for k in kernels if k.name.startswith("Memcpy DtoH"))
    assert copy.kind == "memcpy device→host" and copy.details is UNSET


def test_kernel_calls_add_up_to_the_device_events_in_scope() -> None:
    answer = overview(V100)
    result = host_result(V100)
    instants = result.events.instants.index
    in_scope = in_windows(result.events.trace.ev_start_ps[instants], result.scope_lo, result.scope_hi)
    # The device events with a role, and the 0 µs ones: calls, but no time.
    assert sum(k.calls for k in answer.tables.kernels) == result.launches.device.shape[0] + in_scope.sum()
    assert answer.tables.kernels_total == len(answer.tables.kernels)


def test_kernel_calls_count_the_raw_events_those_of_0_us_too() -> None:
    """Each kernel's calls = its events in the raw JSON starting in scope; the V100 trace writes 636
    sub-µs fill kernels with `dur: 0`: calls of no time, the table's time figures unchanged."""
    result = host_result(V100)
    origin_ps = trace_of(V100).clock_origin_ns * 1000
    lo, hi = result.scope_lo.tolist(), result.scope_hi.tolist()
    raw_calls: Counter[str] = Counter()
    raw_ps: Counter[str] = Counter()
    for e in raw_kineto(V100):
        ts = e.get("ts", 0) * 10**6 - origin_ps
        if e.get("cat") in ("Kernel", "Memcpy", "Memset") and any(a <= ts < b for a, b in zip(lo, hi)):
            raw_calls[e["name"]] += 1
            raw_ps[e["name"]] += e["dur"] * 10**6
    rows = {k.name: k for k in overview(V100).tables.kernels}
    assert {name: row.calls for name, row in rows.items()} == dict(raw_calls)
    assert {name: row.total_ns for name, row in rows.items()} == pytest.approx(
        {name: ps / 1e3 for name, ps in raw_ps.items()}
    )
    (fill,) = [r for r in rows.values() if "FillFunctor<float>" in r.name]
    zero = sum(1 for e in raw_kineto(V100) if e.get("cat") == "Kernel" and e["dur"] == 0)
    assert zero == 636 and fill.calls == 978 and fill.min_ns == 0
    assert fill.framework_op == "aten::fill_"


def test_xplane_hlo_ops_carry_category_and_framework_op() -> None:
    rows = {r.name: r for r in overview(MI300).tables.hlo_ops}
    assert rows["cudnn-conv.1"].framework_op == "conv_general_dilated"
    assert rows["loop_transpose_fusion"].category == "loop_transpose_fusion"
    tpu = {r.name: r for r in overview(TPU).tables.hlo_ops}
    # The TPU capture's steps are inferred from its 102 executions of `jit_f`: the table's scope is
    # those steps (its 32 all-reduces all run before the first of them).
    assert tpu["copy-done.2"].category == "copy-done"
    assert tpu["broadcast_add_fusion.1"].category == "loop fusion"
    assert all(0 <= r.self_ns <= r.total_ns for r in tpu.values())
    assert overview(V100).tables.hlo_ops == []
