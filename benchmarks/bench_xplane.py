"""Time the XPlane reader on one file: events per second and peak RSS, end to end and of the reader.

    .venv/bin/python benchmarks/bench_xplane.py PATH.xplane.pb [--repeat 3]
    .venv/bin/python benchmarks/bench_xplane.py tests/data/xplane/mi300_jax_conv.xplane.pb --replicate 2000
    .venv/bin/python benchmarks/bench_xplane.py tests/data/xplane/mi300_jax_conv.xplane.pb \\
        --replicate 20000 --builder-mb 1024 --repeat 1          # about 2 GB, 73 M events
    .venv/bin/python benchmarks/bench_xplane.py BIG_JAX.xplane.pb --builder-mb 1024
                            # benchmarks/capture_jax_cpu.py, then make_big_jax_xplane.py

Each repeat runs `xplane.read` in fresh child processes, twice, then the floor (below): end to
end (the TraceBuilder and its finalize included: what an ingest pays before the cache write) and
with a counting sink in place of the builder, which keeps nothing, so its numbers are the
reader's own work and memory. The child reads with the heap policy of the server's ingest
children (one malloc arena, `ingest.memory.heap_for_ingest`): without it every large temporary
array of a batch is a fresh mapping whose pages fault in anew, which cost the 375 k-event JAX
capture 0.13 s of system time (0.53 s instead of 0.39 s of CPU, 2026-12-07), a cost no ingest pays;
and, as there, a file of `helper.FORKED_HELPER_MIN_BYTES` or more gets a helper process forked from
the child. CPU counts the helper process's too.
Reported per mode: wall and CPU time (on a shared machine CPU time is the steadier number),
events per second, and the child's peak RSS (ru_maxrss) with what the interpreter and imports held
before the read; medians with min–max over the repeats, and the load average around the runs (say
what else was running). "args" is what the reader hands the builder: the typed args records (their
JSON is rendered only when asked for, `model.typed_args`).

The floor, measured in the same rounds: protobuf's own parser (upb, C) reading the same file into
messages, which holds them all (179 MiB peak for the 17 MB JAX CPU capture; `--no-floor` skips
it, as for a 1 GB file).

`--replicate N` first writes a copy of the file whose every line holds its events N times over,
each copy shifted past the previous one and its correlation ids made unique (so launches still
pair up): a small real profile becomes a large one with the same structure (kernels, launches,
HLO ops). The copy is streamed to disk line by line, so a 2 GB one takes little memory; it is
deleted afterwards unless `--keep`. `--builder-mb M` gives the builder the budget an ingest would
(it spills to files past it, `profscope.spill`); without it the builder holds everything.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import fsspec
import numpy as np

from proto_bytes import varint

SCHEMA = Path(__file__).resolve().parent.parent / "tests" / "data" / "xplane" / "xspace_reference.textproto"


def _child(path: str, sink: bool, builder_mb: int, scratch: str) -> None:
    from profscope.engine.ingest import memory as ingest_memory
    from profscope.formats.xplane import reader as xplane
    from profscope.model.columns import TraceBuilder
    from profscope.model.spill import budget as spill_budget

    ingest_memory.one_malloc_arena()  # as an ingest child (module docstring)
    from profscope.formats import registry

    if hasattr(registry, "fork_helpers"):  # helpers forked as in an ingest child (older code had no call)
        registry.fork_helpers()
    counted = {"events": 0, "args": 0, "flows": 0, "counters": 0}

    class Sink(TraceBuilder):
        """Counts what the reader hands over and keeps nothing."""

        def add_events(self, track: Any, start_ps: Any, dur_ps: Any, name: Any, cat: Any = 0, args: Any = None,
                       *, args_blob: Any = None, args_lengths: Any = None) -> int:  # fmt: skip
            n = int(np.asarray(start_ps).shape[0])
            counted["events"] += n
            counted["args"] += (
                len(args_blob) if args_blob is not None else sum(len(a or b"") for a in args or ())
            )
            first = self._num_events
            self._num_events += n
            return first

        def add_flows(self, src: Any, dst: Any, name: Any = 0) -> None:
            counted["flows"] += int(np.asarray(src).shape[0])

        def add_counter(self, track: int, time_ps: Any, value: Any) -> None:
            counted["counters"] += int(np.asarray(time_ps).shape[0])

    if sink:
        xplane.TraceBuilder = Sink  # type: ignore[misc]
    before_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    budget = spill_budget.IngestMemory(scratch, builder_mb << 20) if builder_mb else None
    wall, cpu, helpers = time.perf_counter(), time.process_time(), _children_cpu()
    with spill_budget.use(budget), ingest_memory.heap_for_ingest():
        trace = xplane.read(path, fsspec.filesystem("file"))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu + _children_cpu() - helpers
    if not sink:
        counted = {
            "events": trace.num_events,
            "args": int(trace.args_blob.shape[0]),
            "flows": int(trace.flow_src.shape[0]),
            "counters": int(trace.ctr_track.shape[0]),
        }
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps({"wall": wall, "cpu": cpu, **counted, "rss": peak_kib / 1024, "base": before_kib / 1024})
    )


def _children_cpu() -> float:
    """CPU seconds of the helper processes this one has waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _floor_child(path: str) -> None:
    """The floor: protobuf's own parse (upb, C) of the same bytes into messages, and a count of
    the events it found, timed the same way as a read (the file read included)."""
    wall, cpu = time.perf_counter(), time.process_time()
    space = _space_class()()
    with open(path, "rb") as f:
        space.ParseFromString(f.read())
    events = sum(len(line.events) for plane in space.planes for line in plane.lines)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"wall": wall, "cpu": cpu, "events": events, "rss": rss}))


