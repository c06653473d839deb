"""Device peaks of an XPlane's devices, and the user's overrides from `roofline.json`.

TPU: the TensorCore plane's stats, as the profiler wrote them: `peak_teraflops_per_second` (one
figure, named "peak": the profile names no precision),
`peak_{hbm,cmem_rd,cmem_wr,vmem_rd,vmem_wr,sram_rd,sram_wr}_bw_gigabytes_per_second` (GB/s = 10⁹ B/s),
`has_megacore`. A level whose peak is 0 does not exist on the chip and gets no roof. Per unit
(`with_tpu_units`, the roofs of `hlo_roofs.tpu_instruction_roofs`): where the parts table knows the
chip and its datasheet bf16 figure is the profile's peak (within 0.1 %), that peak is the MXU's bf16
peak and is named "bf16"; the datasheet's other MXU figures (int8, fp8) are added. From the bf16
peak P (`tpu_derived`):
    "bf16_3x (modelled)" = P ÷ 3, "bf16_6x (modelled)" = P ÷ 6   (f32 matrix work at precision HIGH /
        HIGHEST runs as 3 / 6 bf16 passes: a modelled effective peak, no datasheet gives it),
    "vector (MXU bf16 peak)" = P   (no VPU peak is published, `TPU_NO_VPU_PEAK`: vector ops are
        measured against the MXU's bf16 peak, as XProf measures every TPU op, and labelled so).
A chip the table does not know, or whose profile peak is not its datasheet bf16 figure, keeps the
one unnamed "peak" and every op is against it (`TPU_ONE_PEAK`).

GPU: the plane's stats `clock_rate` [kHz], `core_count` (SMs / CUs), `memory_bandwidth` [B/s],
`compute_cap_major/minor`, `device_vendor`, `gpu_device_name`, and `peak_teraflops_per_second`
when present. A missing FLOP peak is computed as XProf computes it:
    peak FLOP/s = cores × FLOP per core per cycle × clock,
with the dense fp16 matrix figure per SM/CU per cycle: Nvidia by compute capability (7.x: 1024,
8.0: 2048, 8.6/8.9: 1024, 9.0: 4096, 10.0: 8192; an unknown capability takes the next lower entry),
AMD by architecture (gfx908/gfx90a: 1024, gfx942: 2048, gfx950: 4096; from `gpu_device_name` when
it is gfxNNN, else compute capability 9.4 → gfx942, 9.5 → gfx950). Shared memory / L1 (LDS) =
cores × bytes per cycle × clock: Nvidia 32 banks × 8 B = 256 (64 before compute capability 3), AMD
128 (gfx908/90a/942) or 256 (gfx950). Without a vendor stat nothing is computed: the figure is
unknown, never guessed. The parts table (`parts.match_part`) completes them with datasheet figures (`with_parts_table`);
where the datasheet gives bf16 and fp16 one peak (every part it lists with both), the profile's fp16
figure is the bf16 peak too, so a bf16 op's roof is the profile's figure, not the datasheet's.

Overrides: `roofline.json` in the run's folder, read through the logdir's filesystem:
    {"name": "TPU v6e", "roof_precision": "bf16",
     "flops": {"bf16": 9.18e14}, "bandwidth": {"hbm": 1.64e12, "vmem_read": 2.3e13}}
FLOP/s and B/s; bandwidth keys are the memory levels of `model.LEVELS`. Every figure given replaces
the profile's, with source "user override"; figures not given keep theirs.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import fsspec

from profscope.tools.roofline import parts
from profscope.tools.roofline.hlo_roofs import TPU_PASSES, TPU_VECTOR, modelled_passes_roof
from profscope.tools.roofline.model import (
    BANDWIDTH_UNIT,
    FLOP_UNIT,
    LEVELS,
    PEAK_FROM_PROFILE,
    PEAK_USER_OVERRIDE,
    DevicePeaks,
    Peak,
    computed_from_profile,
)

OVERRIDE_FILE = "roofline.json"
GIGA = 1e9
TERA = 1e12
# Dense fp16 matrix FLOP per SM per cycle by Nvidia compute capability (the larger of the CUDA-core
# and tensor-core figures, as XProf takes it).
NVIDIA_FLOPS_PER_SM_CYCLE = {
    (7, 0): 1024,
    (8, 0): 2048,
    (8, 6): 1024,
    (8, 9): 1024,
    (9, 0): 4096,
    (10, 0): 8192,
}
AMD_FLOPS_PER_CU_CYCLE = {"gfx908": 1024, "gfx90a": 1024, "gfx942": 2048, "gfx950": 4096}
AMD_LDS_BYTES_PER_CU_CYCLE = {"gfx908": 128, "gfx90a": 128, "gfx942": 128, "gfx950": 256}
AMD_ARCH_BY_CAPABILITY = {(9, 4): "gfx942", (9, 5): "gfx950"}
NVIDIA_SHARED_BYTES_PER_SM_CYCLE = 32 * 8
TPU_LEVEL_STATS = {
    "hbm": "peak_hbm_bw_gigabytes_per_second",
    "cmem_read": "peak_cmem_rd_bw_gigabytes_per_second",
    "cmem_write": "peak_cmem_wr_bw_gigabytes_per_second",
    "vmem_read": "peak_vmem_rd_bw_gigabytes_per_second",
    "vmem_write": "peak_vmem_wr_bw_gigabytes_per_second",
    "sram_read": "peak_sram_rd_bw_gigabytes_per_second",
    "sram_write": "peak_sram_wr_bw_gigabytes_per_second",
}
# XLA's ROCm collector reports memory_bandwidth as 2 × memory clock × bus width, about half the
# HBM3 datasheet figure of these parts.
AMD_HALVED_HBM = frozenset({"gfx942", "gfx950"})
HALVED_NOTE = "the profile's HBM bandwidth"
# Why every TPU op is against one roof (the chip's peak cannot be named, `with_tpu_units`).
TPU_ONE_PEAK = (
    "the TPU profile gives one FLOP peak (peak_teraflops_per_second) and names no precision, and the "
    "parts table does not identify it as the chip's bf16 figure: every op is measured against it, vector "
    "work included"
)
TPU_NO_VPU_PEAK = (
    "no peak of the TPU's vector unit (VPU) is published: vector ops (elementwise, reductions, "
    "collectives' adds) are measured against the MXU's bf16 peak, as XProf measures every TPU op, so "
    "their FLOP utilization understates the vector unit's; their roof is named 'vector (MXU bf16 peak)'"
)
TPU_VECTOR_SOURCE = "the MXU's bf16 peak: no VPU peak is published (see the warnings)"
TPU_SAME_FIGURE = 1e-3  # the profile's peak is the datasheet's bf16 figure within this relative difference
# The source's addition when the profile's fp16 figure is also the bf16 peak.
BF16_AT_FP16 = "bf16 at the fp16 rate, as the part's datasheet gives both"
# The compute roof when the profile names no precision: dense 16-bit matrix math first, as XProf.
ROOF_PRECISIONS = ("fp16", "bf16", "tf32", "fp32")
_GFX = re.compile(r"^gfx[0-9a-f]+$")


class OverrideError(ValueError):
    """`roofline.json` exists but cannot be used; the message says why."""


def tpu_peaks(stats: dict[str, Any]) -> DevicePeaks:
    """A TensorCore's peaks from its plane stats."""
    flops: dict[str, Peak] = {}
    notes: list[str] = []
    tflops = _number(stats.get("peak_teraflops_per_second"))
    if tflops:
        flops["peak"] = Peak(tflops * TERA, FLOP_UNIT, PEAK_FROM_PROFILE)
        notes.append(TPU_ONE_PEAK)
    else:
        notes.append("the profile gives no peak FLOP rate: no compute roof")
    bandwidth = {}
    for level, stat in TPU_LEVEL_STATS.items():
        value = _number(stats.get(stat))
        if value:
            bandwidth[level] = Peak(value * GIGA, BANDWIDTH_UNIT, PEAK_FROM_PROFILE)
    if "hbm" not in bandwidth:
        notes.append("the profile gives no HBM bandwidth: no HBM roof")
    attributes = {}
    if "has_megacore" in stats:
        attributes["megacore"] = "yes" if stats["has_megacore"] else "no"
    name = str(stats.get("device_type_string") or "TPU")
    return DevicePeaks(name, flops, bandwidth, attributes=attributes, notes=tuple(notes))


