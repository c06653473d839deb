"""Datasheet peaks of common accelerators, and which part a profiled device is.

Every figure is the dense peak (no 2:4 structured sparsity) the vendor publishes for one device as
PyTorch / XLA see it: one GPU, one AMD GCD (an MI250/MI250X package holds two GCDs and shows as two
devices, so its package figures are halved), one TPU chip. Each `Figure` carries the public source
and the figure as published; where the datasheet gives only the sparse figure ("* with sparsity"),
the dense one is half of it and the source says so. A precision the datasheet does not list is
left out, never filled in.

`match_part` takes a device's properties as either profile writes them, Kineto's `deviceProperties`
entry (`name`, `numSms`, `totalGlobalMem`, `computeMajor`/`computeMinor`) or an XPlane device
plane's stats (`gpu_device_name`, `core_count`, `memory_size`, `compute_cap_major`/`_minor`,
`clock_rate` in kHz, `device_vendor`, `device_type_string` for TPUs), and returns the part only
when the evidence leaves exactly one:
- a known name picks the parts whose name pattern fits ("NVIDIA H100 80GB HBM3" → H100 SXM5,
  "AMD Instinct MI250X / MI250" → MI250X or MI250); the SM / CU count and memory the device reports
  must then agree (a MIG slice or an AMD partition mode reports fewer, so it matches nothing) and
  tell the candidates apart;
- a name that fits no pattern gives None, whatever else the device reports;
- without a usable name (XPlane GPUs carry none; ROCm may write "AMD Radeon Graphics" or a gfx
  target) the compute capability, core count and memory must all be reported and fit one part that
  is safe to recognise that way (`signature_match`: no other part, listed or not, shares those
  figures with different peaks; the clock is also required where only it tells them apart).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from profscope.tools.roofline.model import BANDWIDTH_UNIT, FLOP_UNIT, DevicePeaks, Peak, from_parts_table

TERA = 1e12
GIGA = 1e9
# Reported memory is a little under the nominal size (ECC, reserved areas) and sometimes given in
# GiB: a device is in a part's memory class when nominal·0.9·10⁹ ≤ bytes ≤ nominal·1.02·2³⁰.
MEMORY_LOW = 0.9 * GIGA
MEMORY_HIGH = 1.02 * 2**30
CLOCK_TOLERANCE = 0.02


@dataclasses.dataclass(frozen=True)
class Figure:
    """One peak in SI units (FLOP/s or B/s) and the public source it is quoted from."""

    value: float
    source: str


@dataclasses.dataclass(frozen=True)
class Part:
    """One accelerator variant: how to recognise it and its datasheet peaks per device.

    `cores` are SMs (Nvidia) or CUs (AMD) per device, `memory_gb` the nominal memory per device,
    `capability` the CUDA compute capability or AMD GFX major/minor version, `clock_mhz` the peak
    (boost) clock the device reports. `flops` maps precisions ("fp64", "fp64_matrix", "fp32",
    "fp32_matrix", "tf32", "bf16", "fp16", "fp8", "int8") to peaks; `bandwidth` is the device
    memory (HBM, or GDDR6 where so noted).
    """

    key: str
    name: str
    vendor: str
    pattern: str
    memory_gb: float
    flops: dict[str, Figure]
    bandwidth: Figure
    cores: int | None = None
    capability: tuple[int, int] | None = None
    clock_mhz: int | None = None
    signature_match: bool = False
    signature_needs_clock: bool = False
    notes: tuple[str, ...] = ()

    def peaks(self) -> DevicePeaks:
        """The part's figures as the roofline's device peaks."""
        return DevicePeaks(
            name=self.name,
            flops={k: Peak(f.value, FLOP_UNIT, from_parts_table(f.source)) for k, f in self.flops.items()},
            bandwidth={
                "hbm": Peak(self.bandwidth.value, BANDWIDTH_UNIT, from_parts_table(self.bandwidth.source))
            },
            notes=self.notes,
        )


def _tflops(value: float, source: str) -> Figure:
    return Figure(value * TERA, source)


def _sparse_half(value: float, source: str) -> Figure:
    """A datasheet figure given only with sparsity, in TFLOP/s: the dense peak is half of it."""
    return Figure(value / 2 * TERA, f"{source} (with sparsity; dense = half)")


def _package_half(value: float, source: str) -> Figure:
    """An AMD MI250/MI250X package figure, in TFLOP/s: one GCD, one device, has half."""
    return Figure(value / 2 * TERA, f"{source} for the package of 2 GCDs; one GCD (one device) = half")


def _bytes_per_s(gb_per_s: float, source: str) -> Figure:
    return Figure(gb_per_s * GIGA, source)


# -- Nvidia ----------------------------------------------------------------------------------------
V100 = "NVIDIA Tesla V100 GPU Accelerator datasheet"
V100_SXM2 = {
    "fp64": _tflops(7.8, f'{V100}, V100 SXM2: "Double-Precision Performance 7.8 teraFLOPS"'),
    "fp32": _tflops(15.7, f'{V100}, V100 SXM2: "Single-Precision Performance 15.7 teraFLOPS"'),
    # Volta has no structured sparsity: the tensor figure is dense (FP16 inputs).
    "fp16": _tflops(125, f'{V100}, V100 SXM2: "Tensor Performance 125 teraFLOPS" (FP16, dense)'),
}
V100_PCIE = {
    "fp64": _tflops(7, f'{V100}, V100 PCIe: "Double-Precision Performance 7 teraFLOPS"'),
    "fp32": _tflops(14, f'{V100}, V100 PCIe: "Single-Precision Performance 14 teraFLOPS"'),
    "fp16": _tflops(112, f'{V100}, V100 PCIe: "Tensor Performance 112 teraFLOPS" (FP16, dense)'),
}
V100_HBM = _bytes_per_s(900, f'{V100}: "Memory Bandwidth 900 GB/sec" (SXM2 and PCIe)')
# A DGX Station's V100s are SXM2 modules: its figures are the V100 SXM2 column's.
DGXS = (
    'DGX Station GPUs are V100 SXM2 (NVIDIA DGX Station datasheet: 4× Tesla V100 with NVLink, "500 TFLOPS" '
    "for the four)"
)
DGXS_FLOPS = {k: Figure(f.value, f"{f.source}; {DGXS}") for k, f in V100_SXM2.items()}
DGXS_HBM = Figure(V100_HBM.value, f"{V100_HBM.source}; {DGXS}")

A100 = "NVIDIA A100 Tensor Core GPU datasheet"
A100_FLOPS = {
    "fp64": _tflops(9.7, f'{A100}: "FP64 9.7 TFLOPS"'),
    "fp64_matrix": _tflops(19.5, f'{A100}: "FP64 Tensor Core 19.5 TFLOPS"'),
    "fp32": _tflops(19.5, f'{A100}: "FP32 19.5 TFLOPS"'),
    "tf32": _tflops(
        156, f'{A100}: "Tensor Float 32 (TF32) 156 TFLOPS | 312 TFLOPS*" (dense | *with sparsity)'
    ),
    "bf16": _tflops(312, f'{A100}: "BFLOAT16 Tensor Core 312 TFLOPS | 624 TFLOPS*" (dense | *with sparsity)'),
    "fp16": _tflops(312, f'{A100}: "FP16 Tensor Core 312 TFLOPS | 624 TFLOPS*" (dense | *with sparsity)'),
    "int8": _tflops(624, f'{A100}: "INT8 Tensor Core 624 TOPS | 1248 TOPS*" (dense | *with sparsity)'),
}

H100 = "NVIDIA H100 Tensor Core GPU datasheet"
H100_SXM = {
    "fp64": _tflops(34, f'{H100}, H100 SXM: "FP64 34 teraFLOPS"'),
    "fp64_matrix": _tflops(67, f'{H100}, H100 SXM: "FP64 Tensor Core 67 teraFLOPS"'),
    "fp32": _tflops(67, f'{H100}, H100 SXM: "FP32 67 teraFLOPS"'),
    "tf32": _sparse_half(989, f'{H100}, H100 SXM: "TF32 Tensor Core 989 teraFLOPS*"'),
    "bf16": _sparse_half(1979, f'{H100}, H100 SXM: "BFLOAT16 Tensor Core 1,979 teraFLOPS*"'),
    "fp16": _sparse_half(1979, f'{H100}, H100 SXM: "FP16 Tensor Core 1,979 teraFLOPS*"'),
    "fp8": _sparse_half(3958, f'{H100}, H100 SXM: "FP8 Tensor Core 3,958 teraFLOPS*"'),
    "int8": _sparse_half(3958, f'{H100}, H100 SXM: "INT8 Tensor Core 3,958 TOPS*"'),
}
H100_PCIE = {
    "fp64": _tflops(26, f'{H100}, H100 PCIe: "FP64 26 teraFLOPS"'),
    "fp64_matrix": _tflops(51, f'{H100}, H100 PCIe: "FP64 Tensor Core 51 teraFLOPS"'),
    "fp32": _tflops(51, f'{H100}, H100 PCIe: "FP32 51 teraFLOPS"'),
    "tf32": _sparse_half(756, f'{H100}, H100 PCIe: "TF32 Tensor Core 756 teraFLOPS*"'),
    "bf16": _sparse_half(1513, f'{H100}, H100 PCIe: "BFLOAT16 Tensor Core 1,513 teraFLOPS*"'),
    "fp16": _sparse_half(1513, f'{H100}, H100 PCIe: "FP16 Tensor Core 1,513 teraFLOPS*"'),
    "fp8": _sparse_half(3026, f'{H100}, H100 PCIe: "FP8 Tensor Core 3,026 teraFLOPS*"'),
    "int8": _sparse_half(3026, f'{H100}, H100 PCIe: "INT8 Tensor Core 3,026 TOPS*"'),
}

H200 = "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM"
H200_SXM = {
    "fp64": _tflops(34, f'{H200}: "FP64 34 TFLOPS"'),
    "fp64_matrix": _tflops(67, f'{H200}: "FP64 Tensor Core 67 TFLOPS"'),
    "fp32": _tflops(67, f'{H200}: "FP32 67 TFLOPS"'),
    "tf32": _sparse_half(989, f'{H200}: "TF32 Tensor Core 989 TFLOPS*"'),
    "bf16": _sparse_half(1979, f'{H200}: "BFLOAT16 Tensor Core 1,979 TFLOPS*"'),
    "fp16": _sparse_half(1979, f'{H200}: "FP16 Tensor Core 1,979 TFLOPS*"'),
    "fp8": _sparse_half(3958, f'{H200}: "FP8 Tensor Core 3,958 TFLOPS*"'),
    "int8": _sparse_half(3958, f'{H200}: "INT8 Tensor Core 3,958 TOPS*"'),
}

# FP64 and FP32 are left out: NVIDIA has published 40 / 80 TFLOPS (Blackwell technical brief) and
# later 37 / 75 per GPU (HGX B200 page); the tensor-core figures agree.
B200 = "NVIDIA Blackwell architecture technical brief, HGX B200 per GPU (1,000 W)"
B200_FLOPS = {
    "tf32": _sparse_half(2200, f'{B200}: "TF32 Tensor Core 2.2 PFLOPS*"'),
    "bf16": _sparse_half(4500, f'{B200}: "FP16/BF16 Tensor Core 4.5 PFLOPS*"'),
    "fp16": _sparse_half(4500, f'{B200}: "FP16/BF16 Tensor Core 4.5 PFLOPS*"'),
    "fp8": _sparse_half(9000, f'{B200}: "FP8/FP6 Tensor Core 9 PFLOPS*"'),
    "int8": _sparse_half(9000, f'{B200}: "INT8 Tensor Core 9 POPS*"'),
}

L4 = "NVIDIA L4 Tensor Core GPU datasheet"
L4_FLOPS = {
    "fp32": _tflops(30.3, f'{L4}: "FP32 30.3 teraFLOPs"'),
    "tf32": _sparse_half(120, f'{L4}: "TF32 Tensor Core 120 teraFLOPs*"'),
    "bf16": _sparse_half(242, f'{L4}: "BFLOAT16 Tensor Core 242 teraFLOPs*"'),
    "fp16": _sparse_half(242, f'{L4}: "FP16 Tensor Core 242 teraFLOPs*"'),
    "fp8": _sparse_half(485, f'{L4}: "FP8 Tensor Core 485 teraFLOPs*"'),
    "int8": _sparse_half(485, f'{L4}: "INT8 Tensor Core 485 TOPs*"'),
}

L40S = "NVIDIA L40S GPU datasheet"
L40S_FLOPS = {
    "fp32": _tflops(91.6, f'{L40S}: "FP32 91.6 teraFLOPS"'),
    "tf32": _tflops(183, f'{L40S}: "TF32 Tensor Core 183 | 366* teraFLOPS" (dense | *with sparsity)'),
    "bf16": _tflops(
        362.05, f'{L40S}: "BFLOAT16 Tensor Core 362.05 | 733* teraFLOPS" (dense | *with sparsity)'
    ),
    "fp16": _tflops(362.05, f'{L40S}: "FP16 Tensor Core 362.05 | 733* teraFLOPS" (dense | *with sparsity)'),
    "fp8": _tflops(733, f'{L40S}: "FP8 Tensor Core 733 | 1,466* teraFLOPS" (dense | *with sparsity)'),
    "int8": _tflops(733, f'{L40S}: "Peak INT8 Tensor 733 | 1,466* TOPS" (dense | *with sparsity)'),
}

T4 = "NVIDIA T4 Tensor Core GPU datasheet"
T4_FLOPS = {
    "fp32": _tflops(8.1, f'{T4}: "Single-Precision 8.1 TFLOPS"'),
    # Turing has no structured sparsity: the figures are dense.
    "fp16": _tflops(65, f'{T4}: "Mixed-Precision (FP16/FP32) 65 TFLOPS" (dense)'),
    "int8": _tflops(130, f'{T4}: "INT8 130 TOPS" (dense)'),
}

# -- AMD -------------------------------------------------------------------------------------------
MI250X = "AMD Instinct MI250X accelerator datasheet"
MI250X_FLOPS = {
    "fp64": _package_half(47.9, f'{MI250X}: "Peak FP64 Vector 47.9 TFLOPs"'),
    "fp64_matrix": _package_half(95.7, f'{MI250X}: "Peak FP64 Matrix 95.7 TFLOPs"'),
    "fp32": _package_half(47.9, f'{MI250X}: "Peak FP32 Vector 47.9 TFLOPs"'),
    "fp32_matrix": _package_half(95.7, f'{MI250X}: "Peak FP32 Matrix 95.7 TFLOPs"'),
    "bf16": _package_half(383, f'{MI250X}: "Peak bfloat16 383 TFLOPs"'),
    "fp16": _package_half(383, f'{MI250X}: "Peak FP16 383 TFLOPs"'),
    "int8": _package_half(383, f'{MI250X}: "Peak INT8 383 TOPs"'),
}
MI250 = "AMD Instinct MI250 accelerator datasheet"
MI250_FLOPS = {
    "fp64": _package_half(45.3, f'{MI250}: "Peak FP64 Vector 45.3 TFLOPs"'),
    "fp64_matrix": _package_half(90.5, f'{MI250}: "Peak FP64 Matrix 90.5 TFLOPs"'),
    "fp32": _package_half(45.3, f'{MI250}: "Peak FP32 Vector 45.3 TFLOPs"'),
    "fp32_matrix": _package_half(90.5, f'{MI250}: "Peak FP32 Matrix 90.5 TFLOPs"'),
    "bf16": _package_half(362.1, f'{MI250}: "Peak bfloat16 362.1 TFLOPs"'),
    "fp16": _package_half(362.1, f'{MI250}: "Peak FP16 362.1 TFLOPs"'),
    "int8": _package_half(362.1, f'{MI250}: "Peak INT8 362.1 TOPs"'),
}
MI300X = "AMD Instinct MI300X accelerator datasheet"
MI325X = "AMD Instinct MI325X accelerator datasheet"


def _cdna3_flops(sheet: str) -> dict[str, Figure]:
    """MI300X and MI325X share the compute figures (304 CUs at 2100 MHz), each in its own datasheet."""
    return {
        "fp64": _tflops(81.7, f'{sheet}: "Peak FP64 Vector 81.7 TFLOPs"'),
        "fp64_matrix": _tflops(163.4, f'{sheet}: "Peak FP64 Matrix 163.4 TFLOPs"'),
        "fp32": _tflops(163.4, f'{sheet}: "Peak FP32 Vector 163.4 TFLOPs"'),
        "fp32_matrix": _tflops(163.4, f'{sheet}: "Peak FP32 Matrix 163.4 TFLOPs"'),
        "tf32": _tflops(653.7, f'{sheet}: "Peak TF32 653.7 TFLOPs" (1307.4 with sparsity)'),
        "bf16": _tflops(1307.4, f'{sheet}: "Peak bfloat16 1307.4 TFLOPs" (2614.9 with sparsity)'),
        "fp16": _tflops(1307.4, f'{sheet}: "Peak FP16 1307.4 TFLOPs" (2614.9 with sparsity)'),
        "fp8": _tflops(2614.9, f'{sheet}: "Peak FP8 2614.9 TFLOPs" (5229.8 with sparsity)'),
        "int8": _tflops(2614.9, f'{sheet}: "Peak INT8 2614.9 TOPs" (5229.8 with sparsity)'),
    }


MI355X = "AMD Instinct MI355X accelerator datasheet"
MI355X_FLOPS = {
    "fp64": _tflops(78.6, f'{MI355X}: "Peak FP64 Vector 78.6 TFLOPs"'),
    "fp32": _tflops(157.3, f'{MI355X}: "Peak FP32 Vector 157.3 TFLOPs"'),
    "bf16": _tflops(2500, f'{MI355X}: "Peak bfloat16 2.5 PFLOPs" (dense; 5 with sparsity)'),
    "fp16": _tflops(2500, f'{MI355X}: "Peak FP16 2.5 PFLOPs" (dense; 5 with sparsity)'),
    "fp8": _tflops(5000, f'{MI355X}: "Peak OCP-FP8 5 PFLOPs" (dense; 10.1 with sparsity)'),
    "int8": _tflops(5000, f'{MI355X}: "Peak INT8 5 POPs" (dense; 10.1 with sparsity)'),
}

# -- Google ----------------------------------------------------------------------------------------
TPU_DOCS = "Google Cloud TPU documentation, system architecture"


PARTS: tuple[Part, ...] = (
    # V100: SXM2 (1530 MHz) and PCIe (1380 MHz) share SM count and memory; the clock tells them apart.
    Part(
        key="v100-sxm2-16gb",
        name="NVIDIA Tesla V100 SXM2 16GB",
        vendor="nvidia",
        pattern=r"\bV100 SXM2\b",
        cores=80,
        memory_gb=16,
        capability=(7, 0),
        clock_mhz=1530,
        flops=V100_SXM2,
        bandwidth=V100_HBM,
        signature_match=True,
        signature_needs_clock=True,
    ),
    Part(
        key="v100-sxm2-32gb",
        name="NVIDIA Tesla V100 SXM2 32GB",
        vendor="nvidia",
        pattern=r"\bV100 SXM2\b",
        cores=80,
        memory_gb=32,
        capability=(7, 0),
        clock_mhz=1530,
        flops=V100_SXM2,
        bandwidth=V100_HBM,
        signature_match=True,
        signature_needs_clock=True,
    ),
    Part(
        key="v100-pcie-16gb",
        name="NVIDIA Tesla V100 PCIe 16GB",
        vendor="nvidia",
        pattern=r"\bV100 PCIE\b",
        cores=80,
        memory_gb=16,
        capability=(7, 0),
        clock_mhz=1380,
        flops=V100_PCIE,
        bandwidth=V100_HBM,
        signature_match=True,
        signature_needs_clock=True,
    ),
    Part(
        key="v100-pcie-32gb",
        name="NVIDIA Tesla V100 PCIe 32GB",
        vendor="nvidia",
        pattern=r"\bV100 PCIE\b",
        cores=80,
        memory_gb=32,
        capability=(7, 0),
        clock_mhz=1380,
        flops=V100_PCIE,
        bandwidth=V100_HBM,
        signature_match=True,
        signature_needs_clock=True,
    ),
    # DGX Station GPUs are recognised by name only (nameless, they look like a V100 SXM2, same figures).
    Part(
        key="v100-dgxs-16gb",
        name="NVIDIA Tesla V100 DGXS 16GB (DGX Station)",
        vendor="nvidia",
        pattern=r"\bV100 DGXS\b",
        cores=80,
        memory_gb=16,
        capability=(7, 0),
        clock_mhz=1530,
        flops=DGXS_FLOPS,
        bandwidth=DGXS_HBM,
    ),
    Part(
        key="v100-dgxs-32gb",
        name="NVIDIA Tesla V100 DGXS 32GB (DGX Station)",
        vendor="nvidia",
        pattern=r"\bV100 DGXS\b",
        cores=80,
        memory_gb=32,
        capability=(7, 0),
        clock_mhz=1530,
        flops=DGXS_FLOPS,
        bandwidth=DGXS_HBM,
    ),
    Part(
        key="t4",
        name="NVIDIA T4",
        vendor="nvidia",
        pattern=r"\bT4\b",
        cores=40,
        memory_gb=16,
        capability=(7, 5),
        clock_mhz=1590,
        flops=T4_FLOPS,
        bandwidth=_bytes_per_s(320, f'{T4}: "GPU Memory Bandwidth 320+ GB/s" (GDDR6)'),
        signature_match=True,
    ),
    # A100 SXM4 boards may report their board code: "A100-PG509-200" is an SXM4 module (AITemplate
    # PR #749: "PG509" is reported for A100 SXM GPUs).
    Part(
        key="a100-sxm4-40gb",
        name="NVIDIA A100 SXM4 40GB",
        vendor="nvidia",
        pattern=r"\bA100\b.*\b(SXM|PG509)",
        cores=108,
        memory_gb=40,
        capability=(8, 0),
        clock_mhz=1410,
        flops=A100_FLOPS,
        bandwidth=_bytes_per_s(1555, f'{A100}: "GPU Memory Bandwidth 1,555 GB/s" (A100 40GB SXM)'),
        signature_match=True,
    ),
    Part(
        key="a100-sxm4-80gb",
        name="NVIDIA A100 SXM4 80GB",
        vendor="nvidia",
        pattern=r"\bA100\b.*\b(SXM|PG509)",
        cores=108,
        memory_gb=80,
        capability=(8, 0),
        clock_mhz=1410,
        flops=A100_FLOPS,
        bandwidth=_bytes_per_s(2039, f'{A100}: "GPU Memory Bandwidth 2,039 GB/s" (A100 80GB SXM)'),
        signature_match=True,
    ),
    Part(
        key="a100-pcie-40gb",
        name="NVIDIA A100 PCIe 40GB",
        vendor="nvidia",
        pattern=r"\bA100\b.*\bPCIE\b",
        cores=108,
        memory_gb=40,
        capability=(8, 0),
        clock_mhz=1410,
        flops=A100_FLOPS,
        bandwidth=_bytes_per_s(1555, f'{A100}: "GPU Memory Bandwidth 1,555 GB/s" (A100 40GB PCIe)'),
        signature_match=True,
    ),
    Part(
        key="a100-pcie-80gb",
        name="NVIDIA A100 PCIe 80GB",
        vendor="nvidia",
        pattern=r"\bA100\b.*\bPCIE\b",
        cores=108,
        memory_gb=80,
        capability=(8, 0),
        clock_mhz=1410,
        flops=A100_FLOPS,
        bandwidth=_bytes_per_s(1935, f'{A100}: "GPU Memory Bandwidth 1,935 GB/s" (A100 80GB PCIe)'),
        signature_match=True,
    ),
    Part(
        key="l4",
        name="NVIDIA L4",
        vendor="nvidia",
        pattern=r"\bL4\b",
        cores=58,
        memory_gb=24,
        capability=(8, 9),
        clock_mhz=2040,
        flops=L4_FLOPS,
        bandwidth=_bytes_per_s(300, f'{L4}: "GPU Memory Bandwidth 300GB/s" (GDDR6)'),
        signature_match=True,
    ),
    Part(
        key="l40s",
        name="NVIDIA L40S",
        vendor="nvidia",
        pattern=r"\bL40S\b",
        cores=142,
        memory_gb=48,
        capability=(8, 9),
        clock_mhz=2520,
        flops=L40S_FLOPS,
        bandwidth=_bytes_per_s(864, f'{L40S}: "Memory Bandwidth 864GB/s" (GDDR6)'),
        signature_match=True,
    ),
    # H100 / H200 / B200 only by name: H800 and H20 parts share SM counts and memory with other peaks.
    # "NVIDIA H100 80GB HBM3" is the SXM5 board; PCIe and NVL boards name themselves.
    Part(
        key="h100-sxm5",
        name="NVIDIA H100 SXM5 80GB",
        vendor="nvidia",
        pattern=r"\bH100\b(?!.*\b(PCIE|NVL)\b)",
        cores=132,
        memory_gb=80,
        capability=(9, 0),
        clock_mhz=1980,
        flops=H100_SXM,
        bandwidth=_bytes_per_s(3350, f'{H100}, H100 SXM: "GPU Memory Bandwidth 3.35TB/s"'),
    ),
    Part(
        key="h100-pcie",
        name="NVIDIA H100 PCIe 80GB",
        vendor="nvidia",
        pattern=r"\bH100 PCIE\b",
        cores=114,
        memory_gb=80,
        capability=(9, 0),
        clock_mhz=1755,
        flops=H100_PCIE,
        bandwidth=_bytes_per_s(2000, f'{H100}, H100 PCIe: "GPU Memory Bandwidth 2TB/s"'),
    ),
    Part(
        key="h200-sxm",
        name="NVIDIA H200 SXM 141GB",
        vendor="nvidia",
        pattern=r"\bH200\b(?!.*\bNVL\b)",
        cores=132,
        memory_gb=141,
        capability=(9, 0),
        clock_mhz=1980,
        flops=H200_SXM,
        bandwidth=_bytes_per_s(4800, f'{H200}: "GPU Memory Bandwidth 4.8TB/s"'),
    ),
    Part(
        key="b200",
        name="NVIDIA B200 (HGX)",
        vendor="nvidia",
        pattern=r"\bB200\b",
        cores=148,
        memory_gb=180,
        capability=(10, 0),
        clock_mhz=None,
        flops=B200_FLOPS,
        bandwidth=_bytes_per_s(
            8000, 'NVIDIA DGX B200 datasheet: "64TB/s" HBM3e bandwidth for its 8 GPUs = 8 TB/s each'
        ),
    ),
    # MI250X / MI250: one package = two GCDs = two devices of 110 / 104 CUs and 64 GB each. ROCm names
    # both "AMD Instinct MI250X / MI250"; the CU count tells them apart.
    Part(
        key="mi250x-gcd",
        name="AMD Instinct MI250X (one GCD)",
        vendor="amd",
        pattern=r"\bMI250X\b",
        cores=110,
        memory_gb=64,
        capability=(9, 0),
        clock_mhz=1700,
        flops=MI250X_FLOPS,
        bandwidth=_bytes_per_s(
            1638.4, f'{MI250X}: "Peak Memory Bandwidth 3.2768 TB/s" for 2 GCDs; one GCD = half'
        ),
        signature_match=True,
    ),
    Part(
        key="mi250-gcd",
        name="AMD Instinct MI250 (one GCD)",
        vendor="amd",
        pattern=r"\bMI250\b",
        cores=104,
        memory_gb=64,
        capability=(9, 0),
        clock_mhz=1700,
        flops=MI250_FLOPS,
        bandwidth=_bytes_per_s(
            1638.4, f'{MI250}: "Peak Memory Bandwidth 3.2768 TB/s" for 2 GCDs; one GCD = half'
        ),
        signature_match=True,
        notes=("an AMD Instinct MI210 (one GCD of 104 CUs, 64 GB at 1700 MHz) has these same figures",),
    ),
    Part(
        key="mi300x",
        name="AMD Instinct MI300X",
        vendor="amd",
        pattern=r"\bMI300X\b",
        cores=304,
        memory_gb=192,
        capability=(9, 4),
        clock_mhz=2100,
        flops=_cdna3_flops(MI300X),
        bandwidth=_bytes_per_s(5300, f'{MI300X}: "Peak Memory Bandwidth 5.3 TB/s"'),
        signature_match=True,
    ),
    Part(
        key="mi325x",
        name="AMD Instinct MI325X",
        vendor="amd",
        pattern=r"\bMI325X\b",
        cores=304,
        memory_gb=256,
        capability=(9, 4),
        clock_mhz=2100,
        flops=_cdna3_flops(MI325X),
        bandwidth=_bytes_per_s(6000, f'{MI325X}: "Peak Memory Bandwidth 6 TB/s"'),
        signature_match=True,
    ),
    # MI350X has the same CUs and memory at 2200 MHz: without a name, only the clock tells them apart.
    Part(
        key="mi355x",
        name="AMD Instinct MI355X",
        vendor="amd",
        pattern=r"\bMI355X\b",
        cores=256,
        memory_gb=288,
        capability=(9, 5),
        clock_mhz=2400,
        flops=MI355X_FLOPS,
        bandwidth=_bytes_per_s(8000, f'{MI355X}: "Peak Memory Bandwidth 8 TB/s"'),
        signature_match=True,
        signature_needs_clock=True,
    ),
    Part(
        key="tpu-v4",
        name="Google TPU v4",
        vendor="google",
        pattern=r"^TPU v4\b",
        memory_gb=32,
        flops={
            "bf16": _tflops(275, f'{TPU_DOCS}, TPU v4: "Peak compute per chip 275 teraflops (bf16 or int8)"'),
            "int8": _tflops(275, f'{TPU_DOCS}, TPU v4: "Peak compute per chip 275 teraflops (bf16 or int8)"'),
        },
        bandwidth=_bytes_per_s(1200, f'{TPU_DOCS}, TPU v4: "HBM2 capacity and bandwidth 32 GiB, 1200 GBps"'),
    ),
    Part(
        key="tpu-v5e",
        name="Google TPU v5e",
        vendor="google",
        pattern=r"^TPU v5 ?(e|lite)\b",
        memory_gb=16,
        flops={
            "bf16": _tflops(197, f'{TPU_DOCS}, TPU v5e: "Peak compute per chip (bf16) 197 TFLOPs"'),
            "int8": _tflops(393, f'{TPU_DOCS}, TPU v5e: "Peak compute per chip (Int8) 393 TOPs"'),
        },
        bandwidth=_bytes_per_s(819, f'{TPU_DOCS}, TPU v5e: "HBM2 capacity and bandwidth 16 GB, 819 GBps"'),
    ),
    Part(
        key="tpu-v5p",
        name="Google TPU v5p",
        vendor="google",
        pattern=r"^TPU v5p?$",
        memory_gb=95,
        flops={
            "bf16": _tflops(459, f'{TPU_DOCS}, TPU v5p: "Peak compute per chip (bf16) 459 TFLOPs"'),
            "fp8": _tflops(459, f'{TPU_DOCS}, TPU v5p: "Peak compute per chip (FP8) (TFLOPs) 459"'),
        },
        bandwidth=_bytes_per_s(2765, f'{TPU_DOCS}, TPU v5p: "HBM2e capacity and bandwidth 95GB, 2765 GBps"'),
    ),
    Part(
        key="tpu-v6e",
        name="Google TPU v6e (Trillium)",
        vendor="google",
        pattern=r"^TPU v6 ?(e|lite)\b",
        memory_gb=32,
        flops={
            "bf16": _tflops(918, f'{TPU_DOCS}, TPU v6e: "Peak compute per chip (bf16) 918 TFLOPs"'),
            "int8": _tflops(1836, f'{TPU_DOCS}, TPU v6e: "Peak compute per chip (Int8) 1836 TOPs"'),
        },
        bandwidth=_bytes_per_s(1638, f'{TPU_DOCS}, TPU v6e: "HBM bandwidth per chip 1638 GBps"'),
    ),
)

# Names that carry no part: ROCm's fallback marketing name and bare gfx targets.
GENERIC_NAMES = re.compile(r"^(AMD Radeon Graphics|gfx[0-9a-f]+(:.*)?)?$", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class DeviceFacts:
    """What a profile says about a device, from either key set (None: not reported)."""

    name: str
    vendor: str
    cores: int | None
    memory_bytes: int | None
    capability: tuple[int, int] | None
    clock_mhz: float | None


def device_facts(props: Mapping[str, Any]) -> DeviceFacts:
    """Kineto `deviceProperties` entry or XPlane device stats, read into one shape."""
    name = str(props.get("name") or props.get("gpu_device_name") or props.get("device_type_string") or "")
    major = _int(props.get("computeMajor", props.get("compute_cap_major")))
    minor = _int(props.get("computeMinor", props.get("compute_cap_minor")))
    clock_khz = _int(props.get("clock_rate"))
    vendor = str(props.get("device_vendor") or "").lower()
    if not vendor and (
        name.upper().startswith("AMD") or name.lower().startswith("gfx") or props.get("warpSize") == 64
    ):
        vendor = "amd"
    return DeviceFacts(
        name=name.strip(),
        vendor="amd" if vendor.startswith("amd") else "nvidia" if vendor.startswith("nvidia") else vendor,
        cores=_int(props.get("numSms", props.get("core_count"))),
        memory_bytes=_int(props.get("totalGlobalMem", props.get("memory_size"))),
        capability=(major, minor) if major is not None and minor is not None else None,
        clock_mhz=clock_khz / 1000 if clock_khz else None,
    )


def match_part(props: Mapping[str, Any]) -> Part | None:
    """The one part the device's properties fit, None when unknown or ambiguous (never a guess)."""
    facts = device_facts(props)
    normalized = normalize_name(facts.name)
    if normalized and not GENERIC_NAMES.match(facts.name):
        candidates = [
            p for p in PARTS if re.search(p.pattern, normalized, re.IGNORECASE) and _consistent(p, facts)
        ]
    else:
        candidates = [p for p in PARTS if _signature_fits(p, facts)]
    return candidates[0] if len(candidates) == 1 else None


