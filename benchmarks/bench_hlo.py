"""The `hlo` route's work on a synthetic module of 100 k instructions, cold and warm.

Usage:
    python benchmarks/bench_hlo.py [--instructions 100000] [--runs 3]

Builds one serialized HloProto here: an entry computation of `--instructions` instructions (a
parameter, then adds and every 50th a fusion, each using the two before it, with op_name and
source metadata as JAX writes them) and the fused computation the fusions call. Each run decodes
it from the bytes, as a first request after a server start does (`HloModules` fresh, nothing
decoded), and times: finding the program and the op in the middle of the module, the whole answer
of `tools.trace.hlo.op_answer` at radius 2 (instruction text, fused computation, neighbourhood,
DOT), then the same answer again (warm: the module stays decoded), and the `full=1` module text
(capped at `MAX_MODULE_INSTRUCTIONS`). Target (issue #12): the cold answer within 1 s.
"""

from __future__ import annotations

import argparse
import statistics
import time

from profscope.formats.hlo.proto import HloModules
from profscope.formats.hlo.text import module_text
from profscope.tools.trace import hlo
from proto_bytes import field, varint

F32 = 11  # xla.PrimitiveType F32


def _packed(values: list[int]) -> bytes:
    return b"".join(varint(v) for v in values)


SHAPE = field(2, F32) + field(3, _packed([128, 128])) + field(5, field(1, _packed([1, 0])))


def _instruction(name: str, opcode: str, uid: int, operands: list[int], extra: bytes = b"") -> bytes:
    body = field(1, name.encode()) + field(2, opcode.encode()) + field(3, SHAPE) + field(35, uid)
    return body + (field(36, _packed(operands)) if operands else b"") + extra


def _computation(name: str, uid: int, instructions: list[bytes], root: int, fusion: bool = False) -> bytes:
    body = field(1, name.encode()) + b"".join(field(2, i) for i in instructions)
    return body + field(5, uid) + field(6, root) + (field(7, 1) if fusion else b"")


def synthetic_module(count: int) -> bytes:
    """A serialized HloProto whose entry computation holds `count` instructions (see the docstring)."""
    meta = field(7, field(1, b"add") + field(2, b"jit(f)/add") + field(3, b"/w/model.py") + field(4, 42))
    fused = [
        _instruction("param_0", "parameter", 1_000_000, []),
        _instruction("param_1", "parameter", 1_000_001, [], field(9, 1)),
        _instruction("multiply.f", "multiply", 1_000_002, [1_000_000, 1_000_001]),
    ]
    body = [_instruction("p0", "parameter", 0, [])]
    for i in range(1, count):
        operands = [i - 1, max(i - 2, 0)]
        if i % 50:
            body.append(_instruction(f"add.{i}", "add", i, operands, meta))
        else:
            calls = field(11, b"kLoop") + field(38, _packed([2]))
            body.append(_instruction(f"fusion.{i}", "fusion", i, operands, calls + meta))
    computations = [
        _computation("fused_computation", 2, fused, 1_000_002, fusion=True),
        _computation("main", 1, body, count - 1),
    ]
    module = field(1, b"jit_synthetic") + field(2, b"main") + b"".join(field(3, c) for c in computations)
    return field(1, module + field(5, 7) + field(6, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instructions", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    data = synthetic_module(args.instructions)
    program_id, op_name = 7, f"fusion.{args.instructions // 100 * 50}"
    print(f"module: {args.instructions:,} instructions, {len(data) / 2**20:.1f} MiB, op {op_name}")
    timings: dict[str, list[float]] = {"find": [], "cold": [], "warm": [], "full": []}
    for _ in range(args.runs):
        started = time.perf_counter()
        modules = HloModules({program_id: data})
        module = hlo.find_module(modules, program_id)
        assert module is not None
        op = module.instruction(op_name)
        assert op is not None
        timings["find"].append(time.perf_counter() - started)
        answer = hlo.op_answer("bench", 0, program_id, module, op, hlo.DEFAULT_RADIUS, full=False)
        timings["cold"].append(time.perf_counter() - started)
        assert answer.fusion is not None and len(answer.nodes) == 9, (answer.fusion, len(answer.nodes))
        started = time.perf_counter()
        hlo.op_answer("bench", 0, program_id, module, op, hlo.DEFAULT_RADIUS, full=False)
        timings["warm"].append(time.perf_counter() - started)
        started = time.perf_counter()
        _, shown, total = module_text(module, hlo.MAX_MODULE_INSTRUCTIONS)
        timings["full"].append(time.perf_counter() - started)
    labels = {
        "find": "decode + find program and op (cold)",
        "cold": "whole answer, radius 2 (cold, target <= 1 s)",
        "warm": "whole answer again (module decoded)",
        "full": f"module text, first {shown:,} of {total:,} instructions",
    }
    for key, label in labels.items():
        values = timings[key]
        print(
            f"{label:52s} median {statistics.median(values) * 1000:8.1f} ms  (runs: "
            + ", ".join(f"{v * 1000:.1f}" for v in values)
            + ")"
        )


if __name__ == "__main__":
    main()