def with_tpu_units(peaks: DevicePeaks, stats: dict[str, Any]) -> DevicePeaks:
    """A TensorCore's peaks per unit and format (module docstring): the profile's one figure named
    bf16 where the datasheet's bf16 peak is that figure, the datasheet's int8 / fp8 added, and the
    modelled multi-pass and vector roofs derived. Unchanged where the chip or its peak is not known."""
    part = parts.match_part(stats)
    profile = peaks.flops.get("peak")
    if part is None or profile is None:
        return peaks
    table = part.peaks()
    bf16 = table.flops.get("bf16")
    if bf16 is None or abs(profile.value - bf16.value) > TPU_SAME_FIGURE * bf16.value:
        return peaks
    named = dataclasses.replace(
        profile,
        source=f"{profile.source}; the MXU's bf16 peak ({bf16.source.removeprefix('from the parts table: ')})",
    )
    flops = {"bf16": named, **{k: p for k, p in table.flops.items() if k != "bf16"}}
    notes = tuple(n for n in peaks.notes if n != TPU_ONE_PEAK) + (TPU_NO_VPU_PEAK,)
    attributes = {**table.attributes, **peaks.attributes}
    return _derived(DevicePeaks(peaks.name, flops, peaks.bandwidth, "bf16", attributes, notes), named)


