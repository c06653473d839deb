"""Time the XPlane reader on one file: read time, events per second, peak RSS.

    .venv/bin/python benchmarks/bench_xplane.py PATH.xplane.pb [--repeat 3]

Prints the full `xplane.read` time (best and median of the repeats, each in a fresh child process
so caches and peak RSS are per run), then one in-process breakdown into decode (wire → columns),
load (names, args, flows, derived lines → TraceBuilder) and the model's `finalize`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import fsspec


def _one_read(path: str) -> None:
    from profscope.formats import xplane

    start = time.perf_counter()
    trace = xplane.read(path, fsspec.filesystem("file"))
    elapsed = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": elapsed, "events": trace.num_events, "flows": int(trace.flow_src.shape[0]),
                      "args_bytes": int(trace.args_blob.shape[0]), "peak_rss_mib": peak_kib / 1024}))  # fmt: skip


def _breakdown(path: str) -> dict[str, float]:
    from profscope.formats import xplane
    from profscope.formats.xplane_decode import decode_space
    from profscope.trace.model import TraceBuilder

    with open(path, "rb") as handle:
        data = handle.read()
    t0 = time.perf_counter()
    raw = decode_space(data)
    t1 = time.perf_counter()
    builder = TraceBuilder(source=path, format="xplane")
    xplane._Loader(raw, builder).load()
    t2 = time.perf_counter()
    builder.finalize()
    t3 = time.perf_counter()
    return {"decode": t1 - t0, "load": t2 - t1, "finalize": t3 - t2}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _one_read(args.path)
        return
    runs = []
    env = dict(os.environ)
    for _ in range(args.repeat):
        out = subprocess.run(
            [sys.executable, __file__, args.path, "--child"],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    secs = [r["seconds"] for r in runs]
    best = min(secs)
    first = runs[0]
    size_mb = os.path.getsize(args.path) / 1e6
    print(f"file: {args.path} ({size_mb:.1f} MB)")
    print(f"events: {first['events']}  flows: {first['flows']}  args: {first['args_bytes'] / 1e6:.1f} MB")
    print(f"xplane.read: best {best:.3f} s, median {statistics.median(secs):.3f} s over {len(secs)} runs")
    print(f"throughput: {first['events'] / best / 1e6:.2f} M events/s (best run)")
    print(
        f"peak RSS: {max(r['peak_rss_mib'] for r in runs):.0f} MiB (whole process, incl. interpreter and imports)"
    )
    parts = _breakdown(args.path)
    print("breakdown (one in-process run): " + ", ".join(f"{k} {v:.3f} s" for k, v in parts.items()))


if __name__ == "__main__":
    main()
