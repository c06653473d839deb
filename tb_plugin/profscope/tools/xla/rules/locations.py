"""The code locations of the findings: frames counted with the role they played, the source lines
where a new tensor size entered, and bare IR file names resolved to the full paths the logs show."""

from __future__ import annotations

from collections import Counter as Tally

import msgspec

from profscope.formats.xla.text import Frame
from profscope.tools.xla.answers import XlaFinding, XlaFindingDiff, XlaFrame, XlaLocation
from profscope.tools.xla.rules.context import Context

SIZE_CHANGED_HERE = "a tensor size changed here (count: graph comparisons)"


def _location(frame: XlaFrame, count: int, role: str) -> XlaLocation:
    return XlaLocation(
        function=frame.function, file=frame.file, line=frame.line, label=frame.label, count=count, role=role
    )


def locations(frames: Tally[Frame], role: str) -> list[XlaLocation]:
    """One location per frame, the most frequent first."""
    return [
        XlaLocation(function=f.function, file=f.file, line=f.line, label=f.label(), count=n, role=role)
        for f, n in frames.most_common()
    ]


def origin_locations(diffs: list[XlaFindingDiff]) -> list[XlaLocation]:
    """Source lines where a size entered, counted once per graph comparison that shows it."""
    counts: Tally[str] = Tally()
    first: dict[str, XlaFrame] = {}
    for d in diffs:
        labels = set()
        for origin in d.origins:
            if origin.location is not None:
                labels.add(origin.location.label)
                first.setdefault(origin.location.label, origin.location)
        counts.update(labels)
    return [_location(first[label], n, SIZE_CHANGED_HERE) for label, n in counts.most_common()]


def _full_paths(ctx: Context) -> dict[str, str]:
    """File name → full path, for names that appear with exactly one directory in the logs' frames.

    IR node locations (`XLA_IR_DEBUG`) carry only the file name; the trigger frames carry full paths.
    """
    seen: dict[str, set[str]] = {}
    frames = [f for a in ctx.analyses for f in a.frames] + [f for e in ctx.entries for f in e.record.frames]
    for frame in frames:
        if frame.file and "/" in frame.file:
            seen.setdefault(frame.file.rsplit("/", 1)[1], set()).add(frame.file)
    return {name: next(iter(paths)) for name, paths in seen.items() if len(paths) == 1}


def resolve_full_paths(findings: list[XlaFinding], ctx: Context) -> None:
    """Give the locations that name a bare file the full path the logs' frames show for it."""
    full_paths = _full_paths(ctx)
    for finding in findings:
        finding.locations = [_resolve(loc, full_paths) for loc in finding.locations]


def _resolve(location: XlaLocation, full_paths: dict[str, str]) -> XlaLocation:
    file = location.file
    if not file or "/" in file or file not in full_paths:
        return location
    full = full_paths[file]
    return msgspec.structs.replace(
        location, file=full, label=f"{location.function} ({full}:{location.line})", file_as_logged=file
    )