def tpu_derived(peaks: DevicePeaks) -> DevicePeaks:
    """Peaks that have the TPU roofs (`with_tpu_units`) with them recomputed from the current bf16
    figure (a user's override included); figures the user gave themselves are kept."""
    bf16 = peaks.flops.get("bf16")
    return _derived(peaks, bf16) if bf16 is not None and TPU_VECTOR in peaks.flops else peaks


def _derived(peaks: DevicePeaks, bf16: Peak) -> DevicePeaks:
    """The peaks with the roofs derived from the bf16 peak (module docstring)."""
    derived = {TPU_VECTOR: Peak(bf16.value, FLOP_UNIT, TPU_VECTOR_SOURCE)}
    for passes in sorted(set(TPU_PASSES.values()) - {1}):
        how = f"modelled: bf16 peak ÷ {passes} (an f32 matrix op at this precision runs as {passes} bf16 passes)"
        derived[modelled_passes_roof(passes)] = Peak(bf16.value / passes, FLOP_UNIT, how)
    flops = dict(peaks.flops)
    for key, peak in derived.items():
        if key not in flops or flops[key].source != PEAK_USER_OVERRIDE:
            flops[key] = peak
    return dataclasses.replace(peaks, flops=flops)


def gpu_peaks(stats: dict[str, Any]) -> DevicePeaks:
    """A GPU's peaks from its plane stats, computed where the profile gives the parts."""
    vendor = str(stats.get("device_vendor") or "")
    cores, clock_khz = _number(stats.get("core_count")), _number(stats.get("clock_rate"))
    clock_ghz = clock_khz / 1e6 if clock_khz else 0.0
    capability = (int(_number(stats.get("compute_cap_major"))), int(_number(stats.get("compute_cap_minor"))))
    arch = _amd_arch(stats, capability) if vendor.lower().startswith("amd") else ""
    flops: dict[str, Peak] = {}
    bandwidth: dict[str, Peak] = {}
    notes: list[str] = []
    tflops = _number(stats.get("peak_teraflops_per_second"))
    per_cycle = _flops_per_core_cycle(vendor, capability, arch)
    if tflops:
        flops["fp16"] = Peak(tflops * TERA, FLOP_UNIT, PEAK_FROM_PROFILE)
    elif per_cycle and cores and clock_ghz:
        how = f"{cores:g} cores × {per_cycle} FLOP/cycle ({_chip(vendor, capability, arch)} dense fp16 matrix) × {clock_ghz:g} GHz"
        flops["fp16"] = Peak(cores * per_cycle * clock_ghz * GIGA, FLOP_UNIT, computed_from_profile(how))
    else:
        notes.append(f"peak FLOP rate unknown: {_why_no_flops(vendor, cores, clock_ghz, capability, arch)}")
    memory = _number(stats.get("memory_bandwidth"))
    if memory:
        bandwidth["hbm"] = Peak(memory, BANDWIDTH_UNIT, PEAK_FROM_PROFILE)
        if arch in AMD_HALVED_HBM:
            notes.append(
                f"{HALVED_NOTE} ({memory / GIGA:g} GB/s) follows XLA's ROCm rule 2 × memory "
                f"clock × bus width, about half the {arch} datasheet figure; put the datasheet figure "
                f"in {OVERRIDE_FILE} for a true HBM roof"
            )
    else:
        notes.append("the profile gives no memory bandwidth: no HBM roof")
    shared = _shared_bytes_per_core_cycle(vendor, capability, arch)
    if shared and cores and clock_ghz:
        how = f"{cores:g} cores × {shared} B/cycle × {clock_ghz:g} GHz"
        bandwidth["shm_l1"] = Peak(
            cores * shared * clock_ghz * GIGA, BANDWIDTH_UNIT, computed_from_profile(how)
        )
    name = str(stats.get("gpu_device_name") or _chip(vendor, capability, arch) or "GPU")
    attributes = {"vendor": vendor} if vendor else {}
    if cores:
        attributes["cores"] = f"{cores:g}"
    if clock_ghz:
        attributes["clock"] = f"{clock_ghz:g} GHz"
    return DevicePeaks(name, flops, bandwidth, attributes=attributes, notes=tuple(notes))


