"""Each allocator's peak on both sides of a comparison (`analysis.memory_peaks`, the Memory tab's
figures): devices matched by name, the run's order first, then the base's own; run − base and ÷ base
where both sides give the figure."""

from __future__ import annotations

from typing import Any

import msgspec

from profscope.analysis.memory_peaks import DevicePeak
from profscope.tools.compare.answers import CompareMemoryDevice, CompareMemoryOp

NOT_OBSERVED = (
    "memory not observed on either side: PyTorch writes allocator events with profile_memory=True, "
    "TensorFlow with its BFC allocator (GPU, or TF_CPU_ALLOCATOR_USE_BFC=true)"
)


def _side_fields(prefix: str, peak: DevicePeak | None) -> dict[str, Any]:
    """One side's fields of a row (`base_…` or `run_…`); none when the side lacks the device."""
    if peak is None:
        return {}
    fields: dict[str, Any] = {
        "peak_bytes": peak.allocated_bytes,
        "reserved_bytes": peak.reserved_bytes,
        "step": peak.step,
        "op": peak.op,
        "before_capture_bytes": peak.before_capture_bytes,
        "ops": [CompareMemoryOp(o.op, o.bytes, o.count) for o in peak.ops],
    }
    return {f"{prefix}_{k}": msgspec.UNSET if v is None else v for k, v in fields.items()}


def memory_rows(base: list[DevicePeak], run: list[DevicePeak]) -> list[CompareMemoryDevice]:
    """One row per device of either side (module docstring)."""
    base_of, run_of = {p.device: p for p in base}, {p.device: p for p in run}
    names = list(run_of) + [name for name in base_of if name not in run_of]
    rows = []
    for name in names:
        b, r = base_of.get(name), run_of.get(name)
        row = CompareMemoryDevice(device=name, **_side_fields("base", b), **_side_fields("run", r))
        if b is not None and r is not None:
            row.delta_bytes = r.allocated_bytes - b.allocated_bytes
            if b.allocated_bytes > 0:
                row.relative = row.delta_bytes / b.allocated_bytes
            if b.reserved_bytes is not None and r.reserved_bytes is not None:
                row.reserved_delta_bytes = r.reserved_bytes - b.reserved_bytes
        rows.append(row)
    return rows
