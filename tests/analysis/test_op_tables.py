"""Op, kernel and HLO tables on real traces: totals against the raw events, framework ops through the
launch flows, kernel details, grouping by input shapes, and links to the Trace tab."""

from __future__ import annotations

import pytest

from profscope.analysis import op_tables
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
    assert sum(k.calls for k in answer.tables.kernels) == result.launches.device.shape[0]
    assert answer.tables.kernels_total == len(answer.tables.kernels)


def test_xplane_hlo_ops_carry_category_and_framework_op() -> None:
    rows = {r.name: r for r in overview(MI300).tables.hlo_ops}
    assert rows["cudnn-conv.1"].framework_op == "conv_general_dilated"
    assert rows["loop_transpose_fusion"].category == "loop_transpose_fusion"
    tpu = {r.name: r for r in overview(TPU).tables.hlo_ops}
    assert tpu["all-reduce"].category == "all-reduce"
    assert all(0 <= r.self_ns <= r.total_ns for r in tpu.values())
    assert overview(V100).tables.hlo_ops == []
