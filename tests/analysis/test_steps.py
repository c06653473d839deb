"""Steps: how many, from which source, the warm-up split and the steady-state figures, on real
traces whose markers are counted here from the raw events."""

from __future__ import annotations

import numpy as np
import pytest

from profscope.analysis import steps
from profscope.answers import UNSET
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


@pytest.mark.parametrize("path", [A100, TPU], ids=["a100", "tpu"])
def test_no_markers_says_so_and_still_breaks_the_capture_down(path) -> None:
    answer = overview(path)
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
