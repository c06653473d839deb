"""Latency of the `roofline` answer, cold (first request after the trace is ingested) and warm.

Usage:
    .venv/bin/python benchmarks/bench_roofline.py [--xplane FILE ...] [--trace FILE ...]
        [--synthetic-ops N] [--warm 5] [--cold 1] [--profile]

Each XPlane (`--xplane`; default, when neither option is given: the TPU v6e and MI300 XPlanes of
tests/data/xplane; add the big one from `benchmarks/make_big_xplane.py`) and each Chrome / Kineto
trace (`--trace`, e.g. the `big.json` written by `benchmarks/make_big_json.py`) is linked into a scratch
logdir and served by the plugin behind TensorBoard's WSGI app in this process, with an empty cache
directory. The script waits until `trace/meta` answers 200 (ingest done, not timed), then times:
- cold: the first `roofline` request after every in-memory answer cache of the roofline and of the
  overview (whose classified events the roofline reuses) is emptied (timeline opened from
  the cache, device ops and steps extracted, rows built, JSON encoded); `--cold N` repeats it N
  times (caches emptied each time) and reports the median and the spread, in wall time and in
  this process's CPU time (on a loaded machine the wall time also holds the wait for a core);
- warm: `--warm` more identical requests (the answer cache), median and max;
- infeed=0: the first request with the other option (device ops reused, rows rebuilt);
- step: the first request for the first step's ops (`step=N`), when the trace has steps.
`--profile` prints the pyinstrument profile (when installed) or the cProfile top 30 of one cold answer.
`--synthetic-ops N` also times the analysis alone (no HTTP) on an in-memory TPU trace of N op
executions over 4 cores, the shape of a long TPU capture. Goals (issue point 9): warm ≤ 100 ms,
cold ≤ 2 s after ingest. Timings on a shared machine are noisy; rerun before comparing.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pathlib
import pstats
import statistics
import tempfile
import time

import msgspec
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from profscope.formats.xplane import reader as xplane
from profscope.model.columns import TraceBuilder
from profscope.plugin import ProfscopePlugin
from profscope.tools.roofline import analysis

REPO = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_FILES = [
    REPO / "tests/data/xplane/tpu_v6e_inference.xplane.pb",
    REPO / "tests/data/xplane/mi300_jax_conv.xplane.pb",
]
BASE = "/data/plugin/profscope"


def file_name(path: pathlib.Path) -> str:
    """The name the plugin recognises the file's format by."""
    if path.name.endswith(".xplane.pb"):
        return "host.xplane.pb"
    return "host.pt.trace.json.gz" if path.name.endswith(".gz") else "host.pt.trace.json"


def serve(files: list[pathlib.Path], scratch: pathlib.Path) -> tuple[Client, ProfscopePlugin]:
    for k, path in enumerate(files):
        folder = scratch / "logdir" / f"run{k}" / "plugins" / "profile" / "session"
        folder.mkdir(parents=True)
        (folder / file_name(path)).symlink_to(path.resolve())
    flags = argparse.Namespace(profscope_cache_dir=str(scratch / "cache"), profscope_follow_symlinks=True)
    plugin = ProfscopePlugin(base_plugin.TBContext(logdir=str(scratch / "logdir"), flags=flags))
    return Client(application.TensorBoardWSGI([plugin])), plugin


def timed_get(client: Client, route: str) -> tuple[float, int, bytes]:
    start = time.perf_counter()
    res = client.get(f"{BASE}/{route}")
    return time.perf_counter() - start, res.status_code, res.get_data()


def cpu_timed_get(client: Client, route: str) -> tuple[float, float, int, bytes]:
    """`timed_get` with the CPU time this process spent (the answer is computed in the request
    thread, so on a loaded machine CPU time shows the work, wall time also the wait for a core)."""
    cpu = time.process_time()
    seconds, status, body = timed_get(client, route)
    return seconds, time.process_time() - cpu, status, body


