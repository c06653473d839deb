"""profscope's allocator timeline of an XPlane next to XProf's memory_profile on the same file.

Usage:
    python -m venv XPROF_VENV && XPROF_VENV/bin/pip install xprof   # once, any folder
    .venv/bin/python benchmarks/memory_profile_vs_xprof.py [FILE.xplane.pb]
        [--xprof-python XPROF_VENV/bin/python] [--save DIR]

`--xprof-python` defaults to $XPROF_PYTHON; the script runs itself under it with `--xprof-side` (XProf's
`xspace_to_tool_data(…, "memory_profile", {})` on a copy of the file in a temporary logdir). profscope's
side runs here: the XPlane reader, `tools.memory.xplane_records` and `tools.memory.analysis` on the same
file. Per allocator (memory id) it checks, printing "ok" or both values:
- peak bytes in use: XProf `profileSummary.peakStats.heapAllocatedBytes` against `peak.allocated_bytes`;
- when, from the allocator's first event: the first of XProf's `sampledTimelineSnapshots` at the peak
  (its `timeOffsetPs`) minus the first snapshot's, against our peak time minus our first event's;
- the op at the peak: that snapshot's `activityMetadata.tfOpName` against `peak.op` (both the event's
  own `tf_op`);
- the events: XProf samples its timeline to at most 1,000 snapshots, so only "at least" is checked.
`--save DIR` writes XProf's answer, cut to what is compared (per allocator its `profileSummary`, the
peak snapshot, the first snapshot's `timeOffsetPs` and how many snapshots the timeline has; XProf's
objects as it gave them), to DIR/<file name without .xplane.pb>.memory_profile.json.
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


def profscope_side(path: pathlib.Path) -> dict[str, Any]:
    import fsspec

    from profscope.analysis import events, steps
    from profscope.engine.lod import index as lod
    from profscope.formats.xplane import reader
    from profscope.tools.memory import analysis, xplane_records

    trace = reader.read(str(path), fsspec.filesystem("file"))
    host = events.build(path.name, trace, lod.build(trace).self_ps)
    found, _ = xplane_records.read(host)
    found_steps = steps.find(host, None)
    clock = analysis.HostClock(path.name, 0, 0)
    return {d.label: analysis.device(d, host, found_steps, clock, d.label) for d in found}


def xprof_digest(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """XProf's answer cut to what is compared, per allocator (its own objects, unchanged)."""
    out = {}
    for name, allocator in answer["memoryProfilePerAllocator"].items():
        summary = allocator["profileSummary"]
        peak = int(summary["peakStats"]["heapAllocatedBytes"])
        timeline = allocator["sampledTimelineSnapshots"]
        at = next(s for s in timeline if int(s["aggregationStats"]["heapAllocatedBytes"]) == peak)
        out[name] = {
            "profileSummary": summary,
            "peakSnapshot": at,
            "firstTimeOffsetPs": timeline[0]["timeOffsetPs"],
            "sampledSnapshots": len(timeline),
        }
    return out


def compare(name: str, xprof: dict[str, Any], mine: Any) -> int:
    """Prints each figure of one allocator; how many differ."""
    at = xprof["peakSnapshot"]
    checks = {
        "peak bytes": (
            mine.peak.allocated_bytes,
            int(xprof["profileSummary"]["peakStats"]["heapAllocatedBytes"]),
        ),
        "peak time from the first event (ps)": (
            round((mine.peak.time_ns - mine.start_ns) * 1000),
            int(at["timeOffsetPs"]) - int(xprof["firstTimeOffsetPs"]),
        ),
        "op at the peak": (mine.peak.op or None, at["activityMetadata"].get("tfOpName") or None),
    }
    print(f" {name}:")
    failures = 0
    for label, (a, b) in checks.items():
        print(f"  {label}: {'ok' if a == b else f'profscope {a!r} · XProf {b!r}'}")
        failures += a != b
    snapshots = xprof["sampledSnapshots"]
    enough = mine.events >= snapshots
    print(
        f"  events: profscope {mine.events}, XProf's sampled timeline {snapshots}: {'ok' if enough else 'fewer'}"
    )
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
        text = json.dumps(theirs, sort_keys=True, indent=1) + "\n"
        (args.save / f"{args.file.name.removesuffix('.xplane.pb')}.memory_profile.json").write_text(text)
    ours = profscope_side(args.file)
    print(f"{args.file.name}: XProf allocators {sorted(theirs)}, profscope {sorted(ours)}")
    failures = int(sorted(theirs) != sorted(ours))
    for name in sorted(set(theirs) & set(ours)):
        failures += compare(name, theirs[name], ours[name])
    print("all figures agree" if not failures else f"{failures} figures differ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
