"""Helpers for the trace-view browser tests: open the Trace tab, read the canvas, find an event to click.

They work on the profscope iframe's Playwright `Frame` returned by `open_profscope` (conftest.py) and
only rely on the UI's `data-testid` hooks and the pixels drawn, not on the viewer's internals.
"""

from __future__ import annotations

import gzip
import json
import pathlib
import re
import time
import urllib.parse

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
GPU_LOGDIR = REPO / "tests" / "data" / "trace_view" / "logdir"
DEMO_LOGDIR = REPO / "demo" / "logdir"
# A kernel of the H100 trace with incoming flows (its launches) and many matches.
FLASH_KERNEL = "flash_fwd_kernel"
# What the measurement readout reads: "⟷ 1.2 ms measured  3 ms → 4.2 ms".
MEASURE_READOUT = r"⟷ \S+ \S+ measured\s+\S+ \S+ → \S+ \S+"
# Width of the track-label column (frontend/src/views/trace/render.ts LABEL_WIDTH), CSS px.
LABEL_WIDTH = 260
# Vertical layout of the timeline (frontend/src/views/trace/layout.ts), CSS px.
SECTION_HEIGHT = 24
ROW_HEIGHT = 18
TRACK_PAD = 3
_UNIT_NS = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9}

# The trace-view tests drive the built bundle; without it there is nothing to test.
requires_bundle = pytest.mark.skipif(
    not (REPO / "tb_plugin" / "profscope" / "static" / "index.js").is_file(),
    reason="the frontend bundle is not built (npm --prefix frontend run build)",
)

# JS: counts the strongly coloured pixels (event boxes; backgrounds and text are grey) of the
# timeline canvas right of the label column, and the rows that hold any.
_INK_JS = """
([left]) => {
  const c = document.querySelector('[data-testid=trace-canvas]');
  const dpr = c.width / c.getBoundingClientRect().width;
  const x0 = Math.ceil(left * dpr);
  const data = c.getContext('2d').getImageData(x0, 0, c.width - x0, c.height).data;
  let ink = 0;
  const rows = new Set();
  const w = c.width - x0;
  for (let i = 0; i < data.length; i += 4) {
    const r = data[i], g = data[i + 1], b = data[i + 2];
    if (Math.max(r, g, b) - Math.min(r, g, b) > 60) { ink++; rows.add(Math.floor(i / 4 / w)); }
  }
  return {ink, rows: rows.size, width: c.width, height: c.height, dpr};
}
"""

# JS: CSS-pixel positions inside the canvas of coloured event pixels, sampled on a grid.
_EVENT_POINTS_JS = """
([left]) => {
  const c = document.querySelector('[data-testid=trace-canvas]');
  const dpr = c.width / c.getBoundingClientRect().width;
  const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const out = [];
  for (let y = 2; y < c.height && out.length < 400; y += Math.max(1, Math.round(3 * dpr))) {
    for (let x = Math.ceil((left + 2) * dpr); x < c.width; x += Math.max(1, Math.round(2 * dpr))) {
      const i = (y * c.width + x) * 4;
      const r = data[i], g = data[i + 1], b = data[i + 2];
      if (Math.max(r, g, b) - Math.min(r, g, b) > 60) {
        // Keep points whose neighbours 3 px left and right are the same colour (inside a box).
        const j = (y * c.width + x - 3) * 4, k = (y * c.width + x + 3) * 4;
        if (data[j] === r && data[k] === r && data[j + 1] === g && data[k + 1] === g) {
          out.push({x: x / dpr, y: y / dpr});
          x += Math.round(40 * dpr);
        }
      }
    }
  }
  return out;
}
"""


def require_trace_routes(server) -> None:
    """Skip while the server has no trace routes at all (a 404 for the route itself; once the route
    exists, a request without parameters is a 400 naming the missing one)."""
    status, _, body = server.get("/data/plugin/profscope/trace/meta")
    if status == 404:
        pytest.skip(f"the plugin does not serve /trace/meta yet (HTTP 404: {body[:80]!r})")


def open_gpu_trace(tensorboard_server, browser_page, open_profscope) -> tuple[object, object, list[str]]:
    """Serve GPU_LOGDIR, open its Trace tab and wait until drawn: (server, frame, requested URLs)."""
    server = tensorboard_server(GPU_LOGDIR)
    require_trace_routes(server)
    requests: list[str] = []
    browser_page.on("request", lambda r: requests.append(r.url))
    frame = open_profscope(browser_page, server)
    frame.wait_for_selector("[data-testid=run-select] option", state="attached", timeout=30_000)
    open_trace_tab(frame)
    return server, frame, requests


def canvas_box(frame) -> dict:
    """The timeline canvas' box in page coordinates (what `page.mouse` takes)."""
    return frame.locator("[data-testid=trace-canvas]").bounding_box()


