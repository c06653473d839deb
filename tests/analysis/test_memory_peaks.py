"""Each allocator's peak and the ops holding it as Compare reads them (`analysis.memory_peaks`): the
Memory tab's figures of the same device, on the real captures with allocator events (the PyTorch
peak and leak captures of tests/data/memory, the 8-GPU TensorFlow and the TPU XPlanes), recomputed
by the Memory tab's own analysis."""

from __future__ import annotations

import pytest

from profscope.analysis import memory_peaks, memory_records, memory_xplane_records
from profscope.analysis import steps as host_steps
from profscope.tools.memory import analysis
from tests.support import DATA_DIR
from tests.support.overview import GPU_TF, TPU, host_events

FILES = [
    DATA_DIR / "memory" / "peak_backward.pt.trace.json.gz",
    DATA_DIR / "memory" / "leak_per_step.pt.trace.json.gz",
    GPU_TF,
    TPU,
]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_device_s_peak_is_the_memory_tab_s(path) -> None:  # noqa: ANN001
    events = host_events(path)
    steps = host_steps.find(events, None)
    peaks = memory_peaks.device_peaks(events, steps)
    found = memory_records.read(events)[0] + memory_xplane_records.read(events)[0]
    clock = analysis.HostClock("h", 0, 0)
    tabs = [analysis.device(r, events, steps, clock, r.label) for r in found]
    assert [p.device for p in peaks] == [d.label for d in tabs] and peaks
    for peak, tab in zip(peaks, tabs):
        assert peak.allocated_bytes == tab.peak.allocated_bytes
        assert peak.step == (tab.peak.step or None) and peak.op == (tab.peak.op or None)
        assert (peak.live_bytes, peak.before_capture_bytes) == (
            tab.live_at_peak_bytes,
            tab.before_capture_bytes,
        )
        # the ops holding the peak: the op table's peak bytes, largest first
        holding = sorted(((r.op, r.peak_bytes) for r in tab.ops if r.peak_bytes), key=lambda o: (-o[1], o[0]))
        assert [(o.op, o.bytes) for o in peak.ops] == holding[: memory_peaks.TOP_OPS]
        assert sum(o.bytes for o in peak.ops) <= peak.live_bytes
        reserved = None if tab.reserved_reason else max(tab.reserved.bytes)  # the series keeps its maximum
        assert peak.reserved_bytes == reserved


def test_no_peaks_without_allocator_events() -> None:
    path = DATA_DIR / "overview" / "slow_input.pt.trace.json.gz"
    events = host_events(path)
    assert memory_peaks.device_peaks(events, host_steps.find(events, None)) == []
