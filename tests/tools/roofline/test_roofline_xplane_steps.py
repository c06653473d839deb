"""Step rows of XPlanes (`tools/roofline/xplane_steps.py`): the Overview's steps, on every XPlane of
tests/data and the demo logdir, and the step rows' sums against the Total."""

from __future__ import annotations

from pathlib import Path

import pytest

from profscope.answers import UNSET
from profscope.tools.roofline import analysis
from profscope.tools.roofline.answers import RooflineAnswer
from tests.support import overview as overview_support


def _roofline(path: Path, **options: object) -> tuple[analysis.HostDevices | str, RooflineAnswer]:
    events = overview_support.host_events(path)
    host = analysis.host_devices(path.name, events.trace, None, lambda: events)
    return host, analysis.answer(path.name, [host], analysis.Options(**options), None)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", overview_support.XPLANE_FILES, ids=lambda p: p.parent.name + "/" + p.name)
def test_the_roofline_and_the_overview_show_the_same_steps(path: Path) -> None:
    """Both tabs' analyses on one file's classified events: the same step numbers, the same source,
    the same wall times. The CPU-only captures have no device roofline, so no step rows."""
    _, roofline = _roofline(path)
    overview = overview_support.host_result(path).answer.steps
    walls = {int(r.step): r.wall_time_ns for r in roofline.program if r.step.isdigit()}
    if not roofline.observed:
        assert path.is_relative_to(overview_support.DEMO_LOGDIR) and walls == {}
        return
    assert roofline.steps == sorted(r.number for r in overview.rows) and roofline.steps
    assert roofline.step_source == overview.source
    assert walls == {r.number: r.wall_ns for r in overview.rows}


def test_tpu_steps_are_the_inferred_program_executions() -> None:
    """No step marker in the TPU v6e XPlane: like the Overview, 102 steps, one per execution of
    `jit_f`; steps 1 and 3 run on 1 and 2 of the 4 cores and are left out of the average. The 13
    executions started before the first step count in the Total only; every other execution is in
    a step, so the steps' FLOPs are the Total's less those 13's."""
    host, answer = _roofline(overview_support.TPU)
    assert isinstance(host, analysis.HostDevices)
    rows = {r.step: r for r in answer.program}
    assert "Average step (100 complete)" in rows
    assert [(s.number, s.devices) for s in host.steps if not s.complete] == [(1, 1), (3, 2)]
    outside = host.step_of < 0
    assert int(outside.sum()) == 13
    ex = host.activity.executions  # type: ignore[union-attr]
    outside_flops = float(ex.flops[outside & ex.counted].sum())
    steps_flops = sum(float(r.flops) for r in answer.program if r.step.isdigit() and r.flops is not UNSET)  # type: ignore[arg-type]
    assert steps_flops + outside_flops == pytest.approx(float(rows["Total"].flops), rel=1e-12)  # type: ignore[arg-type]
    assert any("13 device op executions launched before the first step" in w for w in answer.warnings)
    step = _roofline(overview_support.TPU, step=2)[1]
    assert step.ops and sum(op.occurrences for op in step.ops) == int((host.step_of == 2).sum())


def test_gpu_steps_tile_the_device_time() -> None:
    """MI300 (JAX, 8 GPUs, no marker): 5 steps inferred from the jitted calls, every kernel launched
    inside one of them, so the steps tile each GPU's first-to-last time: their device times and
    FLOPs sum to the Total's exactly."""
    host, answer = _roofline(overview_support.MI300)
    assert isinstance(host, analysis.HostDevices) and (host.step_of >= 0).all()
    rows = {r.step: r for r in answer.program}
    steps = [r for r in answer.program if r.step.isdigit()]
    assert [r.step for r in steps] == ["1", "2", "3", "4", "5"] and all(r.devices == 8 for r in steps)
    assert sum(r.device_time_ns for r in steps) == rows["Total"].device_time_ns
    assert sum(float(r.flops) for r in steps) == pytest.approx(float(rows["Total"].flops), rel=1e-12)  # type: ignore[arg-type]


def test_a_device_with_work_outside_every_step_leaves_the_step_complete() -> None:
    """TensorFlow on 8 GPUs: the Steps line has step 0 on GPUs 4 and 6; GPU 1 only makes 19
    host→device copies after it. Step 0 is complete (2 devices, both with work in a step) and the
    copies are counted apart."""
    _, answer = _roofline(overview_support.GPU_TF)
    rows = {r.step: r for r in answer.program}
    assert list(rows) == ["Total", "Average step (1 complete)", "0"] and rows["0"].devices == 2
    assert any("19 device op executions launched after the last step" in w for w in answer.warnings)
