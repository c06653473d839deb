"""The parts table of the roofline (`tools/roofline/parts.py`): which part a device is, and that
every figure carries its public source."""

from __future__ import annotations

import fsspec
import pytest

from profscope.formats.chrome import reader as chrome_json
from profscope.tools.roofline import parts
from profscope.tools.roofline.model import BANDWIDTH_UNIT, FLOP_UNIT
from tests.support import DATA_DIR

KINETO = DATA_DIR / "kineto"
# The first deviceProperties entry of each corpus trace that has one, and the part it is.
CORPUS_PARTS = {
    "bert_small.pt.trace.json.gz": "h100-sxm5",  # "NVIDIA H100 80GB HBM3", 132 SMs
    "alexnet.pt.trace.json.gz": "a100-sxm4-40gb",  # "NVIDIA A100-PG509-200", 108 SMs, 39.4 GiB
    "mi250_minitoy.pt.trace.json.gz": "mi250-gcd",  # "AMD Radeon Graphics", gfx 9.0, 104 CUs, 64 GiB
    "worker0.1623143089861.pt.trace.json.gz": "v100-dgxs-32gb",  # "Tesla V100-DGXS-32GB"
    "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz": "v100-sxm2-32gb",  # "Tesla V100-SXM2-32GB"
}
REQUIRED = {
    "v100-sxm2-16gb", "v100-sxm2-32gb", "a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-40gb",
    "a100-pcie-80gb", "h100-sxm5", "h100-pcie", "h200-sxm", "b200", "l4", "l40s", "t4", "mi250x-gcd",
    "mi300x", "mi325x", "mi355x", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e",
}  # fmt: skip


def _key(props: dict) -> str | None:
    part = parts.match_part(props)
    return part.key if part else None


@pytest.mark.parametrize(("trace", "key"), sorted(CORPUS_PARTS.items()))
def test_corpus_devices_match_their_parts(trace: str, key: str) -> None:
    devices = chrome_json.read(str(KINETO / trace), fsspec.filesystem("file")).metadata["deviceProperties"]
    assert {_key(d) for d in devices} == {key}


def test_traces_without_device_properties_name_no_part() -> None:
    for trace in ("rank-0.pt.trace.json.gz", "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"):
        metadata = chrome_json.read(str(KINETO / trace), fsspec.filesystem("file")).metadata
        assert not metadata.get("deviceProperties")


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"name": "NVIDIA H100 PCIe", "numSms": 114, "totalGlobalMem": 85_020_000_000}, "h100-pcie"),
        ({"name": "Tesla V100-SXM2-16GB", "numSms": 80, "totalGlobalMem": 16_945_512_448}, "v100-sxm2-16gb"),
        (
            {"name": "NVIDIA A100-SXM4-40GB", "numSms": 108, "totalGlobalMem": 42_505_273_344},
            "a100-sxm4-40gb",
        ),
        (
            {"name": "NVIDIA A100-SXM4-80GB", "numSms": 108, "totalGlobalMem": 85_100_000_000},
            "a100-sxm4-80gb",
        ),
        (
            {"name": "NVIDIA A100 80GB PCIe", "numSms": 108, "totalGlobalMem": 85_100_000_000},
            "a100-pcie-80gb",
        ),
        ({"name": "NVIDIA H200", "numSms": 132, "totalGlobalMem": 150_754_820_096}, "h200-sxm"),
        ({"name": "NVIDIA B200", "numSms": 148, "totalGlobalMem": 192_265_846_784}, "b200"),
        ({"name": "NVIDIA L4", "numSms": 58, "totalGlobalMem": 23_580_639_232}, "l4"),
        ({"name": "NVIDIA L40S", "numSms": 142, "totalGlobalMem": 48_305_799_168}, "l40s"),
        ({"name": "Tesla T4", "numSms": 40, "totalGlobalMem": 15_843_721_216}, "t4"),
        # ROCm names both MI250 variants alike; the CU count of the GCD tells them apart
        (
            {"name": "AMD Instinct MI250X / MI250", "numSms": 110, "totalGlobalMem": 68_702_699_520},
            "mi250x-gcd",
        ),
        (
            {"name": "AMD Instinct MI250X / MI250", "numSms": 104, "totalGlobalMem": 68_702_699_520},
            "mi250-gcd",
        ),
        ({"name": "AMD Instinct MI300X", "numSms": 304, "totalGlobalMem": 206_141_652_992}, "mi300x"),
        ({"name": "AMD Instinct MI325X", "numSms": 304, "totalGlobalMem": 274_877_906_944}, "mi325x"),
        ({"name": "AMD Instinct MI355X", "numSms": 256, "totalGlobalMem": 309_237_645_312}, "mi355x"),
        # XPlane GPU plane stats carry no name: capability, cores, memory and clock must all fit
        # (tests/data/xplane gpu_8x_tf_training, a V100 without vendor, and mi300_jax_conv)
        (
            {
                "clock_rate": 1530000,
                "core_count": 80,
                "memory_size": 16945512448,
                "compute_cap_major": 7,
                "compute_cap_minor": 0,
            },
            "v100-sxm2-16gb",
        ),  # fmt: skip
        (
            {
                "device_vendor": "AMD",
                "clock_rate": 2100000,
                "core_count": 304,
                "memory_size": 206141652992,
                "compute_cap_major": 9,
                "compute_cap_minor": 4,
            },
            "mi300x",
        ),  # fmt: skip
        ({"device_type_string": "TPU v6 Lite"}, "tpu-v6e"),
        ({"device_type_string": "TPU v5 lite"}, "tpu-v5e"),
        ({"device_type_string": "TPU v5"}, "tpu-v5p"),
        ({"device_type_string": "TPU v4"}, "tpu-v4"),
    ],
)
def test_names_and_figures_pick_the_variant(props: dict, key: str) -> None:
    assert _key(props) == key


