"""Where XPlane planes and lines go on the timeline: section kinds and sort order.

Host planes first, then devices by ordinal (a TPU's SparseCores right after it), then anything
else; inside a device, XProf's line order, and GPU streams by number, each below its own derived
lines.
"""

from __future__ import annotations

import re

DEVICE_PLANE = re.compile(r"^/device:(GPU|TPU|CUSTOM):(\d+)(?: SparseCore (\d+))?$")
TPU_CORE_PLANE = re.compile(r"^/device:TPU:\d+$")
LINE_ORDER = (
    "Steps",
    "Sparse Core Steps",
    "Launch Stats",
    "XLA Modules",
    "Sparse Core Modules",
    "XLA Ops",
    "Sparse Core Ops",
    "Async XLA Ops",
    "Framework Name Scope",
    "TensorFlow Name Scope",
    "Framework Ops",
    "TensorFlow Ops",
    "Source code",
    "Host Offload Ops",
)
PER_STREAM_LINES = ("XLA Modules", "XLA Ops", "Framework Name Scope", "Framework Ops", "Source code")


def plane_kind(name: str) -> tuple[str, int, int | None]:
    """(section kind, sort index, device ordinal or None) of a plane."""
    if name == "/host:CPU":
        return "cpu", 0, None
    if name.startswith("/host:"):
        return "cpu", 1, None
    match = DEVICE_PLANE.match(name)
    if match:
        family, ordinal, core = match.group(1), int(match.group(2)), match.group(3)
        sort = 1000 + min(ordinal, 10**6) * 100 + (int(core) + 1 if core is not None else 0)
        if family == "GPU":
            return "gpu", sort, ordinal
        if family == "TPU":
            return "tpu", sort, ordinal
        return "other", 10**9 + sort, ordinal
    return "other", 2 * 10**9, None


def line_sort_index(name: str) -> int:
    """Sort index of a device line: XProf's order for known lines, then the rest."""
    return LINE_ORDER.index(name) * 10 + 10 if name in LINE_ORDER else 5000


def stream_sort_index(number: int, line: str | None = None) -> int:
    """GPU streams after the device-wide lines, by number, each under its own derived lines."""
    slot = PER_STREAM_LINES.index(line) if line is not None else len(PER_STREAM_LINES)
    return 10_000 + number * 10 + slot
