"""Latency of the `roofline` answer, cold (first request after the trace is ingested) and warm.

Usage:
    .venv/bin/python benchmarks/bench_roofline.py [--xplane FILE ...] [--synthetic-ops N] [--warm 5]

Each XPlane (default: the TPU v6e and MI300 XPlanes of tests/data/xplane; add the big one from
`benchmarks/make_big_xplane.py`) is linked into a scratch logdir and served by the plugin behind
TensorBoard's WSGI app in this process, with an empty cache directory. The script waits until
`trace/meta` answers 200 (ingest done, not timed), then times:
- cold: the first `roofline` request (timeline opened from the cache, device ops extracted, rows
  built, JSON encoded);
- warm: `--warm` more identical requests (the answer cache), median and max;
- infeed=0: the first request with the other option (device ops reused, rows rebuilt).
`--synthetic-ops N` also times the analysis alone (no HTTP) on an in-memory TPU trace of N op
executions over 4 cores, the shape of a long TPU capture. Goals (issue point 9): warm ≤ 100 ms,
cold ≤ 2 s after ingest. Timings on a shared machine are noisy; rerun before comparing.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import statistics
import tempfile
import time

import msgspec
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from profscope.columns import TraceBuilder
from profscope.formats import xplane
from profscope.plugin import ProfscopePlugin
from profscope.tools.roofline import analysis, routes

REPO = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_FILES = [
    REPO / "tests/data/xplane/tpu_v6e_inference.xplane.pb",
    REPO / "tests/data/xplane/mi300_jax_conv.xplane.pb",
]
BASE = "/data/plugin/profscope"


def serve(files: list[pathlib.Path], scratch: pathlib.Path) -> Client:
    for k, path in enumerate(files):
        folder = scratch / "logdir" / f"run{k}" / "plugins" / "profile" / "session"
        folder.mkdir(parents=True)
        shutil.copyfile(path, folder / "host.xplane.pb")
    flags = argparse.Namespace(profscope_cache_dir=str(scratch / "cache"))
    plugin = ProfscopePlugin(base_plugin.TBContext(logdir=str(scratch / "logdir"), flags=flags))
    return Client(application.TensorBoardWSGI([plugin]))


def timed_get(client: Client, route: str) -> tuple[float, int, int]:
    start = time.perf_counter()
    res = client.get(f"{BASE}/{route}")
    return time.perf_counter() - start, res.status_code, len(res.get_data())


def bench_file(client: Client, k: int, path: pathlib.Path, warm: int) -> dict[str, object]:
    subject = f"run=run{k}&session=session&host=host"
    ingest_start = time.perf_counter()
    while client.get(f"{BASE}/trace/meta?{subject}").status_code == 202:
        time.sleep(0.05)
    ingest_s = time.perf_counter() - ingest_start
    routes.clear_caches()
    cold_s, status, size = timed_get(client, f"roofline?{subject}")
    assert status == 200, status
    warm_s = [timed_get(client, f"roofline?{subject}")[0] for _ in range(warm)]
    other_s, _, _ = timed_get(client, f"roofline?{subject}&infeed=0")
    return {
        "file": path.name,
        "size_mb": round(path.stat().st_size / 1e6, 1),
        "ingest_s": round(ingest_s, 2),
        "cold_ms": round(cold_s * 1e3, 1),
        "warm_median_ms": round(statistics.median(warm_s) * 1e3, 2),
        "warm_max_ms": round(max(warm_s) * 1e3, 2),
        "infeed0_first_ms": round(other_s * 1e3, 1),
        "answer_kb": round(size / 1e3, 1),
    }


def synthetic_tpu(executions: int, cores: int = 4) -> object:
    """A TPU trace of `executions` ops spread over `cores` cores, 50 distinct ops, with cost stats."""
    b = TraceBuilder("synthetic", xplane.FORMAT)
    devices = {}
    per_core = executions // cores
    for core in range(cores):
        sid = b.section(f"/device:TPU:{core}", "tpu")
        track = b.track(sid, "XLA Ops", "line")
        names = [b.intern(f"fusion.{i % 50}") for i in range(per_core)]
        starts = [i * 10_000 for i in range(per_core)]
        args = [
            b'{"hlo_category":"loop fusion","program_id":1,"flops":%d,"model_flops":0,"bytes_accessed":4096,'
            b'"memory_access_breakdown":"0a0a08011001188020","device_offset_ps":%d,"device_duration_ps":9000}'
            % (1000 + i % 50, s)
            for i, s in enumerate(starts)
        ]
        b.add_events(track, starts, [9000] * per_core, names, args=args)
        devices[str(sid)] = {
            "stats": {"peak_teraflops_per_second": 918.0, "peak_hbm_bw_gigabytes_per_second": 1638.0}
        }
    b.metadata["devices"] = devices
    b.metadata["planes"] = [{"name": f"/device:TPU:{c}"} for c in range(cores)]
    return b.finalize()


def bench_synthetic(executions: int) -> dict[str, object]:
    trace = synthetic_tpu(executions)
    start = time.perf_counter()
    host = analysis.host_devices("synthetic", trace)
    extract_s = time.perf_counter() - start
    start = time.perf_counter()
    answer = analysis.answer("synthetic", [host], analysis.Options(), None)
    encoded = msgspec.json.encode(answer)
    rows_s = time.perf_counter() - start
    return {
        "file": f"synthetic TPU, {executions} op executions",
        "extract_ms": round(extract_s * 1e3, 1),
        "rows_and_encode_ms": round(rows_s * 1e3, 1),
        "answer_kb": round(len(encoded) / 1e3, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xplane", action="append", type=pathlib.Path, help="XPlane to serve (repeatable)")
    parser.add_argument("--warm", type=int, default=5, help="warm requests per file")
    parser.add_argument(
        "--synthetic-ops", type=int, default=0, help="also time an in-memory TPU trace of N ops"
    )
    args = parser.parse_args(argv)
    files = args.xplane or DEFAULT_FILES
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        client = serve(files, pathlib.Path(tmp))
        for k, path in enumerate(files):
            results.append(bench_file(client, k, path, args.warm))
            print(json.dumps(results[-1]))
    if args.synthetic_ops:
        results.append(bench_synthetic(args.synthetic_ops))
        print(json.dumps(results[-1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