def normalize_name(name: str) -> str:
    """Upper case, separators as single spaces: "Tesla V100-SXM2-16GB" → "TESLA V100 SXM2 16GB"."""
    return " ".join(re.split(r"[\s_\-/]+", name.strip().upper())).strip()


def _consistent(part: Part, facts: DeviceFacts) -> bool:
    """Nothing the device reports contradicts the part (clock aside: names settle it)."""
    if facts.cores is not None and part.cores is not None and facts.cores != part.cores:
        return False
    if facts.memory_bytes is not None and not _in_memory_class(facts.memory_bytes, part.memory_gb):
        return False
    return not (
        facts.capability is not None and part.capability is not None and facts.capability != part.capability
    )


def _signature_fits(part: Part, facts: DeviceFacts) -> bool:
    """A nameless device fits a part recognisable by its figures: capability, cores and memory
    all reported and equal, the clock too where only it tells lookalikes apart."""
    if not part.signature_match or part.capability is None or part.cores is None:
        return False
    if facts.capability is None or facts.cores is None or facts.memory_bytes is None:
        return False
    if facts.vendor and facts.vendor != part.vendor:
        return False
    if facts.clock_mhz is not None and part.clock_mhz is not None:
        if abs(facts.clock_mhz - part.clock_mhz) > CLOCK_TOLERANCE * part.clock_mhz:
            return False
    elif part.signature_needs_clock:
        return False
    return (
        facts.capability == part.capability
        and facts.cores == part.cores
        and _in_memory_class(facts.memory_bytes, part.memory_gb)
    )


def _in_memory_class(memory_bytes: int, memory_gb: float) -> bool:
    return memory_gb * MEMORY_LOW <= memory_bytes <= memory_gb * MEMORY_HIGH


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
