"""Time the XPlane reader on one file: read time, events per second, peak RSS.

    .venv/bin/python benchmarks/bench_xplane.py PATH.xplane.pb [--repeat 3]
    .venv/bin/python benchmarks/bench_xplane.py tests/data/xplane/mi300_jax_conv.xplane.pb --replicate 100

Each repeat runs `xplane.read` in a fresh child process and reports wall and CPU time (on a
shared machine CPU time is the steadier number) and the child's peak RSS; then one in-process
run is split into decode (wire → columns), load (names, args, flows, derived lines →
TraceBuilder) and the model's `finalize`. `--replicate N` first writes a copy of the file whose
every line holds its events N times over, shifted in time, so a small real GPU profile becomes a
large one with the same structure (kernels, launches, correlation ids, HLO ops).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import fsspec

SCHEMA = Path(__file__).resolve().parent.parent / "tests" / "data" / "xplane" / "xspace_reference.textproto"


def _one_read(path: str) -> None:
    from profscope.formats import xplane

    wall, cpu = time.perf_counter(), time.process_time()
    trace = xplane.read(path, fsspec.filesystem("file"))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "wall": wall,
                "cpu": cpu,
                "events": trace.num_events,
                "flows": int(trace.flow_src.shape[0]),
                "args_bytes": int(trace.args_blob.shape[0]),
                "peak_rss_mib": peak_kib / 1024,
            }
        )
    )


def _breakdown(path: str) -> dict[str, float]:
    from profscope.columns import TraceBuilder
    from profscope.formats import xplane
    from profscope.formats.xplane_decode import decode_space

    data = Path(path).read_bytes()
    t0 = time.process_time()
    raw = decode_space(data)
    t1 = time.process_time()
    builder = TraceBuilder(source=path, format="xplane")
    xplane._Loader(raw, builder).load()
    t2 = time.process_time()
    builder.finalize()
    t3 = time.process_time()
    return {"decode": t1 - t0, "load": t2 - t1, "finalize": t3 - t2}


def _replicate(path: str, copies: int, out: str) -> None:
    """Write `path` with each line's events repeated `copies` times, each copy shifted past the
    previous one (and correlation ids made unique per copy, so launches still pair up)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format

    fdp = text_format.Parse(SCHEMA.read_text(), descriptor_pb2.FileDescriptorProto())
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    space = message_factory.GetMessageClass(pool.FindMessageTypeByName("xspace_reference.XSpace"))()
    space.ParseFromString(Path(path).read_bytes())
    for plane in space.planes:
        correlation = {k for k, v in plane.stat_metadata.items() if v.name == "correlation_id"}
        for line in plane.lines:
            events = list(line.events)
            if not events:
                continue
            span = max(e.offset_ps + e.duration_ps for e in events) - min(e.offset_ps for e in events) + 1000
            for copy in range(1, copies):
                for event in events:
                    new = line.events.add()
                    new.CopyFrom(event)
                    new.offset_ps = event.offset_ps + copy * span
                    for stat in new.stats:
                        if stat.metadata_id in correlation and stat.WhichOneof("value") == "uint64_value":
                            stat.uint64_value += copy << 32
    Path(out).write_bytes(space.SerializeToString())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--replicate", type=int, default=0, help="repeat every line's events N times first")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _one_read(args.path)
        return
    path = args.path
    if args.replicate > 1:
        path = os.path.join(tempfile.mkdtemp(prefix="bench_xplane_"), Path(args.path).name)
        _replicate(args.path, args.replicate, path)
    runs = []
    for _ in range(args.repeat):
        out = subprocess.run(
            [sys.executable, __file__, path, "--child"], capture_output=True, text=True, check=True
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    wall = [r["wall"] for r in runs]
    cpu = [r["cpu"] for r in runs]
    first = runs[0]
    print(f"file: {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
    print(f"events: {first['events']}  flows: {first['flows']}  args: {first['args_bytes'] / 1e6:.1f} MB")
    print(
        f"xplane.read wall: best {min(wall):.3f} s, median {statistics.median(wall):.3f} s ({len(runs)} runs)"
    )
    print(f"xplane.read CPU:  best {min(cpu):.3f} s, median {statistics.median(cpu):.3f} s")
    print(
        f"throughput: {first['events'] / min(wall) / 1e6:.2f} M events/s wall, {first['events'] / min(cpu) / 1e6:.2f} M/s CPU"
    )
    print(
        f"peak RSS: {max(r['peak_rss_mib'] for r in runs):.0f} MiB (child process: interpreter, imports, file, trace)"
    )
    parts = _breakdown(path)
    print("CPU breakdown (one in-process run): " + ", ".join(f"{k} {v:.3f} s" for k, v in parts.items()))


if __name__ == "__main__":
    main()