def open_trace_tab(frame, timeout_ms: float = 120_000) -> None:
    """Click the Trace tab and wait until the timeline has drawn boxes and no tile is loading."""
    frame.click("[data-testid=tab-trace]")
    wait_idle(frame, timeout_ms)


def wait_idle(frame, timeout_ms: float = 60_000) -> None:
    """Wait until a frame was drawn, no tile is loading and the deep link holds the visible range
    (a zoomed-out dense trace may draw only density, no single box): written, and none due since
    the last frame (on a loaded machine the link's timer may fire well after its 200 ms)."""
    frame.wait_for_function(
        """() => {
          const c = document.querySelector('[data-testid=trace-canvas]');
          const s = document.querySelector('[data-testid=trace-status]');
          // ...and the deep link in TensorBoard's fragment caught up with the view.
          const linked = (window.top.location.hash + location.hash).includes('end=');
          return c && c.dataset.level !== undefined && s && s.dataset.loading === '0' && linked
            && c.dataset.linkPending !== '1';
        }""",
        timeout=timeout_ms,
    )


def wait_link(frame, part: str, timeout_ms: float = 15_000) -> None:
    """Wait until TensorBoard's fragment holds `part` (e.g. "sel="): the link follows the view a moment
    after it settles."""
    frame.wait_for_function("p => window.top.location.hash.includes(p)", arg=part, timeout=timeout_ms)


def canvas_ink(frame) -> dict:
    """Coloured pixels of the timeline canvas (event boxes), read back from the canvas itself."""
    return frame.evaluate(_INK_JS, [LABEL_WIDTH])


def event_points(frame) -> list[dict]:
    """Points (CSS px, relative to the canvas) that lie inside drawn event boxes."""
    return frame.evaluate(_EVENT_POINTS_JS, [LABEL_WIDTH])


def link_of(href: str) -> dict[str, str]:
    """The profscope keys of a TensorBoard URL's fragment (`…/#profscope&run=…`)."""
    frag = urllib.parse.urlsplit(href).fragment
    assert frag.startswith("profscope"), href
    return dict(urllib.parse.parse_qsl(frag[len("profscope") :].lstrip("&")))


def fragment(page) -> dict[str, str]:
    """The profscope keys of the top window's fragment. Read from the page itself: Playwright's
    `page.url` misses `history.replaceState` calls made from inside the iframe."""
    return link_of(page.evaluate("location.href"))


def settled_link(page, frame, quiet_s: float = 0.45, timeout_s: float = 15.0) -> dict[str, str]:
    """The deep link once the view is idle and the link has not changed for `quiet_s` (it follows
    the view 200 ms after each frame)."""
    wait_idle(frame)
    deadline = time.monotonic() + timeout_s
    last = fragment(page)
    while True:
        time.sleep(quiet_s)
        now = fragment(page)
        if now == last or time.monotonic() > deadline:
            return now
        last = now


def view_range(link: dict[str, str]) -> tuple[float, float]:
    """(start, end) of the visible window in ns, from the deep link."""
    return float(link["start"]), float(link["end"])


def ns_per_px(link: dict[str, str], box: dict) -> float:
    """Nanoseconds per CSS pixel of the timeline, from the window in the deep link and the canvas box."""
    start, end = view_range(link)
    return (end - start) / (box["width"] - LABEL_WIDTH)


def ns_at(link: dict[str, str], box: dict, page_x: float) -> float:
    """The instant under page x, from the window in the deep link and the canvas geometry."""
    return view_range(link)[0] + (page_x - box["x"] - LABEL_WIDTH) * ns_per_px(link, box)


def subject_query(link: dict[str, str]) -> str:
    """`run=…&session=…&host=…` of the trace the link shows, for the data routes."""
    return urllib.parse.urlencode({k: link[k] for k in ("run", "session", "host")})


def hold(page, key: str, seconds: float) -> None:
    """Hold `key` down for `seconds`, as a user holding W/A/S/D does."""
    page.keyboard.down(key)
    time.sleep(seconds)
    page.keyboard.up(key)


