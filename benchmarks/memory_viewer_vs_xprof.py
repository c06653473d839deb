"""profscope's compiler memory view next to XProf's memory_viewer, program by program, on the same XPlane.

Usage:
    python -m venv XPROF_VENV && XPROF_VENV/bin/pip install xprof   # once, any folder
    .venv/bin/python benchmarks/memory_viewer_vs_xprof.py [FILE.xplane.pb ...]
        [--xprof-python XPROF_VENV/bin/python] [--memory-space 0] [--save DIR]

`--xprof-python` defaults to $XPROF_PYTHON. The script runs itself under that python with `--xprof-side`
(nothing of profscope is imported there): the XPlane is copied into a fresh temporary logdir
(`<tmp>/plugins/profile/run/`, XProf writes one `<name>(<id>).hlo_proto.pb` per program beside it when
it lists its tools), then `xspace_to_tool_data(…, "memory_viewer", {"module_name": "<name>(<id>)",
"memory_space": …})` answers each program as XProf's TensorBoard plugin does. profscope's side runs in
this process: `formats.hlo.buffers` and `tools.memory.program.program_memory` on the same HloProtos.

Compared per program (XProf's MiB are × 2²⁰ back to bytes, exact for these sizes):
- peak: XProf `peakHeapMib` against `peak_bytes`;
- where: XProf `peakHeapSizePosition` (the event that raised the heap) + 1 against `peak_position` (the
  number of events applied at the peak);
- the heap over program order: every point of XProf `heapSizes` (the heap before each event, then
  after the last) against `heap.bytes` at `heap.position` (all points when the trace has at most
  2,000 events, else the kept ones);
- padding: XProf `peakHeapMib − peakUnpaddedHeapMib` against `temporary_padding_bytes`;
- live at the peak: XProf `maxHeap`'s logical buffer ids against the live rows' `buffer_id`s (XProf
  folds buffers under its small-buffer size into one "small" object, id -1: its size must equal the
  bytes of the rows XProf does not list);
- the allocation timeline: XProf `bufferBlocks` (its bands, id -1: offset, size, last step; its boxes:
  buffer id, start and end step, offset, size, name, shape) against `timeline` (every box when none
  is left out, else the ones listed must be among XProf's).
Each line prints "ok" or both values. `--save DIR` also writes XProf's answers, as it gave them, to
`DIR/<file name without .xplane.pb>.memory_viewer.json` ({XProf's module name: answer}): the anchors
of tests/tools/memory/test_program.py, in tests/data/memory/xprof/. Default files: the TPU v6e and MI300 XPlanes of tests/data/xplane
and the JAX CPU capture of tests/data/memory.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from typing import Any

REPO = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_FILES = [
    REPO / "tests/data/xplane/tpu_v6e_inference.xplane.pb",
    REPO / "tests/data/xplane/mi300_jax_conv.xplane.pb",
    REPO / "tests/data/memory/jax_cpu_train_step.xplane.pb",
]
MIB = 1 << 20


def xprof_side(path: str, memory_space: int) -> dict[str, Any]:
    """XProf's memory_viewer answer for every program of the XPlane, by XProf's module name."""
    from xprof.convert import raw_to_tool_data  # the XProf venv only

    with tempfile.TemporaryDirectory() as logdir:
        session = pathlib.Path(logdir, "plugins", "profile", "run")
        session.mkdir(parents=True)
        copy = session / "host.xplane.pb"
        shutil.copyfile(path, copy)
        raw_to_tool_data.xspace_to_tool_names([str(copy)])  # writes the programs' HloProtos
        out: dict[str, Any] = {}
        for proto in sorted(session.glob("*.hlo_proto.pb")):
            module = proto.name[: -len(".hlo_proto.pb")]
            params = {"module_name": module, "memory_space": str(memory_space)}
            data, _ = raw_to_tool_data.xspace_to_tool_data([str(copy)], "memory_viewer", params)
            out[module] = json.loads(data) if data else None
        return out


def profscope_side(path: pathlib.Path, memory_space: int) -> dict[str, Any]:
    """profscope's view of every program with a buffer assignment, by the names XProf may give it:
    `name(id)` with the HloModuleProto's id or the metadata plane's program id, unsigned (XProf
    names JAX CPU programs by the first, TPU programs by the second)."""
    from profscope.formats.hlo import buffers
    from profscope.formats.hlo.proto import HloModules
    from profscope.formats.xplane import decode, hlo
    from profscope.tools.memory import program

    protos = hlo.hlo_protos(decode.decode_space(path.read_bytes()))
    modules = HloModules(protos)
    out = {}
    for program_id, raw in protos.items():
        assignment = buffers.buffer_assignment(raw)
        if assignment is not None:
            module = modules[program_id]
            names = tuple(f"{module.name}({i % (1 << 64)})" for i in (module.id, program_id))
            out[names] = program.program_memory(("host", 0), program_id, module, assignment, memory_space)
    return out


def _check(label: str, ours: Any, theirs: Any) -> bool:
    same = ours == theirs
    print(f"  {label}: {'ok' if same else f'profscope {ours} · XProf {theirs}'}")
    return same


def compare(ours: Any, theirs: dict[str, Any]) -> bool:
    """One program's figures side by side (module docstring); True when all agree."""
    ok = _check("peak bytes", ours.peak_bytes, round(theirs.get("peakHeapMib", 0) * MIB))
    heap = [round(v * MIB) for v in theirs.get("heapSizes", [])]
    if heap:
        ok &= _check("peak position", ours.peak_position, int(theirs.get("peakHeapSizePosition", 0)) + 1)
        kept = [heap[p] for p in ours.heap.position] if len(heap) == ours.heap.events + 1 else heap
        ok &= _check("heap over program order", ours.heap.bytes, kept)
    else:  # XProf found no heap simulation: only whole-program allocations
        ok &= _check("heap simulation events", ours.heap.events, 0)
    padding = round((theirs.get("peakHeapMib", 0) - theirs.get("peakUnpaddedHeapMib", 0)) * MIB)
    ok &= _check("padding at the peak (heap buffers)", ours.temporary_padding_bytes, padding)
    listed = {int(o["logicalBufferId"]) for o in theirs.get("maxHeap", []) if int(o["logicalBufferId"]) >= 0}
    small = sum(
        round(o["logicalBufferSizeMib"] * MIB)
        for o in theirs.get("maxHeap", [])
        if int(o["logicalBufferId"]) < 0
    )
    rows = {r.buffer_id: r.size_bytes for r in ours.live_at_peak}
    ok &= _check("live buffers XProf lists", sorted(listed - rows.keys()), [])
    if ours.live_at_peak_count == len(ours.live_at_peak):
        ok &= _check("bytes XProf folds as small", sum(s for b, s in rows.items() if b not in listed), small)
    return ok & compare_timeline(ours, theirs)


