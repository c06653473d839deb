"""profscope's allocator timeline of an XPlane next to XProf's memory_profile on the same file.

Usage:
    python -m venv XPROF_VENV && XPROF_VENV/bin/pip install xprof   # once, any folder
    .venv/bin/python benchmarks/memory_profile_vs_xprof.py [FILE.xplane.pb]
        [--xprof-python XPROF_VENV/bin/python] [--save DIR]

`--xprof-python` defaults to $XPROF_PYTHON; the script runs itself under it with `--xprof-side` (XProf's
`xspace_to_tool_data(…, "memory_profile", {})` on a copy of the file in a temporary logdir). profscope's
side runs here: the XPlane reader, `analysis.memory_xplane_records` and `tools.memory.analysis` on the same
file. Per allocator (memory id) it checks, printing "ok" or both values:
- peak bytes in use: XProf `profileSummary.peakStats.heapAllocatedBytes` against `peak.allocated_bytes`;
- when, from the allocator's first event: the first of XProf's `sampledTimelineSnapshots` at the peak
  (its `timeOffsetPs`) minus the first snapshot's, against our peak time minus our first event's;
- the op at the peak: that snapshot's `activityMetadata.tfOpName` against `peak.op` (both the event's
  own `tf_op`);
- the events: XProf samples its timeline to at most 1,000 snapshots, so only "at least" is checked;
- the summary card (`allocator_stats`, `tools/memory/allocator_stats.py`): memory capacity, free bytes
  and fragmentation at the peak, stack (reserved) bytes at the peak and the peak of stack + heap
  against XProf's `memoryCapacity` and `peakStats`; the lifetime peak against the highest
  `peakBytesInUse` of XProf's timeline when it kept every event (XProf's own
  `peakBytesUsageLifetime`, the last event in line order, is printed beside it: see the module
  docstring of allocator_stats for why it can be lower); the highest fragmentation likewise;
- the fragmentation curve: every snapshot of XProf's timeline (time, fragmentation) against the
  fragmentation after our event at that time (any of them when several share the time), and, when
  XProf kept every event, the values alone (XProf's times are offsets from the start of each event's
  own thread line, so they disagree where an allocator's lines start at different times: the MI300
  XPlane);
- the peak's step (`peak_step`, tools/memory/peak_step.py): XProf's step id, its "unused preallocated
  device memory" and the occurrences of its rows against ours; the blocks of the rows that differ are
  printed (not counted: XProf takes its peak at the last event reaching it, we at the first);
- when the allocator reports reserved ("stack") bytes (the TPU XPlane), XProf's peak is stack + heap
  and the Memory tab's the heap's: the figures at the peak are not compared, only the peak of
  stack + heap.
XProf names a TPU chip's allocator by its number ("0"); profscope "device 0".
`--save DIR` writes XProf's answer, cut to what is compared (per allocator its `profileSummary`, the
peak snapshot, the first snapshot's `timeOffsetPs`, how many snapshots the timeline has, the highest
`peakBytesInUse` and fragmentation over it, its curve as [time offset ps from the first snapshot,
fragmentation] pairs, and its breakdown of the peak's step: step id, unused preallocated bytes and
rows; XProf's objects as it gave them), to DIR/<file name without
.xplane.pb>.memory_profile.json.
Default file: tests/data/memory/tf_keras_cpu_bfc.xplane.pb.
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
DEFAULT_FILE = REPO / "tests/data/memory/tf_keras_cpu_bfc.xplane.pb"


def xprof_side(path: str) -> dict[str, Any]:
    from xprof.convert import raw_to_tool_data  # the XProf venv only

    with tempfile.TemporaryDirectory() as logdir:
        session = pathlib.Path(logdir, "plugins", "profile", "run")
        session.mkdir(parents=True)
        copy = session / "host.xplane.pb"
        shutil.copyfile(path, copy)
        data, _ = raw_to_tool_data.xspace_to_tool_data([str(copy)], "memory_profile", {})
        return json.loads(data)


def profscope_side(path: pathlib.Path) -> dict[str, tuple[Any, Any]]:
    """Per allocator label: (its `MemoryDevice`, its `MemoryRecords`)."""
    import fsspec

    from profscope.analysis import events, steps
    from profscope.analysis import memory_xplane_records as xplane_records
    from profscope.engine.lod import index as lod
    from profscope.formats.xplane import reader
    from profscope.tools.memory import analysis

    trace = reader.read(str(path), fsspec.filesystem("file"))
    host = events.build(path.name, trace, lod.build(trace).self_ps)
    found, _ = xplane_records.read(host)
    found_steps = steps.find(host, None)
    clock = analysis.HostClock(path.name, 0, 0)
    return {d.label: (analysis.device(d, host, found_steps, clock, d.label), d) for d in found}


def xprof_digest(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """XProf's answer cut to what is compared, per allocator (its own objects, unchanged)."""
    out = {}
    for name, allocator in answer["memoryProfilePerAllocator"].items():
        summary = allocator["profileSummary"]
        peak = int(summary["peakStats"]["heapAllocatedBytes"])
        timeline = allocator["sampledTimelineSnapshots"]
        at = next(s for s in timeline if int(s["aggregationStats"]["heapAllocatedBytes"]) == peak)
        first = int(timeline[0]["timeOffsetPs"])
        out[name] = {
            "profileSummary": summary,
            "peakSnapshot": at,
            "firstTimeOffsetPs": timeline[0]["timeOffsetPs"],
            "sampledSnapshots": len(timeline),
            "timelinePeakBytesInUse": max(int(s["aggregationStats"]["peakBytesInUse"]) for s in timeline),
            "timelinePeakFragmentation": max(s["aggregationStats"]["fragmentation"] for s in timeline),
            "fragmentationCurve": [
                [int(s["timeOffsetPs"]) - first, s["aggregationStats"]["fragmentation"]] for s in timeline
            ],
            "peakStepBreakdown": peak_step_breakdown(allocator),
        }
    return out


