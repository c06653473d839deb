"""Helpers for the trace-view browser tests: open the Trace tab, read the canvas, find an event to click.

They work on the profscope iframe's Playwright `Frame` returned by `open_profscope` (conftest.py) and
only rely on the UI's `data-testid` hooks and the pixels drawn, not on the viewer's internals.
"""

from __future__ import annotations

import gzip
import json
import pathlib
import urllib.parse

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
GPU_LOGDIR = REPO / "tests" / "data" / "trace_view" / "logdir"
DEMO_LOGDIR = REPO / "demo" / "logdir"
# Width of the track-label column (frontend/src/views/trace/render.ts LABEL_WIDTH), CSS px.
LABEL_WIDTH = 260

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


def open_trace_tab(frame, timeout_ms: float = 120_000) -> None:
    """Click the Trace tab and wait until the timeline has drawn boxes and no tile is loading."""
    frame.click("[data-testid=tab-trace]")
    wait_idle(frame, timeout_ms)


def wait_idle(frame, timeout_ms: float = 60_000) -> None:
    """Wait until a frame was drawn, no tile is loading and the deep link holds the visible range
    (a zoomed-out dense trace may draw only density, no single box)."""
    frame.wait_for_function(
        """() => {
          const c = document.querySelector('[data-testid=trace-canvas]');
          const s = document.querySelector('[data-testid=trace-status]');
          // ...and the deep link in TensorBoard's fragment caught up with the view.
          const linked = (window.top.location.hash + location.hash).includes('end=');
          return c && c.dataset.level !== undefined && s && s.dataset.loading === '0' && linked;
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


def fragment(page) -> dict[str, str]:
    """The profscope keys of the top window's fragment (`#profscope&run=…`). Read from the page itself:
    Playwright's `page.url` misses `history.replaceState` calls made from inside the iframe."""
    href = page.evaluate("location.href")
    frag = urllib.parse.urlsplit(href).fragment
    assert frag.startswith("profscope"), href
    return dict(urllib.parse.parse_qsl(frag[len("profscope") :].lstrip("&")))


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
