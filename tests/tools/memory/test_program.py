"""The compiler's view of XLA programs against XProf's memory_viewer on the same real XPlanes.

Programs: every one with a buffer assignment in the JAX CPU capture of tests/data/memory
(PROVENANCE.md) and in the TPU v6e and MI300 XPlanes of tests/data/xplane. XProf's answers
(xprof 2.24.2, `benchmarks/memory_viewer_vs_xprof.py --save`) are in tests/data/memory/xprof/, keyed
by XProf's module name `name(id)`. Beside XProf's figures: the peak equals the sum of the buffers live
at it, and the JAX train step's buffers are the ones its script made.
"""

from __future__ import annotations

import functools
import json
import pathlib

import pytest

from profscope.formats.hlo import buffers
from profscope.formats.hlo.proto import HloModules
from profscope.formats.xplane import decode, hlo
from profscope.tools.memory import program
from profscope.tools.memory.answers import ProgramMemory
from tests.support import DATA_DIR

FILES = {
    "jax_cpu_train_step": DATA_DIR / "memory" / "jax_cpu_train_step.xplane.pb",
    "tpu_v6e_inference": DATA_DIR / "xplane" / "tpu_v6e_inference.xplane.pb",
    "mi300_jax_conv": DATA_DIR / "xplane" / "mi300_jax_conv.xplane.pb",
}
ANCHORS = DATA_DIR / "memory" / "xprof"
MiB = 1 << 20


@functools.cache
def modules(path: pathlib.Path) -> HloModules:
    return HloModules(hlo.hlo_protos(decode.decode_space(path.read_bytes())))


@functools.cache
def views(name: str) -> dict[str, ProgramMemory]:
    """Each program's view, by the module name XProf gives it (its module id or program id)."""
    found = modules(FILES[name])
    xprof = json.loads((ANCHORS / f"{name}.memory_viewer.json").read_text())
    out = {}
    for key in found:
        module = found[key]
        assignment = buffers.buffer_assignment(module.data)
        assert assignment is not None
        names = {f"{module.name}({i % (1 << 64)})" for i in (module.id, key)}
        (xprof_name,) = names & xprof.keys()
        out[xprof_name] = program.program_memory(("host", 0), key, module, assignment)
    assert out.keys() == xprof.keys()
    return out


def cases() -> list[tuple[str, str]]:
    return [
        (name, module)
        for name in FILES
        for module in sorted(json.loads((ANCHORS / f"{name}.memory_viewer.json").read_text()))
    ]


@pytest.mark.parametrize(("name", "module"), cases())
def test_peak_heap_and_live_buffers_match_xprof(name: str, module: str) -> None:
    ours = views(name)[module]
    theirs = json.loads((ANCHORS / f"{name}.memory_viewer.json").read_text())[module]
    assert ours.peak_bytes == round(theirs["peakHeapMib"] * MiB)
    heap = [round(v * MiB) for v in theirs.get("heapSizes", [])]  # absent: no heap simulation
    if heap:
        assert ours.heap.events + 1 == len(heap)  # every program here has fewer than 2,000 events
        assert ours.heap.position == list(range(len(heap))) and ours.heap.bytes == heap
        assert ours.peak_position == theirs.get("peakHeapSizePosition", 0) + 1  # proto3 JSON drops 0
        assert ours.peak_instruction == theirs["hloInstructionNames"][ours.peak_position - 1]
    else:
        assert ours.heap.events == 0 and ours.heap_reason == program.NO_HEAP_TRACE
    unpadded = round(theirs.get("peakUnpaddedHeapMib", 0) * MiB)
    assert ours.temporary_padding_bytes == ours.peak_bytes - unpadded
    listed = {o["logicalBufferId"]: round(o["logicalBufferSizeMib"] * MiB) for o in theirs.get("maxHeap", [])}
    small = listed.pop(-1, 0)
    rows = {r.buffer_id: r.size_bytes for r in ours.live_at_peak}
    assert {b: rows[b] for b in listed} == listed
    assert sum(size for b, size in rows.items() if b not in listed) == small


@pytest.mark.parametrize("name", FILES)
def test_the_peak_is_the_sum_of_the_buffers_live_at_it(name: str) -> None:
    for view in views(name).values():
        assert view.live_at_peak_count == len(view.live_at_peak)
        assert view.peak_bytes == view.live_at_peak_bytes == sum(r.size_bytes for r in view.live_at_peak)
        assert view.peak_bytes == view.whole_program_bytes + view.temporary_peak_bytes
        assert sum(view.bytes_by_kind.values()) == view.peak_bytes
        assert max(view.heap.bytes) == view.peak_bytes


def test_the_jax_train_step_holds_its_activations_at_the_peak() -> None:
    """capture_jax_program.py: a 256→1024→8 MLP, batch 512, float32; params and batch are the
    parameters, the new params the outputs, the 512×1024 activations the temporaries."""
    view = views("jax_cpu_train_step")["jit_train_step(28)"]
    params = {"w1": 256 * 1024, "b1": 1024, "w2": 1024 * 8, "b2": 8}
    batch = {"x": 512 * 256, "y": 512 * 8}
    assert view.bytes_by_kind["parameter"] == 4 * (sum(params.values()) + sum(batch.values()))
    outputs = [r for r in view.live_at_peak if r.kind == "output"]
    arrays = sorted(r.size_bytes for r in outputs if r.opcode != "tuple")
    assert arrays == sorted(4 * n for n in params.values())
    temporaries = [r for r in view.live_at_peak if r.kind == "temporary"]
    assert [(r.shape, r.size_bytes) for r in temporaries] == [("f32[512,1024]{1,0}", 2 * MiB)] * 3
    assert view.temporary_peak_bytes == 6 * MiB and view.padding_bytes == 0
    assert view.name == "jit_train_step" and view.memory_spaces == [0]


def test_a_buffer_is_described_by_the_instruction_that_defines_it() -> None:
    view = views("mi300_jax_conv")["jit_forward_3d_conv(15)"]
    biggest = view.live_at_peak[0]
    assert (biggest.instruction, biggest.opcode, biggest.dtype) == (
        "input_transpose_fusion",
        "fusion",
        "bf16",
    )
    assert biggest.shape == "bf16[55862,5120]{1,0}" and biggest.kind == "output"
    assert biggest.size_bytes == biggest.unpadded_bytes == 55862 * 5120 * 2
    assert biggest.op_name == "jit(forward_3d_conv)/conv_general_dilated"