def profiled_cold(client: Client, plugin: ProfscopePlugin, route: str) -> None:
    """One cold answer under pyinstrument (when installed) or cProfile."""
    plugin.caches.clear()
    try:
        import pyinstrument
    except ImportError:
        profiler = cProfile.Profile()
        profiler.enable()
        timed_get(client, route)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
        return
    with pyinstrument.Profiler() as profiler:
        timed_get(client, route)
    print(profiler.output_text(unicode=True, color=False, show_all=False))


def bench_file(
    client: Client, plugin: ProfscopePlugin, k: int, path: pathlib.Path, warm: int, cold: int, profile: bool
) -> dict[str, object]:
    subject = f"run=run{k}&session=session&host=host"
    ingest_start = time.perf_counter()
    while client.get(f"{BASE}/trace/meta?{subject}").status_code == 202:
        time.sleep(0.05)
    ingest_s = time.perf_counter() - ingest_start
    cold_s, cold_cpu_s = [], []
    for _ in range(cold):
        plugin.caches.clear()
        seconds, cpu_s, status, body = cpu_timed_get(client, f"roofline?{subject}")
        assert status == 200, (status, body[:300])
        cold_s.append(seconds)
        cold_cpu_s.append(cpu_s)
    warm_s = [timed_get(client, f"roofline?{subject}")[0] for _ in range(warm)]
    other_s, _, _ = timed_get(client, f"roofline?{subject}&infeed=0")
    answer = json.loads(body)
    out: dict[str, object] = {
        "file": path.name,
        "size_mb": round(path.stat().st_size / 1e6, 1),
        "ingest_s": round(ingest_s, 2),
        "observed": answer["observed"],
        "steps": len(answer["steps"]),
        "cold_median_ms": round(statistics.median(cold_s) * 1e3, 1),
        "cold_min_ms": round(min(cold_s) * 1e3, 1),
        "cold_max_ms": round(max(cold_s) * 1e3, 1),
        "cold_cpu_median_ms": round(statistics.median(cold_cpu_s) * 1e3, 1),
        "cold_cpu_min_ms": round(min(cold_cpu_s) * 1e3, 1),
        "cold_cpu_max_ms": round(max(cold_cpu_s) * 1e3, 1),
        "warm_median_ms": round(statistics.median(warm_s) * 1e3, 2),
        "warm_max_ms": round(max(warm_s) * 1e3, 2),
        "infeed0_first_ms": round(other_s * 1e3, 1),
        "answer_kb": round(len(body) / 1e3, 1),
    }
    if answer["steps"]:
        step_s, status, _ = timed_get(client, f"roofline?{subject}&step={answer['steps'][0]}")
        assert status == 200, status
        out["step_first_ms"] = round(step_s * 1e3, 1)
    if profile:
        profiled_cold(client, plugin, f"roofline?{subject}")
    return out


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
    parser.add_argument(
        "--trace", action="append", type=pathlib.Path, help="Chrome / Kineto trace to serve (repeatable)"
    )
    parser.add_argument("--warm", type=int, default=5, help="warm requests per file")
    parser.add_argument("--cold", type=int, default=1, help="cold requests per file (caches emptied)")
    parser.add_argument("--profile", action="store_true", help="profile one cold answer per file")
    parser.add_argument(
        "--synthetic-ops", type=int, default=0, help="also time an in-memory TPU trace of N ops"
    )
    args = parser.parse_args(argv)
    files = [*(args.xplane or []), *(args.trace or [])] or DEFAULT_FILES
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        client, plugin = serve(files, pathlib.Path(tmp))
        for k, path in enumerate(files):
            results.append(bench_file(client, plugin, k, path, args.warm, args.cold, args.profile))
            print(json.dumps(results[-1]))
    if args.synthetic_ops:
        results.append(bench_synthetic(args.synthetic_ops))
        print(json.dumps(results[-1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