def with_parts_table(peaks: DevicePeaks, stats: dict[str, Any]) -> DevicePeaks:
    """The profile's peaks completed from the parts table when it knows the part: precisions the
    profile lacks are added, the profile's own figures stay, except an AMD HBM figure that the
    collector halves (see `gpu_peaks`), which the datasheet replaces. The roof: `with_default_roof`."""
    part = parts.match_part(stats)
    if part is None:
        return peaks
    table = part.peaks()
    flops = {**table.flops, **peaks.flops}
    if _same_rate(table, "bf16", "fp16") and "fp16" in peaks.flops and "bf16" not in peaks.flops:
        fp16 = peaks.flops["fp16"]
        flops["bf16"] = dataclasses.replace(fp16, source=f"{fp16.source}; {BF16_AT_FP16}")
    bandwidth = {**table.bandwidth, **peaks.bandwidth}
    notes = [n for n in peaks.notes if not (table.flops and n.startswith("peak FLOP rate unknown"))]
    halved = [n for n in notes if n.startswith(HALVED_NOTE)]
    if halved and "hbm" in table.bandwidth:
        bandwidth["hbm"] = table.bandwidth["hbm"]
        notes = [n for n in notes if not n.startswith(HALVED_NOTE)]
        notes.append(
            f"HBM roof from the datasheet: the profile's {peaks.bandwidth['hbm'].value / GIGA:g} GB/s follows "
            "XLA's ROCm rule 2 × memory clock × bus width, about half the part's bandwidth"
        )
    notes += [n for n in table.notes if n not in notes]
    attributes = {**table.attributes, **peaks.attributes}
    return with_default_roof(
        DevicePeaks(table.name, flops, bandwidth, peaks.roof_precision, attributes, tuple(notes))
    )


def _same_rate(table: DevicePeaks, a: str, b: str) -> bool:
    """Whether the part's datasheet gives precisions `a` and `b` one peak."""
    return a in table.flops and b in table.flops and table.flops[a].value == table.flops[b].value


def with_default_roof(peaks: DevicePeaks) -> DevicePeaks:
    """The peaks with the compute roof set, when they name none, to the first of `ROOF_PRECISIONS`
    they know (never simply the largest figure: an fp8 or int8 peak is no roof for 16-bit work)."""
    if peaks.roof_precision is not None:
        return peaks
    roof = next((p for p in ROOF_PRECISIONS if p in peaks.flops), None)
    return dataclasses.replace(peaks, roof_precision=roof) if roof else peaks