@pytest.mark.parametrize(
    "props",
    [
        {"name": "NVIDIA GeForce RTX 4090", "numSms": 128},
        {"name": "NVIDIA H100 NVL", "numSms": 132, "totalGlobalMem": 100_000_000_000},
        {"name": "NVIDIA H200 NVL", "numSms": 132},
        {"name": "Tesla V100S-PCIE-32GB", "numSms": 80},
        {"name": "NVIDIA L40", "numSms": 142},
        {"name": "NVIDIA A100-SXM4-40GB MIG 1g.5gb", "numSms": 14, "totalGlobalMem": 4_972_000_000},
        {"name": "NVIDIA H100 80GB HBM3", "numSms": 114},  # the name and the SM count disagree
        {"name": "NVIDIA A100", "numSms": 108, "totalGlobalMem": 42_505_273_344},  # SXM4 or PCIe?
        {"name": "AMD Instinct MI300X", "numSms": 38, "totalGlobalMem": 25_769_803_776},  # CPX partition
        {"name": "AMD Instinct MI210", "numSms": 104, "totalGlobalMem": 68_702_699_520},
        {"name": "Intel(R) Data Center GPU Max 1550"},
        # nameless and not enough to tell: no clock for a V100 (SXM2 or PCIe), H100s only by name
        {"numSms": 80, "totalGlobalMem": 16_945_512_448, "computeMajor": 7, "computeMinor": 0},
        {"numSms": 132, "totalGlobalMem": 85_018_279_936, "computeMajor": 9, "computeMinor": 0},
        {
            "name": "AMD Radeon Graphics",
            "numSms": 256,
            "totalGlobalMem": 309_237_645_312,
            "computeMajor": 9,
            "computeMinor": 5,
        },  # MI355X or MI350X: only the clock would tell  # fmt: skip
        {"device_type_string": "TPU v3"},
        {},
    ],
)
def test_unknown_or_ambiguous_devices_match_nothing(props: dict) -> None:
    assert parts.match_part(props) is None


def test_the_table_holds_the_parts_asked_for() -> None:
    keys = [p.key for p in parts.PARTS]
    assert len(keys) == len(set(keys))
    assert set(keys) >= REQUIRED


@pytest.mark.parametrize("part", parts.PARTS, ids=lambda p: p.key)
def test_every_figure_has_a_public_source(part: parts.Part) -> None:
    assert part.flops, "no FLOP figure"
    for figure in [*part.flops.values(), part.bandwidth]:
        assert figure.value > 0
        assert len(figure.source) > 20 and '"' in figure.source, figure.source  # the figure as published
    assert set(part.flops) <= {
        "fp64",
        "fp64_matrix",
        "fp32",
        "fp32_matrix",
        "tf32",
        "bf16",
        "fp16",
        "fp8",
        "int8",
    }
    peaks = part.peaks()
    assert peaks.name == part.name
    assert all(
        p.unit == FLOP_UNIT and p.source.startswith("from the parts table: ") for p in peaks.flops.values()
    )
    assert peaks.bandwidth["hbm"].unit == BANDWIDTH_UNIT


def test_sparse_only_figures_are_halved_to_dense() -> None:
    h100 = next(p for p in parts.PARTS if p.key == "h100-sxm5")
    # the datasheet gives "BFLOAT16 Tensor Core 1,979 teraFLOPS*" (* with sparsity): dense is half
    assert h100.flops["bf16"].value == 989.5e12
    assert "with sparsity; dense = half" in h100.flops["bf16"].source
    assert h100.flops["fp64"].value == 34e12  # no sparsity on FP64: as published
    a100 = next(p for p in parts.PARTS if p.key == "a100-sxm4-40gb")
    assert a100.flops["bf16"].value == 312e12  # published as "312 | 624*": the dense one
    mi250 = next(p for p in parts.PARTS if p.key == "mi250-gcd")
    assert mi250.flops["fp16"].value == 362.1e12 / 2  # the package figure over its 2 GCDs
    assert mi250.bandwidth.value == 1638.4e9