def click_an_event(frame, below_y: float = 0.0) -> None:
    """Click the middle one of the drawn event boxes lower than `below_y` (CSS px in the canvas)."""
    points = [p for p in event_points(frame) if p["y"] > below_y]
    assert points, "no event box on the canvas to click"
    frame.locator("[data-testid=trace-canvas]").click(position=points[len(points) // 2])


def get_json(server, route: str) -> dict:
    """GET a data route of the plugin (`trace/event?…`) and decode it; any status but 200 fails."""
    status, _, body = server.get(f"/data/plugin/profscope/{route}")
    assert status == 200, (route, status, body[:300])
    return json.loads(body)


def goto_range(page, frame, start_ns: float, end_ns: float) -> dict[str, str]:
    """Show [start_ns, end_ns] through the deep link (as a pasted link would) and return the settled link."""
    link = fragment(page)
    keys = {k: link[k] for k in ("run", "session", "host", "tool") if k in link}
    page.evaluate(
        "frag => { location.hash = frag; }",
        "profscope&" + urllib.parse.urlencode({**keys, "start": repr(start_ns), "end": repr(end_ns)}),
    )
    deadline = time.monotonic() + 15
    while view_range(fragment(page)) != (start_ns, end_ns) and time.monotonic() < deadline:
        time.sleep(0.1)
    return settled_link(page, frame)


def parse_duration_ns(text: str) -> float:
    """ "10.08 µs" → 10080.0: a duration or timestamp as the viewer formats it (format.ts), in ns."""
    m = re.fullmatch(r"\s*(-?[\d.]+) (ns|µs|ms|s)\s*", text)
    assert m, f"not a time with a unit: {text!r}"
    return float(m.group(1)) * _UNIT_NS[m.group(2)]


def track_rows(meta: dict, collapsed: set[int]) -> dict[int, tuple[float, float]]:
    """Content y range (top, bottom) of each visible track, laid out as layout.ts does: sections by
    sort index, a header each, then their tracks (depth rows plus padding) unless collapsed."""
    by_section: dict[int, list[dict]] = {}
    for t in meta["tracks"]:
        by_section.setdefault(t["section"], []).append(t)
    rows: dict[int, tuple[float, float]] = {}
    y = 0.0
    for sec in sorted(meta["sections"], key=lambda s: (s["host"], s["sort_index"], s["id"])):
        y += SECTION_HEIGHT
        if sec["id"] in collapsed:
            continue
        for t in sorted(by_section.get(sec["id"], []), key=lambda t: (t["sort_index"], t["id"])):
            height = 44 if t["kind"] == "counter" else (t["max_depth"] + 1) * ROW_HEIGHT + 2 * TRACK_PAD
            rows[t["id"]] = (y, y + height)
            y += height
    return rows


def tile_levels(urls: list[str]) -> list[int]:
    """Levels of the trace/tile requests among `urls`, in request order."""
    out = []
    for u in urls:
        parts = urllib.parse.urlsplit(u)
        if parts.path.endswith("/trace/tile"):
            out.append(int(urllib.parse.parse_qs(parts.query)["level"][0]))
    return out


def write_big_kineto_trace(path: pathlib.Path, n_events: int, threads: int = 64, streams: int = 64) -> int:
    """A synthetic Kineto-style trace with at least `n_events` complete events for the frames-per-second
    benchmark (the corpus has no trace this big): `threads` CPU threads of back-to-back 40 µs ops with
    two 18 µs children each, and `streams` GPU streams of back-to-back 8 µs kernels, so that a window
    of ~9 ms on a tall screen holds ~100 k boxes of at least one pixel. Returns the events written."""
    names = [f"aten::op_{k}" for k in range(40)]
    kernels = [f"kernel_{k}_sm80" for k in range(60)]
    written = 0
    with gzip.open(path, "wt", compresslevel=1) as out:
        out.write('{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [\n')
        meta = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}}]
        meta += [
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 100 + t, "args": {"name": f"worker {t}"}}
            for t in range(threads)
        ]
        out.write(",\n".join(json.dumps(e, separators=(",", ":")) for e in meta))
        block = 0
        while written < n_events:
            # One 400 µs block: 10 ops per thread, 44 kernels per stream.
            t0 = block * 400.0
            batch = []
            for t in range(threads):
                for k in range(10):
                    ts = t0 + k * 40.0
                    op = names[(k + t + block) % 40]
                    batch.append(
                        {
                            "ph": "X",
                            "cat": "cpu_op",
                            "name": op,
                            "pid": 1,
                            "tid": 100 + t,
                            "ts": ts,
                            "dur": 39.0,
                        }
                    )
                    for c in range(2):
                        child = names[(k * 3 + c + t) % 40]
                        batch.append(
                            {
                                "ph": "X",
                                "cat": "cpu_op",
                                "name": child,
                                "pid": 1,
                                "tid": 100 + t,
                                "ts": ts + 1 + c * 19,
                                "dur": 18.0,
                            }
                        )
            for st in range(streams):
                for j in range(44):
                    name = kernels[(j * 7 + st + block) % len(kernels)]
                    batch.append(
                        {
                            "ph": "X",
                            "cat": "kernel",
                            "name": name,
                            "pid": 0,
                            "tid": 7 + st,
                            "ts": t0 + j * 9.0,
                            "dur": 8.0,
                        }
                    )
            out.write(",\n" + ",\n".join(json.dumps(e, separators=(",", ":")) for e in batch))
            written += len(batch)
            block += 1
        out.write("\n]}\n")
    return written