def read_override(fs: fsspec.AbstractFileSystem | None, folder: str | None) -> dict[str, Any] | None:
    """The run's `roofline.json`, None when there is none; raises OverrideError when unusable."""
    if fs is None or folder is None:
        return None
    path = f"{folder.rstrip('/')}/{OVERRIDE_FILE}"
    try:
        if not fs.isfile(path):
            return None
        with fs.open(path, "rb") as handle:
            data = json.loads(handle.read())
    except (OSError, ValueError) as e:
        raise OverrideError(f"{OVERRIDE_FILE}: cannot read it ({e})") from e
    if not isinstance(data, dict):
        raise OverrideError(f"{OVERRIDE_FILE}: expected a JSON object")
    for key in ("flops", "bandwidth"):
        table = data.get(key, {})
        if not isinstance(table, dict) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in table.values()
        ):
            raise OverrideError(f"{OVERRIDE_FILE}: {key!r} must map names to positive numbers")
    unknown = set(data.get("bandwidth", {})) - set(LEVELS)
    if unknown:
        raise OverrideError(
            f"{OVERRIDE_FILE}: unknown memory levels {sorted(unknown)} (known: {list(LEVELS)})"
        )
    return data


def apply_override(peaks: DevicePeaks, override: dict[str, Any] | None) -> DevicePeaks:
    """The peaks with the user's figures in place of the profile's."""
    if not override:
        return peaks
    flops = dict(peaks.flops)
    flops.update(
        {k: Peak(float(v), FLOP_UNIT, PEAK_USER_OVERRIDE) for k, v in override.get("flops", {}).items()}
    )
    bandwidth = dict(peaks.bandwidth)
    bandwidth.update(
        {
            k: Peak(float(v), BANDWIDTH_UNIT, PEAK_USER_OVERRIDE)
            for k, v in override.get("bandwidth", {}).items()
        }
    )
    overridden = set(override.get("flops", {})) | set(override.get("bandwidth", {}))
    notes = tuple(
        n
        for n in peaks.notes
        if n == TPU_NO_VPU_PEAK
        or not (("FLOP" in n and override.get("flops")) or ("hbm" in overridden and "HBM" in n))
    )
    roof = override.get("roof_precision") or peaks.roof_precision
    return DevicePeaks(
        str(override.get("name") or peaks.name), flops, bandwidth, roof, peaks.attributes, notes
    )


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if number > 0 else 0.0


def _amd_arch(stats: dict[str, Any], capability: tuple[int, int]) -> str:
    name = str(stats.get("gpu_device_name") or "").split(":")[0]
    return name if _GFX.match(name) else AMD_ARCH_BY_CAPABILITY.get(capability, "")


def _flops_per_core_cycle(vendor: str, capability: tuple[int, int], arch: str) -> int:
    if vendor.lower().startswith("nvidia") and capability >= (7, 0):
        known = [cc for cc in NVIDIA_FLOPS_PER_SM_CYCLE if cc <= capability]
        return NVIDIA_FLOPS_PER_SM_CYCLE[max(known)] if known else 0
    if vendor.lower().startswith("amd"):
        return AMD_FLOPS_PER_CU_CYCLE.get(arch, 0)
    return 0


def _shared_bytes_per_core_cycle(vendor: str, capability: tuple[int, int], arch: str) -> int:
    if vendor.lower().startswith("nvidia"):
        return 64 if capability[0] <= 2 else NVIDIA_SHARED_BYTES_PER_SM_CYCLE
    if vendor.lower().startswith("amd"):
        return AMD_LDS_BYTES_PER_CU_CYCLE.get(arch, 0)
    return 0


def _chip(vendor: str, capability: tuple[int, int], arch: str) -> str:
    if arch:
        return f"AMD {arch}"
    if vendor:
        return f"{vendor} compute capability {capability[0]}.{capability[1]}"
    return ""


def _why_no_flops(vendor: str, cores: float, clock_ghz: float, capability: tuple[int, int], arch: str) -> str:
    if not vendor:
        return "the profile names no device vendor, so the FLOP-per-cycle table cannot be chosen"
    if not cores or not clock_ghz:
        return "the profile gives no core count or clock"
    if vendor.lower().startswith("amd"):
        return f"AMD architecture {arch or 'unknown'} is not in the FLOP-per-cycle table"
    if vendor.lower().startswith("nvidia"):
        return f"compute capability {capability[0]}.{capability[1]} is below the table's first entry (7.0)"
    return f"vendor {vendor!r} has no FLOP-per-cycle table"
