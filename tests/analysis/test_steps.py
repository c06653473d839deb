"""Steps: how many, from which source, the warm-up split and the steady-state figures, on real
traces whose markers are counted here from the raw events, and the marker rules (candidates,
nested duplicates, regular numbering, device work launched before the first step) on small traces
built here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from profscope.analysis import events, steps
from profscope.analysis.host import analyze_host
from profscope.analysis.results import HostInput, Options
from profscope.answers import UNSET
from profscope.engine.lod import index as lod
from profscope.model.columns import TraceBuilder
from tests.support.overview import (
    A100,
    CPU_ONLY,
    GPU_TF,
    H100,
    JAX_CPU,
    KINETO_FILES,
    MI250,
    PREFETCH,
    RANK0,
    REPEATED_COPY,
    SLOW_INPUT,
    TF_CPU,
    TPU,
    V100,
    XLA_CPU,
    host_result,
    overview,
    raw_kineto,
    raw_profiler_steps,
    raw_xplane_labels,
    trace_of,
)


@pytest.mark.parametrize("path", [p for p in KINETO_FILES if raw_profiler_steps(p)], ids=lambda p: p.name)
def test_profiler_steps_match_the_raw_markers(path) -> None:
    found = host_result(path).steps
    assert found.kind == "profiler_step"
    assert len(found) == raw_profiler_steps(path)
    raw_numbers = sorted(
        int(e["name"].split("#")[1])
        for e in raw_kineto(path)
        if e.get("ph") == "X"
        and e["name"].startswith("ProfilerStep#")
        and e.get("cat") != "gpu_user_annotation"
    )
    assert sorted(found.numbers.tolist()) == raw_numbers


@pytest.mark.parametrize("path", [JAX_CPU, TF_CPU, XLA_CPU], ids=["jax", "tf", "xla"])
def test_step_annotations_match_the_raw_xplane(path) -> None:
    found = host_result(path).steps
    assert found.kind == "step_annotation"
    assert len(found) == raw_xplane_labels(path)["train_step"]
    assert found.numbers.tolist() == list(range(len(found)))


def test_the_xplane_steps_line_gives_one_step_over_both_gpus() -> None:
    trace = trace_of(GPU_TF)
    lines = [t.id for t in trace.tracks if t.name == "Steps"]
    boxes = {trace.strings[n] for n, t in zip(trace.ev_name.tolist(), trace.ev_track.tolist()) if t in lines}
    found = host_result(GPU_TF).steps
    assert found.kind == "xplane_steps" and "2 devices" in found.source
    assert [str(n) for n in found.numbers.tolist()] == sorted(boxes)


def test_a_named_annotation_is_used_when_asked() -> None:
    trains = sum(1 for e in raw_kineto(SLOW_INPUT) if e.get("ph") == "X" and e.get("name") == "train")
    found = host_result(SLOW_INPUT, step_name="train").steps
    assert found.kind == "user_annotation" and len(found) == trains == 6
    # A name that is not in the trace falls back to the trace's own markers, and the source says so.
    fallback = host_result(SLOW_INPUT, step_name="no_such_label").steps
    assert fallback.kind == "profiler_step"
    assert fallback.source.startswith("no slice named 'no_such_label' on a host thread, so ProfilerStep#N")


def test_no_markers_says_so_and_still_breaks_the_capture_down() -> None:
    answer = overview(A100)
    host = answer.per_host[0]
    assert host.steps.source_kind == "none" and host.steps.rows == []
    assert "no step markers: name an annotation" in host.steps.message
    assert host.capture.wall_ns > 0 and sum(host.capture.parts.values()) == pytest.approx(
        host.capture.wall_ns
    )
    assert any("no step markers" in w for w in answer.warnings)


def test_step_windows_never_overlap_and_cover_their_markers() -> None:
    for path in (V100, H100, RANK0, MI250, SLOW_INPUT):
        found = host_result(path).steps
        assert (found.start_ps[1:] >= found.end_ps[:-1]).all()
        trace = trace_of(path)
        marker_end = trace.ev_start_ps[found.markers] + trace.ev_dur_ps[found.markers]
        assert (found.end_ps >= marker_end).all()


def test_warmup_split_on_the_xla_recompile_demo() -> None:
    host = overview(XLA_CPU).per_host[0]
    split = host.steps.split
    # Steps 0-3 compile (the 4th batch is the short last one: a new shape); epoch 1 is cached.
    assert split.warmup == [0, 1, 2, 3] and split.steady == [4, 5, 6, 7]
    assert "compiling in 0, 1, 2, 3" in split.verdict and split.rule == steps.RULE
    assert [r.phase for r in host.steps.rows] == ["warmup"] * 4 + ["steady"] * 4


def test_warmup_split_on_the_jax_demo_states_its_ratio() -> None:
    host = overview(JAX_CPU).per_host[0]
    assert host.steps.split.warmup == [0]
    assert host.steps.split.verdict.startswith("step 0 takes ")
    assert "× the median of the rest" in host.steps.split.verdict


def test_a_steady_capture_keeps_every_step() -> None:
    host = overview(V100).per_host[0]
    assert host.steps.split.warmup == []
    assert "all 6 steps are steady" in host.steps.split.verdict


def test_steady_figures_state_a_distribution_from_five_steps() -> None:
    stats = overview(SLOW_INPUT, batch_size=16).per_host[0].steps.stats
    walls = sorted(r.wall_ns for r in overview(SLOW_INPUT).per_host[0].steps.rows if r.phase == "steady")
    assert stats.count == len(walls) >= steps.MIN_DISTRIBUTION_STEPS
    assert stats.min_ns == walls[0] and stats.max_ns == walls[-1]
    assert stats.p10_ns <= stats.median_ns <= stats.p90_ns
    assert stats.examples_per_s == pytest.approx(16 / (stats.median_ns / 1e9))
    assert stats.note is UNSET


def test_too_few_steady_steps_say_the_window_is_too_short() -> None:
    for path in (CPU_ONLY, H100, JAX_CPU):
        stats = overview(path).per_host[0].steps.stats
        assert stats.count < steps.MIN_DISTRIBUTION_STEPS
        assert "too short to state a distribution" in stats.note
        assert stats.p10_ns is UNSET and stats.p90_ns is UNSET


def test_per_step_examples_per_s_follow_batch_size() -> None:
    rows = overview(REPEATED_COPY, batch_size=64).per_host[0].steps.rows
    assert all(r.examples_per_s == pytest.approx(64 / (r.wall_ns / 1e9)) for r in rows)
    assert all(r.examples_per_s is UNSET for r in overview(PREFETCH).per_host[0].steps.rows)


def test_split_rule_on_hand_made_walls() -> None:
    numbers = np.arange(2, 10)
    walls = np.array([35, 30, 10, 10, 11, 9, 10, 10]) * 1_000_000
    split = steps.split(numbers, walls, np.zeros(8, np.int64))
    assert split.warmup.tolist() == [True, True] + [False] * 6
    assert split.verdict.startswith("steps 2–3 take 3.2× the median of the rest")
    # At most half of the steps can be warm-up, and a slow step after a fast one is not warm-up.
    split = steps.split(
        numbers, np.array([10, 30, 30, 30, 30, 30, 30, 30]) * 1_000_000, np.zeros(8, np.int64)
    )
    assert not split.warmup.any()


def test_the_tpu_inference_loop_gives_one_step_per_execution_of_its_program() -> None:
    trace = trace_of(TPU)
    modules = [t.id for t in trace.tracks if t.name == "XLA Modules"]
    runs = {
        json.loads(trace.args_json(i))["run_id"]
        for i in np.flatnonzero(np.isin(trace.ev_track, modules)).tolist()
        if trace.strings[trace.ev_name[i]].startswith("jit_f(")
    }
    host = overview(TPU).per_host[0]
    assert host.steps.source_kind == "inferred" and len(host.steps.rows) == len(runs) == 102
    assert host.steps.source == "inferred from 102 executions of `jit_f` (no step markers)"
    assert host.steps.message is UNSET


# -- the marker rules on traces built here ---------------------------------------------------------
MS = 1_000_000_000  # ps


def _host(slices, kernels=()) -> events.HostEvents:
    """A host of one Python thread with `slices` (name, start ms, duration ms, args dict or None)
    and GPU `kernels` (name, start ms, duration ms, index of the slice that launched it)."""
    builder = TraceBuilder("built", "test")
    thread = builder.track(builder.section("cpu", "cpu"), "main")
    stream = builder.track(builder.section("gpu", "gpu"), "stream 7", kind="stream")
    kernel_cat = builder.intern("kernel")
    ids = []
    for name, start, dur, args in slices:
        raw = json.dumps(args).encode() if args is not None else None
        ids.append(builder.add_event(thread, int(start * MS), int(dur * MS), builder.intern(name), 0, raw))
    for name, start, dur, launch in kernels:
        kernel = builder.add_event(stream, int(start * MS), int(dur * MS), builder.intern(name), kernel_cat)
        builder.add_flow(ids[launch], kernel)
    trace = builder.finalize()
    return events.build("built", trace, lod.build(trace).self_ps)


def test_nested_duplicate_markers_count_once_with_their_own_numbers() -> None:
    slices = []
    for k, number in enumerate((5, 6, 7)):
        slices.append(("train", 10 * k, 8, {"step_num": number}))
        slices.append(("train", 10 * k + 1, 6, {"step_num": number}))  # the same step, nested
    found = steps.find(_host(slices), None)
    assert found.kind == "step_annotation" and found.numbers.tolist() == [5, 6, 7]
    assert (found.start_ps == np.array([0, 10, 20]) * MS).all()
    # Asked for by name, unnumbered nested markers are numbered by their order once merged.
    plain = [(name, start, dur, None) for name, start, dur, _ in slices]
    assert steps.find(_host(plain), "train").numbers.tolist() == [0, 1, 2]


def test_a_step_marker_that_starts_inside_a_short_frame_is_found_by_time() -> None:
    # JAX: the annotation starts inside its constructor's frame and outlives it (partial overlap).
    slices = []
    for k in range(4):
        slices.append(("$profiler.py:385 __init__", 10 * k, 0.5, None))
        slices.append(("Schritt", 10 * k + 0.2, 8, {"_r": 1, "step_num": k}))
        slices.append(("PjitFunction(update)", 10 * k + 1, 5, None))
    found = steps.find(_host(slices), None)
    assert found.kind == "step_annotation" and found.names == ["Schritt"] * 4
    assert found.numbers.tolist() == [0, 1, 2, 3] and "root step markers 'Schritt'" in found.source


def test_root_markers_win_and_the_others_are_offered() -> None:
    slices = []
    for k in range(3):
        slices.append(("outer_loop", 10 * k, 9, {"step": k + 100}))
        slices.append(("train", 10 * k + 1, 7, {"_r": 1, "step_num": k}))
        slices.append(("ExecutorState::Process", 10 * k + 2, 1, {"iter_num": 0}))
    found = steps.find(_host(slices), None)
    assert found.names[0] == "train" and found.candidates == ("outer_loop",)
    # iter_num = 0 everywhere is no step numbering: not a candidate.
    asked = steps.find(_host(slices), "outer_loop")
    assert asked.kind == "user_annotation" and asked.numbers.tolist() == [100, 101, 102]
    assert asked.candidates == ("train",)


def test_the_outermost_regular_candidate_wins_within_a_tier() -> None:
    slices = []
    for k in range(4):
        slices.append(("epoch_batch", 10 * k, 9, {"step_num": k}))
        slices.append(("inner", 10 * k + 1, 2, {"step_num": k}))
        slices.append(("irregular", 10 * k + 4, 1, {"step_num": (0, 5, 2, 9)[k]}))
    found = steps.find(_host(slices), None)
    assert found.names[0] == "epoch_batch" and found.candidates == ("inner",)


def test_names_numbered_in_the_name_are_one_candidate() -> None:
    slices = [(f"Profiled batch {k}", 10 * k, 8, None) for k in range(2, 6)]
    found = steps.find(_host(slices), None)
    assert found.kind == "step_annotation" and found.numbers.tolist() == [2, 3, 4, 5]


def test_device_work_launched_before_the_first_step_is_counted_apart() -> None:
    slices = [("cudaLaunchKernel", 0, 0.1, None)]
    slices += [(f"ProfilerStep#{k}", 1 + 10 * k, 9, None) for k in range(3)]
    slices += [("cudaLaunchKernel", 1.5 + 10 * k, 0.1, None) for k in range(3)]
    kernels = [("tail_of_before", 0.5, 3, 0)] + [("gemm", 2 + 10 * k, 2, 4 + k) for k in range(3)]
    host = _host(slices, kernels)
    found = steps.find(host, None)
    assert found.kind == "profiler_step" and found.before_first == 1
    assert found.before_first_ps == int(2.5 * MS)
    assert "1 device event launched before the first step runs into it" in steps.before_first_note(found)
    # Left out of the first step's breakdown: only its own 2 ms kernel counts there.
    answer = analyze_host(HostInput(host, 0, 0), Options()).answer.steps
    assert answer.rows[0].parts["device_compute"] == 2 * MS / 1e3
    assert answer.before_first == 1 and answer.before_first_ns == 2.5 * MS / 1e3
    assert answer.before_first_note == steps.before_first_note(found)


def test_an_unmarked_loop_is_inferred_from_its_call_pattern() -> None:
    pattern = [
        "Optimizer.zero_grad#SGD.zero_grad",
        "aten::linear",
        "aten::linear",
        "aten::mse_loss",
        "Optimizer.step#SGD.step",
    ]
    slices = [("aten::randn", 0, 1, None)]
    for k in range(5):
        slices += [(name, 2 + 10 * k + 2 * j, 1, None) for j, name in enumerate(pattern)]
    found = steps.find(_host(slices), None)
    assert found.kind == "inferred" and len(found) == 5 and found.names[0] == pattern[0]
    assert found.source.startswith("inferred from 5 repetitions of the host call pattern starting with")
    assert (found.start_ps == (2 + 10 * np.arange(5)) * MS).all() and found.end_ps[-1] == 51 * MS