def _run_floor(path: str) -> dict[str, Any]:
    command = [sys.executable, __file__, path, "--floor-child"]
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _report_floor(runs: list[dict[str, Any]]) -> None:
    events = runs[0]["events"]
    wall = [r["wall"] for r in runs]
    cpu = [r["cpu"] for r in runs]
    print(f"floor: protobuf (upb) parse of the same file ({len(runs)} runs, median [min–max]):")
    print(f"  events {events}  wall {_spread(wall, '.2f')} s   CPU {_spread(cpu, '.2f')} s")
    print(f"  throughput {_spread([events / w / 1e6 for w in wall], '.2f')} M events/s wall, "
          f"{_spread([events / c / 1e6 for c in cpu], '.2f')} M events/s CPU; "
          f"peak RSS {_spread([r['rss'] for r in runs], '.0f')} MiB")  # fmt: skip


def _run(path: str, sink: bool, builder_mb: int) -> dict[str, Any]:
    scratch = tempfile.mkdtemp(prefix="bench_xplane_spill_")
    try:
        command = [sys.executable, __file__, path, "--child", "--builder-mb", str(builder_mb)]
        command += ["--scratch", scratch] + (["--sink"] if sink else [])
        out = subprocess.run(command, capture_output=True, text=True, check=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _spread(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} [{min(values):{fmt}}–{max(values):{fmt}}]"


def _report(label: str, runs: list[dict[str, Any]]) -> None:
    events = runs[0]["events"]
    wall = [r["wall"] for r in runs]
    cpu = [r["cpu"] for r in runs]
    print(f"{label} ({len(runs)} runs, median [min–max]):")
    print(
        f"  events {events}  flows {runs[0]['flows']}  counter samples {runs[0]['counters']}  args {runs[0]['args'] / 1e6:.1f} MB"
    )
    print(f"  wall {_spread(wall, '.2f')} s   CPU {_spread(cpu, '.2f')} s")
    print(f"  throughput {_spread([events / w / 1e6 for w in wall], '.2f')} M events/s wall, "
          f"{_spread([events / c / 1e6 for c in cpu], '.2f')} M events/s CPU")  # fmt: skip
    print(f"  peak RSS {_spread([r['rss'] for r in runs], '.0f')} MiB "
          f"(before the read: {statistics.median([r['base'] for r in runs]):.0f} MiB)")  # fmt: skip


# -- replicating a file -------------------------------------------------------------------------
def _space_class() -> Any:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format

    fdp = text_format.Parse(SCHEMA.read_text(), descriptor_pb2.FileDescriptorProto())
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("xspace_reference.XSpace"))


def _split(message: bytes, number: int) -> tuple[bytes, bytes]:
    """A message's serialized fields before field `number` and after it (serializers write fields
    in number order)."""
    from profscope.formats.common import wire

    head, tail = bytearray(), bytearray()
    pos = 0
    for n, _, _, end in wire.iter_fields(message, 0, len(message)):
        (head if n < number else tail).extend(message[pos:end])
        pos = end
    return bytes(head), bytes(tail)


