"""Check and summarise a captured demo logdir without any ML framework installed.

Why: the capture scripts write binary and compressed files whose validity is not obvious from
their size. This walks a logdir and, for every profile file, decodes enough of it to prove it is
real and well-formed: Kineto JSON is gunzipped and parsed, XPlane protobufs are walked on the wire
(no generated protobuf classes needed) to list planes, lines and event counts, and the PyTorch/XLA
text logs are counted by their section markers. Each file's kind is decided from its name, using the
naming convention the plugin recognises.

Usage: python demo/inspect_logdir.py LOGDIR [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import re
import sys
import zlib
from collections.abc import Iterator

# XSpace / XPlane / XLine field numbers, from tsl/profiler/protobuf/xplane.proto.
_XSPACE_PLANES = 1
_XPLANE_NAME = 2
_XPLANE_LINES = 3
_XPLANE_EVENT_METADATA = 4
_XLINE_EVENTS = 4
_XEVENT_METADATA_ID = 1
_MAP_KEY = 1
_MAP_VALUE = 2
_XEVENT_METADATA_NAME = 2

# The step and phase labels the capture scripts put around their training steps.
DEMO_LABELS = ("train_step", "batch_read", "transfer", "train", "log_accuracy")

_XLA_METRICS_SUFFIX = ".xla_metrics.txt"
_XLA_DEBUG_SUFFIX = ".xla_debug.txt"
_XLA_GRAPHS_RE = re.compile(r"\.xla_graphs\.txt(\.\d+)?$")


class InvalidProfile(ValueError):
    """A profile file that does not decode as the format its name promises."""


@dataclasses.dataclass
class FileSummary:
    """What one profile file holds, as counted by this script."""

    run: str
    path: str
    kind: str
    size: int
    counts: dict[str, int]
    detail: list[str] = dataclasses.field(default_factory=list)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise InvalidProfile("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise InvalidProfile("varint longer than 10 bytes")


def _fields(buf: bytes) -> Iterator[tuple[int, int, bytes | int]]:
    """Yield (field number, wire type, value) for one protobuf message; values of type 2 as bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield number, wire, value
        elif wire == 1:
            pos += 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if pos + length > len(buf):
                raise InvalidProfile(f"field {number} runs past the end of its message")
            yield number, wire, buf[pos : pos + length]
            pos += length
        elif wire == 5:
            pos += 4
        else:
            raise InvalidProfile(f"unsupported wire type {wire} for field {number}")
    if pos != len(buf):
        raise InvalidProfile("message ends inside a fixed-width field")


def _submessages(buf: bytes, number: int) -> Iterator[bytes]:
    for field, wire, value in _fields(buf):
        if field == number and wire == 2:
            assert isinstance(value, bytes)
            yield value


def _string_field(buf: bytes, number: int) -> str:
    for value in _submessages(buf, number):
        return value.decode("utf-8", errors="replace")
    return ""


def _event_names(plane: bytes) -> dict[int, str]:
    """The plane's event metadata map: metadata id -> event name."""
    names = {}
    for entry in _submessages(plane, _XPLANE_EVENT_METADATA):
        key, name = 0, ""
        for field, _wire, value in _fields(entry):
            if field == _MAP_KEY and isinstance(value, int):
                key = value
            elif field == _MAP_VALUE and isinstance(value, bytes):
                name = _string_field(value, _XEVENT_METADATA_NAME)
        names[key] = name
    return names


def summarise_xplane(data: bytes) -> tuple[dict[str, int], list[str]]:
    """Count planes, lines and events of a serialized XSpace; one detail line per plane and demo label."""
    planes = lines = events = 0
    detail = []
    labels: dict[str, int] = {}
    for plane in _submessages(data, _XSPACE_PLANES):
        planes += 1
        names = _event_names(plane)
        plane_lines = plane_events = 0
        for line in _submessages(plane, _XPLANE_LINES):
            plane_lines += 1
            for event in _submessages(line, _XLINE_EVENTS):
                plane_events += 1
                for field, _wire, value in _fields(event):
                    if field == _XEVENT_METADATA_ID and names.get(value) in DEMO_LABELS:
                        labels[names[value]] = labels.get(names[value], 0) + 1
        lines += plane_lines
        events += plane_events
        detail.append(
            f"plane {_string_field(plane, _XPLANE_NAME)!r}: {plane_lines} lines, {plane_events} events"
        )
    if planes == 0:
        raise InvalidProfile("no XPlane in the XSpace")
    detail += [f"annotation {name!r} x{labels[name]}" for name in DEMO_LABELS if name in labels]
    return {"planes": planes, "lines": lines, "events": events}, detail