def boxes(ours: Any) -> tuple[list[tuple[int, int, int]], list[tuple[int, ...]]]:
    """profscope's allocation timeline as XProf writes its `bufferBlocks`: the bands (offset, size,
    end) and the boxes (buffer, start, end, offset, size, name, shape)."""
    timeline = ours.timeline
    if not hasattr(timeline, "bands"):  # UNSET: no band owns a heap-simulator trace
        return [], []
    bands = [(b.base_bytes, b.size_bytes, timeline.events) for b in timeline.bands]
    shown = [
        (
            timeline.buffer_id[i],
            timeline.start[i],
            timeline.end[i],
            timeline.bands[timeline.band[i]].base_bytes + timeline.offset_bytes[i],
            timeline.size_bytes[i],
            timeline.instruction[i],
            timeline.shape[i],
        )
        for i in range(len(timeline.buffer_id))
    ]
    return bands, shown


def compare_timeline(ours: Any, theirs: dict[str, Any]) -> bool:
    """The allocation timeline: XProf's bands (`bufferBlocks` of id -1) and boxes against ours, all of
    them when ours lists all, else ours must be among XProf's (proto3 JSON drops zeros)."""
    blocks = theirs.get("bufferBlocks", [])
    bands = [
        (int(b.get("offset", 0)), int(b["size"]), int(b.get("endStep", 0)))
        for b in blocks
        if int(b["logicalBufferId"]) < 0
    ]
    xprof = [
        (
            int(b["logicalBufferId"]),
            int(b.get("startStep", 0)),
            int(b.get("endStep", 0)),
            int(b.get("offset", 0)),
            int(b["size"]),
            b.get("name", ""),
            b.get("shapeString", ""),
        )
        for b in blocks
        if int(b["logicalBufferId"]) >= 0
    ]
    our_bands, our_boxes = boxes(ours)
    ok = _check("timeline bands", our_bands, bands)
    total = getattr(ours.timeline, "boxes", 0)
    ok &= _check("timeline boxes (count)", total, len(xprof))
    if total == len(our_boxes):
        return ok & _check("timeline boxes", our_boxes, xprof)
    return ok & _check("timeline boxes shown, not XProf's", sorted(set(our_boxes) - set(xprof)), [])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", type=pathlib.Path, default=DEFAULT_FILES)
    parser.add_argument("--xprof-python", default=os.environ.get("XPROF_PYTHON"))
    parser.add_argument("--memory-space", type=int, default=0)
    parser.add_argument("--save", type=pathlib.Path, help="write XProf's answers into this folder")
    parser.add_argument("--xprof-side", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.xprof_side:
        print(json.dumps(xprof_side(str(args.files[0]), args.memory_space)))
        return 0
    if not args.xprof_python:
        parser.error("give --xprof-python or set XPROF_PYTHON (a venv with `pip install xprof`)")
    failures = 0
    for path in args.files:
        run = [
            args.xprof_python,
            __file__,
            "--xprof-side",
            "--memory-space",
            str(args.memory_space),
            str(path),
        ]
        done = subprocess.run(run, capture_output=True, text=True, check=True)
        theirs = json.loads(done.stdout.strip().splitlines()[-1])
        if args.save:
            name = path.name.removesuffix(".xplane.pb")
            text = json.dumps(theirs, sort_keys=True, separators=(",", ":")) + "\n"
            (args.save / f"{name}.memory_viewer.json").write_text(text)
        ours = profscope_side(path, args.memory_space)
        print(f"{path.name}: {len(ours)} programs with a buffer assignment, XProf answered {len(theirs)}")
        for names, mine in sorted(ours.items()):
            found = [name for name in names if name in theirs]
            answer = theirs[found[0]] if found else None
            print(
                f" program {mine.program_id} ({mine.name}), XProf's {found[0] if found else ' or '.join(names)}:"
            )
            if answer is None:
                print("  XProf gave no answer")
                failures += 1
                continue
            failures += not compare(mine, answer)
    print("all programs agree" if not failures else f"{failures} programs differ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
