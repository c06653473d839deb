"""XProf's allocation timeline of XLA programs (tools/memory/program_timeline.py) on real XPlanes.

The boxes (buffer, span, offset, size, name, shape) and bands equal XProf 2.24.2's `bufferBlocks` in its
saved memory_viewer answers (tests/data/memory/xprof/, PROVENANCE.md) for every program of the JAX
CPU, TPU v6e and MI300 XPlanes; independently of XProf, every box lies inside its allocation and
the boxes over the peak's event add up to the heap's peak.
"""

from __future__ import annotations

import json

import msgspec
import pytest

from profscope.formats.hlo import buffers
from profscope.tools.memory import program, program_timeline
from profscope.tools.memory.answers import ProgramMemory, ProgramTimeline
from tests.tools.memory.test_program import ANCHORS, FILES, cases, modules, views


def timeline_of(view: ProgramMemory) -> ProgramTimeline | None:
    return None if view.timeline is msgspec.UNSET else view.timeline


@pytest.mark.parametrize(("name", "module"), cases())
def test_the_boxes_are_xprofs(name: str, module: str) -> None:
    timeline = timeline_of(views(name)[module])
    theirs = json.loads((ANCHORS / f"{name}.memory_viewer.json").read_text())[module] or {}
    blocks = theirs.get("bufferBlocks", [])
    if timeline is None:
        assert blocks == []
        return
    bands = [
        (int(b.get("offset", 0)), int(b["size"]), int(b["endStep"]))
        for b in blocks
        if b["logicalBufferId"] == -1
    ]
    assert [(b.base_bytes, b.size_bytes, timeline.events) for b in timeline.bands] == bands
    ours = [
        (
            timeline.buffer_id[i],
            timeline.start[i],
            timeline.end[i],
            timeline.bands[timeline.band[i]].base_bytes + timeline.offset_bytes[i],
            timeline.size_bytes[i],
            timeline.unpadded_bytes[i],
            timeline.instruction[i],
            timeline.shape[i],
            timeline.op_name[i],
        )
        for i in range(timeline.boxes)
    ]
    xprof = [  # proto3 JSON leaves zeros and empty texts out
        (
            int(b["logicalBufferId"]),
            int(b.get("startStep", 0)),
            int(b.get("endStep", 0)),
            int(b.get("offset", 0)),
            int(b["size"]),
            int(b.get("unpaddedSize", 0)),
            b["name"],
            b.get("shapeString", ""),
            b.get("tfOpName", ""),
        )
        for b in blocks
        if b["logicalBufferId"] != -1
    ]
    assert ours == xprof and timeline.left_out_bytes == 0


def spaces() -> list[tuple[str, int, int]]:
    """(file, program key, memory space) of every program with a heap simulation, each space."""
    out = []
    for name, path in FILES.items():
        found = modules(path)
        for key in found:
            assignment = buffers.buffer_assignment(found[key].data)
            assert assignment is not None
            out += [(name, key, c) for c in program.memory_spaces(assignment) if assignment.traces]
    return out


@pytest.mark.parametrize(("name", "key", "color"), spaces())
def test_boxes_fit_their_allocation_and_add_up_to_the_peak(name: str, key: int, color: int) -> None:
    module = modules(FILES[name])[key]
    assignment = buffers.buffer_assignment(module.data)
    assert assignment is not None
    view = program.program_memory(("host", 0), key, module, assignment, color)
    timeline = timeline_of(view)
    if timeline is None:
        return
    sizes = {a.index: a.size for a in assignment.allocations}
    assert all(sizes[b.allocation] == b.size_bytes for b in timeline.bands)
    assert timeline.height_bytes == sum(b.size_bytes for b in timeline.bands)
    for i in range(timeline.boxes):
        band = timeline.bands[timeline.band[i]]
        assert 0 <= timeline.offset_bytes[i] <= band.size_bytes - timeline.size_bytes[i]
        assert 0 <= timeline.start[i] <= timeline.end[i] < timeline.events
    peak_event = view.peak_position - 1  # the event that raised the heap to its peak
    over_peak = [i for i in range(timeline.boxes) if timeline.start[i] <= peak_event < timeline.end[i]]
    assert [i for i in range(timeline.boxes) if timeline.at_peak[i]] == over_peak
    assert sum(timeline.size_bytes[i] for i in over_peak) == view.temporary_peak_bytes
    assert view.whole_program_bytes + sum(timeline.size_bytes[i] for i in over_peak) == view.peak_bytes
    temporaries = [r for r in view.live_at_peak if r.kind == "temporary"]
    assert sorted(r.timeline_box for r in temporaries) == over_peak  # type: ignore[type-var]
    assert all(timeline.buffer_id[r.timeline_box] == r.buffer_id for r in temporaries)  # type: ignore[index]


def test_a_bounded_timeline_keeps_the_live_rows_and_the_largest_boxes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name, module = "jax_cpu_train_step", "jit__normal(10)"
    full = timeline_of(views(name)[module])
    assert full is not None and full.boxes == 23
    monkeypatch.setattr(program_timeline, "TIMELINE_BOXES", 14)
    found = modules(FILES[name])
    (key,) = [k for k in found if f"{found[k].name}({found[k].id})" == module]
    assignment = buffers.buffer_assignment(found[key].data)
    assert assignment is not None
    view = program.program_memory(("host", 0), key, found[key], assignment)
    bounded = timeline_of(view)
    assert bounded is not None and bounded.boxes == 23
    live = {r.buffer_id for r in view.live_at_peak if r.kind == "temporary"}
    area = {
        b: s * max(1, e - st) for b, s, st, e in zip(full.buffer_id, full.size_bytes, full.start, full.end)
    }
    rest = sorted(
        (b for b in full.buffer_id if b not in live), key=lambda b: (-area[b], full.buffer_id.index(b))
    )
    expected = live | set(rest[: 14 - len(live)])
    assert set(bounded.buffer_id) == expected and len(live) == 11 and len(bounded.buffer_id) == 14
    assert bounded.buffer_id == [b for b in full.buffer_id if b in expected]  # XProf's order kept
    size = dict(zip(full.buffer_id, full.size_bytes))
    assert bounded.left_out_bytes == sum(s for b, s in size.items() if b not in expected)
    assert all(
        bounded.buffer_id[r.timeline_box] == r.buffer_id for r in view.live_at_peak if r.kind == "temporary"
    )  # type: ignore[index]