def peak_step_breakdown(allocator: dict[str, Any]) -> dict[str, Any]:
    """XProf's table of the peak's step: its step id, its "unused preallocated device memory" and its
    rows of blocks as [allocation bytes, op, region, dtype, shape, occurrences], in its order."""
    snapshots = allocator["memoryProfileSnapshots"]
    special = allocator.get("specialAllocations", [])
    rows = []
    for row in allocator.get("activeAllocations", []):
        if int(row["snapshotIndex"]) < 0:
            continue
        meta = snapshots[int(row["snapshotIndex"])]["activityMetadata"]
        dtype = meta.get("dataType", "")
        rows.append(
            [
                int(meta.get("allocationBytes", 0)),
                meta.get("tfOpName", ""),
                meta.get("regionType", ""),
                "" if dtype == "INVALID" else dtype,
                meta.get("tensorShape", ""),
                int(row["numOccurrences"]),
            ]
        )
    unused = [
        int(s["allocationBytes"]) for s in special if s["tfOpName"] == "unused preallocated device memory"
    ]
    return {
        "stepId": int(special[0]["stepId"]) if special else None,
        "unusedPreallocatedBytes": sum(unused),
        "rows": rows,
    }


def block_differences(xprof: dict[str, Any], mine: Any) -> tuple[int, int | None]:
    """Blocks of our peak step's rows XProf does not list, and of XProf's we do not (None when our
    rows are cut to the largest: then only ours are checked)."""
    from collections import Counter

    theirs: Counter[tuple[Any, ...]] = Counter()
    for row in xprof["rows"]:  # XProf keeps apart rows that differ in requested bytes only
        theirs[tuple(row[:5])] += row[5]
    step = mine.peak_step
    ours = Counter(
        {(r.size_bytes, r.op or "", r.region or "", r.dtype or "", r.shape or ""): r.count for r in step.rows}
    )
    missing = sum((theirs - ours).values()) if sum(ours.values()) == step.count else None
    return sum((ours - theirs).values()), missing


def saved_text(digest: dict[str, dict[str, Any]]) -> str:
    """The digest as indented JSON, each fragmentation curve and each row list of the peak's step on
    one line (thousands of pairs, hundreds of rows)."""
    compact: dict[str, str] = {}

    def placeholder(value: Any) -> str:
        key = f"@compact{len(compact)}@"
        compact[key] = json.dumps(value, separators=(",", ":"))
        return key

    shown = {
        name: {
            **allocator,
            "fragmentationCurve": placeholder(allocator["fragmentationCurve"]),
            "peakStepBreakdown": {
                **allocator["peakStepBreakdown"],
                "rows": placeholder(allocator["peakStepBreakdown"]["rows"]),
            },
        }
        for name, allocator in digest.items()
    }
    text = json.dumps(shown, sort_keys=True, indent=1)
    for key, value in compact.items():
        text = text.replace(json.dumps(key), value, 1)
    return text + "\n"


def our_name(xprof_name: str) -> str:
    """XProf's memory id as profscope labels the allocator (a device number is "device N")."""
    return f"device {xprof_name}" if xprof_name.isdigit() else xprof_name


def curve_mismatches(xprof: dict[str, Any], records: Any) -> int:
    """XProf's fragmentation snapshots without an event of ours at that time with that value."""
    start = int(records.time_ps[0])
    fragmentation = records.stats.fragmentation
    at_time: dict[int, set[float]] = {}
    for t, f in zip(records.time_ps.tolist(), fragmentation.tolist()):
        at_time.setdefault(t - start, set()).add(f)
    return sum(f not in at_time.get(t, ()) for t, f in xprof["fragmentationCurve"])