def summarise_kineto(data: bytes) -> tuple[dict[str, int], list[str]]:
    """Count the trace events of a Kineto/Chrome JSON trace, and our record_function labels."""
    try:
        trace = json.loads(data)
    except ValueError as exc:
        raise InvalidProfile(f"not JSON: {exc}") from exc
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    if not isinstance(events, list) or not events:
        raise InvalidProfile("no traceEvents list")
    labels: dict[str, int] = {}
    for event in events:
        if event.get("cat") == "user_annotation":
            labels[event["name"]] = labels.get(event["name"], 0) + 1
    counts = {"events": len(events), "complete_events": sum(1 for e in events if e.get("ph") == "X")}
    detail = [f"user_annotation {name!r} x{n}" for name, n in sorted(labels.items())]
    return counts, detail


def summarise_xla_text(kind: str, text: str) -> tuple[dict[str, int], list[str]]:
    """Count the sections of a PyTorch/XLA metrics report, debug analysis or saved-graph log."""
    if kind == "xla_metrics":
        counts = {
            "step_reports": len(re.findall(r"^\[MetricsData; step=\d+\]", text, re.M)),
            "metrics": len(re.findall(r"^Metric: ", text, re.M)),
            "counters": len(re.findall(r"^Counter: ", text, re.M)),
        }
        if counts["metrics"] == 0:
            raise InvalidProfile("no 'Metric:' entry")
    elif kind == "xla_debug":
        counts = {
            "compilations": len(re.findall(r"^Compilation Analysis: Compilation Cause", text, re.M)),
            "executions": len(re.findall(r"^Execution Analysis: Execution Cause", text, re.M)),
        }
        if not any(counts.values()):
            raise InvalidProfile("no Compilation or Execution Analysis")
    else:
        counts = {"graphs": len(re.findall(r"^\[ScheduleSyncTensorsGraph\]", text, re.M))}
        if counts["graphs"] == 0:
            raise InvalidProfile("no [ScheduleSyncTensorsGraph] section")
    detail = []
    if kind == "xla_metrics":
        last_report = re.split(r"^\[MetricsData; step=\d+\]\n", text, flags=re.M)[-1]
        compiles = re.search(r"^Metric: CompileTime\n\s+TotalSamples: (\d+)", last_report, re.M)
        if compiles:
            detail.append(f"CompileTime samples (last report): {compiles[1]}")
        fallbacks = re.findall(r"^Counter: (aten::\S+)\n\s+Value: (\d+)", last_report, re.M)
        if fallbacks:
            detail.append("aten:: counters (last report): " + ", ".join(f"{n}={v}" for n, v in fallbacks))
    return counts, detail


def file_kind(name: str) -> str | None:
    """The profile kind a file name announces, or None for files that are not profiles."""
    if name.endswith(".xplane.pb"):
        return "xplane"
    if name.endswith((".pt.trace.json", ".pt.trace.json.gz", ".trace.json.gz", ".trace.json")):
        return "chrome_json"
    if name.endswith(_XLA_METRICS_SUFFIX):
        return "xla_metrics"
    if name.endswith(_XLA_DEBUG_SUFFIX):
        return "xla_debug"
    if _XLA_GRAPHS_RE.search(name):
        return "xla_graphs"
    return None


def summarise_file(logdir: str, path: str) -> FileSummary | None:
    """Decode one file under `logdir`; None when its name is not a profile name."""
    rel = os.path.relpath(path, logdir)
    kind = file_kind(os.path.basename(path))
    if kind is None:
        return None
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        data = gzip.decompress(raw) if path.endswith(".gz") else raw
        if kind == "xplane":
            counts, detail = summarise_xplane(data)
        elif kind == "chrome_json":
            counts, detail = summarise_kineto(data)
        else:
            counts, detail = summarise_xla_text(kind, data.decode("utf-8"))
    except (InvalidProfile, UnicodeDecodeError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise InvalidProfile(f"{path}: not a valid {kind} file: {exc}") from exc
    return FileSummary(rel.split(os.sep)[0], rel, kind, len(raw), counts, detail)


def summarise_logdir(logdir: str) -> list[FileSummary]:
    """Summaries of every profile file under `logdir`, sorted by path."""
    summaries = []
    for root, dirs, files in os.walk(logdir):
        dirs.sort()
        for name in sorted(files):
            summary = summarise_file(logdir, os.path.join(root, name))
            if summary is not None:
                summaries.append(summary)
    return summaries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logdir")
    parser.add_argument("--json", action="store_true", help="print one JSON object per file")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.logdir):
        parser.error(f"{args.logdir} is not a directory")
    try:
        summaries = summarise_logdir(args.logdir)
    except InvalidProfile as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for s in summaries:
        if args.json:
            print(json.dumps(dataclasses.asdict(s)))
            continue
        counts = ", ".join(f"{k}={v}" for k, v in s.counts.items())
        print(f"{s.path}  [{s.kind}, {s.size} bytes]  {counts}")
        for line in s.detail:
            print(f"    {line}")
    if not summaries:
        print(f"error: no profile files under {args.logdir}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