def _line_copies(line: Any, copies: int, correlation: set[int], scratch: BinaryIO) -> int:
    """Write the line's events `copies` times (each copy shifted) to `scratch`; returns the bytes."""
    events = list(line.events)
    if not events:
        return 0
    holder = type(line)()
    holder.events.extend(events)
    span = max(e.offset_ps + e.duration_ps for e in events) - min(e.offset_ps for e in events) + 1000
    base = [e.offset_ps for e in holder.events]
    numbers = ("uint64_value", "int64_value")
    stats = [
        [(s, kind, getattr(s, kind)) for s in e.stats if s.metadata_id in correlation and (kind := s.WhichOneof("value")) in numbers]
        for e in holder.events
    ]  # fmt: skip
    written = 0
    for copy in range(copies):
        for event, offset, ids in zip(holder.events, base, stats, strict=True):
            event.offset_ps = offset + copy * span
            for stat, kind, value in ids:
                setattr(stat, kind, value + (copy << 32))
        data = holder.SerializeToString()
        scratch.write(data)
        written += len(data)
    return written


def _replicate(path: str, copies: int, out: str, id_stats: tuple[str, ...] = ("correlation_id",)) -> None:
    """Write `path` with each line's events repeated `copies` times, each copy shifted past the
    previous one (and the integer stats named in `id_stats`, correlation ids by default, made
    unique per copy, so launches still pair up)."""
    space = _space_class()()
    space.ParseFromString(Path(path).read_bytes())
    with tempfile.TemporaryFile() as scratch, open(out, "wb") as dst:
        planes: list[tuple[bytes, bytes, list[tuple[bytes, bytes, int, int]]]] = []
        at = 0
        for plane in space.planes:
            correlation = {k for k, v in plane.stat_metadata.items() if v.name in id_stats}
            lines = []
            for line in plane.lines:
                size = _line_copies(line, copies, correlation, scratch)
                del line.events[:]
                head, tail = _split(line.SerializeToString(), 4)
                lines.append((head, tail, at, size))
                at += size
            del plane.lines[:]
            head, tail = _split(plane.SerializeToString(), 3)
            planes.append((head, tail, lines))
        del space.planes[:]
        rest = space.SerializeToString()
        for head, tail, lines in planes:
            sizes = [len(h) + size + len(t) for h, t, _, size in lines]
            plane_size = len(head) + len(tail) + sum(1 + len(varint(s)) + s for s in sizes)
            dst.write(b"\x0a" + varint(plane_size) + head)
            for (line_head, line_tail, start, size), line_size in zip(lines, sizes, strict=True):
                dst.write(b"\x1a" + varint(line_size) + line_head)
                for chunk in _chunks(scratch, start, size):
                    dst.write(chunk)
                dst.write(line_tail)
            dst.write(tail)
        dst.write(rest)


def _chunks(f: BinaryIO, start: int, size: int) -> Iterator[bytes]:
    f.seek(start)
    while size:
        chunk = f.read(min(size, 1 << 22))
        size -= len(chunk)
        yield chunk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--replicate", type=int, default=0, help="repeat every line's events N times first")
    parser.add_argument("--keep", action="store_true", help="keep the replicated file")
    parser.add_argument("--builder-mb", type=int, default=0, help="the builder's budget (0: unbounded)")
    parser.add_argument("--sink-only", action="store_true", help="measure the reader alone")
    parser.add_argument("--end-to-end-only", action="store_true", help="measure with the builder only")
    parser.add_argument("--no-floor", action="store_true", help="skip protobuf's parse (the floor)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--floor-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sink", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.path, args.sink, args.builder_mb, args.scratch)
        return
    if args.floor_child:
        _floor_child(args.path)
        return
    path = args.path
    made = None
    if args.replicate > 1:
        made = tempfile.mkdtemp(prefix="bench_xplane_")
        path = os.path.join(made, Path(args.path).name)
        start = time.perf_counter()
        _replicate(args.path, args.replicate, path)
        print(f"replicated ×{args.replicate} in {time.perf_counter() - start:.0f} s")
    try:
        print(f"file: {path} ({os.path.getsize(path) / 1e6:.1f} MB); load average before: {os.getloadavg()}")
        modes = [True] if args.sink_only else [False] if args.end_to_end_only else [False, True]
        runs: dict[bool, list[dict[str, Any]]] = {m: [] for m in modes}
        floor: list[dict[str, Any]] = []
        for _ in range(args.repeat):
            for mode in modes:
                runs[mode].append(_run(path, mode, args.builder_mb))
            if not args.no_floor:
                floor.append(_run_floor(path))
        for mode in modes:
            _report(
                "reader alone (counting sink)" if mode else "end to end (TraceBuilder, finalize)", runs[mode]
            )
        if floor:
            _report_floor(floor)
        print(f"load average after: {os.getloadavg()}")
    finally:
        if made and not args.keep:
            shutil.rmtree(made, ignore_errors=True)
        elif made:
            print(f"kept {path}")


if __name__ == "__main__":
    main()