def compare(name: str, xprof: dict[str, Any], mine: Any, records: Any) -> int:
    """Prints each figure of one allocator; how many differ."""
    import msgspec  # the profscope side only

    at = xprof["peakSnapshot"]
    summary, peak_stats = xprof["profileSummary"], xprof["profileSummary"]["peakStats"]
    own = mine.allocator_stats
    every_event = xprof["sampledSnapshots"] == mine.events
    stack = mine.reserved_reason is msgspec.UNSET  # bytes_reserved observed: XProf's peak is stack + heap
    checks = {
        "memory capacity": (own.capacity_bytes, int(summary["memoryCapacity"])),
        "peak of stack + heap": (own.peak_in_use_bytes, int(peak_stats["peakBytesInUse"])),
        "fragmentation curve (time from the first event, value): XProf's snapshots we lack": (
            curve_mismatches(xprof, records),
            0,
        ),
    }
    if not stack:  # the heap's peak is XProf's peak: the same event, the same figures there
        checks |= {
            "peak bytes": (mine.peak.allocated_bytes, int(peak_stats["heapAllocatedBytes"])),
            "peak time from the first event (ps)": (
                round((mine.peak.time_ns - mine.start_ns) * 1000),
                int(at["timeOffsetPs"]) - int(xprof["firstTimeOffsetPs"]),
            ),
            "op at the peak": (mine.peak.op or None, at["activityMetadata"].get("tfOpName") or None),
            "free at the peak": (own.free_at_peak_bytes, int(peak_stats["freeMemoryBytes"])),
            "fragmentation at the peak": (own.fragmentation_at_peak, peak_stats["fragmentation"]),
            "stack (reserved) at the peak": (0, int(peak_stats["stackReservedBytes"])),
        }
    if every_event:
        values = sorted(f for _, f in xprof["fragmentationCurve"])
        checks |= {
            "fragmentation values (XProf's timeline: every event)": (
                sorted(records.stats.fragmentation.tolist()) == values,
                True,
            ),
            "lifetime peak (XProf's timeline: every event)": (
                own.lifetime_peak_bytes,
                xprof["timelinePeakBytesInUse"],
            ),
            "highest fragmentation (XProf's timeline: every event)": (
                own.peak_fragmentation,
                xprof["timelinePeakFragmentation"],
            ),
        }
    breakdown = xprof.get("peakStepBreakdown")
    if breakdown and mine.peak_step is not msgspec.UNSET:
        occurrences = sum(row[5] for row in breakdown["rows"])
        checks |= {
            "the peak's step": (mine.peak_step.step, breakdown["stepId"]),
            "held from before the step (XProf's unused preallocated)": (
                mine.peak_step.before_step_bytes,
                breakdown["unusedPreallocatedBytes"],
            ),
            "blocks of the step live at the peak": (mine.peak_step.count, occurrences),
        }
    print(f" {name}:")
    failures = 0
    for label, (a, b) in checks.items():
        print(f"  {label}: {'ok' if a == b else f'profscope {a!r} · XProf {b!r}'}")
        failures += a != b
    if stack:
        print(
            "  at the peak: not compared (bytes_reserved observed: XProf's peak is stack + heap, the Memory "
            "tab's the heap's, two events)"
        )
    if breakdown and mine.peak_step is not msgspec.UNSET:
        extra, missing = block_differences(breakdown, mine)
        print(
            f"  blocks of the step: {extra} of ours XProf lacks, {missing} of XProf's we lack (its peak is its last event)"
        )
    elif breakdown:
        print(f"  the peak's step: {mine.peak_step_reason}; XProf's step {breakdown['stepId']}")
    snapshots = xprof["sampledSnapshots"]
    enough = mine.events >= snapshots
    print(
        f"  events: profscope {mine.events}, XProf's sampled timeline {snapshots}: {'ok' if enough else 'fewer'}"
    )
    lifetime = int(summary["peakBytesUsageLifetime"])
    same = (
        "the same"
        if lifetime == own.lifetime_peak_bytes
        else "lower: its last event in line order, not in time"
    )
    print(f"  XProf's summary lifetime peak {lifetime} ({same}); ours {own.lifetime_peak_bytes}")
    return failures + (not enough)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", nargs="?", type=pathlib.Path, default=DEFAULT_FILE)
    parser.add_argument("--xprof-python", default=os.environ.get("XPROF_PYTHON"))
    parser.add_argument("--save", type=pathlib.Path, help="write XProf's figures into this folder")
    parser.add_argument("--xprof-side", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.xprof_side:
        print(json.dumps(xprof_side(str(args.file))))
        return 0
    if not args.xprof_python:
        parser.error("give --xprof-python or set XPROF_PYTHON (a venv with `pip install xprof`)")
    run = [args.xprof_python, __file__, "--xprof-side", str(args.file)]
    done = subprocess.run(run, capture_output=True, text=True, check=True)
    theirs = xprof_digest(json.loads(done.stdout.strip().splitlines()[-1]))
    if args.save:
        text = saved_text(theirs)
        (args.save / f"{args.file.name.removesuffix('.xplane.pb')}.memory_profile.json").write_text(text)
    ours = profscope_side(args.file)
    print(f"{args.file.name}: XProf allocators {sorted(theirs)}, profscope {sorted(ours)}")
    failures = int(sorted(map(our_name, theirs)) != sorted(ours))
    for name in sorted(theirs):
        if our_name(name) in ours:
            failures += compare(name, theirs[name], *ours[our_name(name)])
    print("all figures agree" if not failures else f"{failures} figures differ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
