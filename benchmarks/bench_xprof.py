"""profscope and XProf side by side on the same XPlane: cold view, full view, zoomed views, RSS.

Usage:
    python -m venv XPROF_VENV && XPROF_VENV/bin/pip install xprof   # once, any folder
    python benchmarks/bench_xprof.py --xplane BIG.xplane.pb
        [--xprof-python XPROF_VENV/bin/python] [--screen-px 1600] [--out results.json]

`--xprof-python` defaults to $XPROF_PYTHON; with neither the script stops before starting a server.

Both servers read their own copy of the file in a fresh logdir (XProf writes its caches — SSTABLE
files, `cache_version.txt`, `.cached_tools.json` — into the logdir; the script lists them), one after
the other so they do not compete for the CPU. For each server:

- cold view: time from the first request until the full-trace view is there. profscope: `trace/meta`
  (polled every 50 ms while it answers 202) plus every tile of a `--screen-px` screen; XProf:
  `data?tag=trace_viewer@` without a window (what its trace viewer loads first);
- full view again, then windows of 1/4 … 1/2048 of the span at one fixed place (40 % into the trace):
  first request and repeat. profscope: the tiles of one screen at the level its frontend picks;
  XProf: `data?tag=trace_viewer@&start_time_ms=&end_time_ms=`;
- bytes sent (gzip as the browser gets it) and decoded, and for XProf the events it returned;
- VmRSS / VmHWM of the server process after the views.

Timings on a shared 2-core machine are noisy; compare the best of a few runs.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import tempfile
import time
import urllib.parse
from typing import Any

import bench_trace as bt

ZOOMS = (1, 4, 32, 256, 2048)
WINDOW_AT = 0.4


def windows(span: float) -> list[tuple[int, float, float]]:
    out = []
    for zoom in ZOOMS:
        width = span / zoom
        start = 0.0 if zoom == 1 else WINDOW_AT * (span - width)
        out.append((zoom, start, start + width))
    return out


def run_profscope(source: pathlib.Path, work: pathlib.Path, port: int, screen_px: int) -> dict[str, Any]:
    logdir = work / "logdir_profscope"
    bt.link_into(source, logdir / "run1" / "plugins" / "profile" / "s1" / "host0.xplane.pb")
    server = bt.profscope_server(logdir, work / "cache_profscope", port, work / "profscope.log")
    out: dict[str, Any] = {}
    try:
        server.start()
        server.get("/data/plugins_listing")
        time.sleep(2.0)
        client = bt.ProfscopeClient(server, "run1", "s1", "host0")
        first = bt.first_view(client, screen_px)
        meta = first["meta"]
        out["cold_view_s"] = first["first_view_s"]
        out["events"] = meta["num_events"]
        views = []
        for zoom, start, end in windows(meta["span_ns"][1]):
            level, indices = bt.screen_tiles(meta, start, end, screen_px)
            row = {"zoom": zoom, "level": level, "tiles": len(indices)}
            for label in ("first", "repeat"):
                t0 = time.perf_counter()
                wire = raw = 0
                for index in indices:
                    res = client.tile(level, index)
                    wire += res["wire_bytes"]
                    raw += len(res["body"])
                row[f"{label}_s"] = time.perf_counter() - t0
            row["wire_kb"], row["raw_kb"] = wire / 1e3, raw / 1e3
            views.append(row)
        out["views"] = views
        out["memory_mb"] = server.memory_mb()
    finally:
        server.stop()
    return out


def run_xprof(source: pathlib.Path, work: pathlib.Path, port: int, python: str) -> dict[str, Any]:
    logdir = work / "logdir_xprof"
    session = logdir / "run1" / "plugins" / "profile" / "s1"
    bt.link_into(source, session / "host0.xplane.pb")
    argv = [
        python,
        "-m",
        "xprof.server",
        "--logdir",
        str(logdir),
        "--port",
        str(port),
        "--grpc_port",
        str(port + 40000),
    ]
    server = bt.Server(argv, port, "/data/plugin/profile/runs", work / "xprof.log")
    out: dict[str, Any] = {}

    def trace(**window: float) -> dict[str, Any]:
        params = {"run": "run1/s1", "tag": "trace_viewer@", "host": "host0", **window}
        res = server.get("/data/plugin/profile/data?" + urllib.parse.urlencode(params))
        if res["status"] != 200:
            raise RuntimeError(f"XProf answered {res['status']}: {res['body'][:300]!r}")
        return res

    try:
        server.start()
        time.sleep(2.0)
        t0 = time.perf_counter()
        full = trace()
        out["cold_view_s"] = time.perf_counter() - t0
        body = json.loads(full["body"])
        span_ms = body["fullTimespan"]
        out["events"] = body.get("returnedEventsSize")
        views = []
        for zoom, start, end in windows(span_ms[1] - span_ms[0]):
            row: dict[str, Any] = {"zoom": zoom}
            params = (
                {} if zoom == 1 else {"start_time_ms": span_ms[0] + start, "end_time_ms": span_ms[0] + end}
            )
            for label in ("first", "repeat"):
                res = trace(**params)
                row[f"{label}_s"] = res["seconds"]
            row["wire_kb"], row["raw_kb"] = res["wire_bytes"] / 1e3, len(res["body"]) / 1e3
            row["events"] = json.loads(res["body"]).get("returnedEventsSize")
            views.append(row)
        out["views"] = views
        out["memory_mb"] = server.memory_mb()
        out["files_written_into_logdir"] = sorted(
            str(p.relative_to(logdir))
            for p in logdir.rglob("*")
            if p.is_file() and p.name != "host0.xplane.pb"
        )
    finally:
        server.stop()
    return out


def report(source: pathlib.Path, p: dict[str, Any], x: dict[str, Any]) -> str:
    lines = [
        f"Same XPlane: {source} ({source.stat().st_size / 1e6:.1f} MB); profscope {p['events']:,} events, "
        f"XProf returned {x['events']:,} events in its full view",
        "",
        "| | profscope | XProf |",
        "|---|---|---|",
        f"| cold first view | {p['cold_view_s']:.2f} s | {x['cold_view_s']:.2f} s |",
    ]
    for pv, xv in zip(p["views"], x["views"]):
        what = "full view" if pv["zoom"] == 1 else f"1/{pv['zoom']} of the span"
        lines.append(
            f"| {what}: first / repeat | {pv['first_s'] * 1e3:.0f} / {pv['repeat_s'] * 1e3:.0f} ms, "
            f"{pv['wire_kb']:.0f} KB sent ({pv['tiles']} tiles, level {pv['level']}) "
            f"| {xv['first_s'] * 1e3:.0f} / {xv['repeat_s'] * 1e3:.0f} ms, {xv['wire_kb']:.0f} KB sent "
            f"({xv['raw_kb'] / 1e3:.1f} MB JSON, {xv['events']:,} events) |"
        )
    lines.append(
        f"| server RSS (peak) | {p['memory_mb']['VmRSS']:.0f} MB ({p['memory_mb']['VmHWM']:.0f} MB) "
        f"| {x['memory_mb']['VmRSS']:.0f} MB ({x['memory_mb']['VmHWM']:.0f} MB) |"
    )
    lines.append(f"| files written into the logdir | none | {len(x['files_written_into_logdir'])} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xplane", type=pathlib.Path, required=True)
    parser.add_argument("--xprof-python", help="python of a venv with xprof (default: $XPROF_PYTHON)")
    parser.add_argument("--port", type=int, default=6130, help="profscope's port; XProf gets the next one")
    parser.add_argument("--screen-px", type=int, default=1600)
    parser.add_argument("--work", type=pathlib.Path, help="scratch folder (default: a temp dir, removed)")
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    xprof_python = bt.from_env(
        args.xprof_python,
        "XPROF_PYTHON",
        "--xprof-python",
        "the python of a venv that has `pip install xprof` (python -m venv DIR && DIR/bin/pip install xprof)",
    )
    source = args.xplane.resolve()
    work = args.work or pathlib.Path(tempfile.mkdtemp(prefix="bench_xprof_"))
    try:
        p = run_profscope(source, work, args.port, args.screen_px)
        x = run_xprof(source, work, args.port + 1, xprof_python)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(report(source, p, x))
    if args.out:
        args.out.write_text(json.dumps({"profscope": p, "xprof": x}, indent=1, default=str))


if __name__ == "__main__":
    main()
