"""The Trace tab in headless Firefox ESR against a real `tensorboard` serving a real H100 trace.

Firefox is driven by `frontend/scripts/firefox-e2e.mjs` (puppeteer-core over WebDriver BiDi, from the
frontend's pinned npm dependencies); this test starts the server, runs the script and checks what it
saw: boxes drawn on the canvas, W zooming in with finer tiles requested, a click filling the details
panel, search jumping to a kernel, the help overlay, then the interactions of
test_trace_interactions.py in Firefox: the Timing tool and M measuring, the Flows toggle drawing arrows
and a flow link jumping to the linked event, Ctrl+click summarizing two events, A/D panning. The script
only reports positions, links, texts and pixel counts; the expectations are computed here, from the
drag and the server's own answers. A second run opens the Roofline tab of the TPU v6e XPlane, hovers a
chart point, reads its tooltip, clicks it, follows its link to the op's TPU executions in the Trace
tab and goes Back, then shows an MI300 XPlane kernel's `kernel_details` as fields. A third
(scripts/firefox-trace-looks.mjs) checks at 1280×800 the Tracks panel's "Device first" preset, the
launch → kernel latency in the details, the bars on one line and the timeline's share of the
height, Enter and Esc in the search box handing the keys back to the timeline, a Roofline row's link
to exactly its GPU kernels and Back through the tab switch, and the dark theme following
TensorBoard's toggle. Skips without
Firefox, Node or `frontend/node_modules` (run `npm --prefix frontend ci`).
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import urllib.parse

import pytest

from tests.e2e.trace_fixtures import (
    FLASH_KERNEL,
    GPU_LOGDIR,
    MEASURE_READOUT,
    REPO,
    get_json,
    link_of,
    ns_at,
    ns_per_px,
    parse_duration_ns,
    require_trace_routes,
    subject_query,
    view_range,
    write_big_kineto_trace,
)

FRONTEND = REPO / "frontend"
SCRIPT = FRONTEND / "scripts" / "firefox-e2e.mjs"


def _firefox() -> str:
    path = os.environ.get("PROFSCOPE_FIREFOX") or shutil.which("firefox-esr") or shutil.which("firefox") or ""
    missing = []
    if not path:
        missing.append("Firefox (apt-get install -y firefox-esr, or set PROFSCOPE_FIREFOX)")
    if not shutil.which("node"):
        missing.append("Node.js")
    if not (FRONTEND / "node_modules" / "puppeteer-core").is_dir():
        missing.append("frontend/node_modules (npm --prefix frontend ci)")
    if missing:
        pytest.skip("needs " + ", ".join(missing))
    return path


def _run_script(
    server, out: pathlib.Path, mode: str, firefox: str, home: pathlib.Path, timeout_s: float, *runs: str
) -> dict:
    """Run firefox-e2e.mjs (`mode`: the search term, "--fps" or "--roofline", with the `runs` it
    opens) against `server` and return the results.json it wrote into `out`, failing the test if it
    wrote none or reports a failure."""
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["node", str(SCRIPT), server.url, str(out), mode, firefox, *runs],
        cwd=FRONTEND,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**os.environ, "HOME": str(home)},
    )
    results_path = out / "results.json"
    assert results_path.exists(), f"firefox-e2e.mjs wrote no results:\n{proc.stdout}\n{proc.stderr}"
    results = json.loads(results_path.read_text())
    assert "failure" not in results, results["failure"]
    return results


def test_trace_view_in_firefox(tensorboard_server, tmp_path) -> None:
    firefox = _firefox()
    server = tensorboard_server(GPU_LOGDIR)
    require_trace_routes(server)
    out = REPO / "test-output" / "e2e" / "firefox"
    results = _run_script(server, out, FLASH_KERNEL, firefox, tmp_path, timeout_s=420)
    steps = results["steps"]

    assert steps["opened"]["ink"] > 2000, steps["opened"]

    zoom = steps["zoom"]
    assert zoom["levelAfter"] < zoom["levelBefore"], zoom
    assert any(z < zoom["levelBefore"] for z in zoom["tileLevels"]), zoom
    link = link_of(zoom["url"])
    assert float(link["end"]) - float(link["start"]) > 0
    query = subject_query(link)

    def event(event_id: str | int) -> dict:
        return get_json(server, f"trace/event?{query}&id={event_id}")

    click = steps["click"]
    assert click["name"]
    assert re.fullmatch(r"[\d.]+ (ns|µs|ms|s)|instant", click["duration"]), click
    assert event(link_of(click["url"])["sel"])["name"] == click["name"]

    search = steps["search"]
    answer = get_json(server, f"trace/search?{query}&q={FLASH_KERNEL}&limit=1000")
    assert search["count"].startswith(f"1 / {answer['total']}"), search
    assert FLASH_KERNEL in search["name"]
    assert int(link_of(search["url"])["sel"]) == answer["matches"][0]["id"]
    # The jump to the match keeps the zoom W set (the window pans, zooming out only for a wider target).
    zoomed, found = view_range(link), view_range(link_of(search["url"]))
    assert math.isclose(found[1] - found[0], zoomed[1] - zoomed[0], rel_tol=1e-6), (zoomed, found)

    assert "W / S" in steps["help"]["text"]

    # Timing tool: the readout says the dragged time, the view stays.
    measure = steps["measure"]
    assert measure["tool"] == "timing"
    before = link_of(measure["before"])
    assert view_range(link_of(measure["after"])) == view_range(before)
    box = measure["box"]
    px = ns_per_px(before, box)
    assert re.fullmatch(MEASURE_READOUT, measure["text"].strip()), measure["text"]
    dragged = (measure["x1"] - measure["x0"]) * px
    assert math.isclose(parse_duration_ns(measure["duration"]), dragged, rel_tol=0.01), (measure, dragged)
    for key, x in (("from", measure["x0"]), ("to", measure["x1"])):
        at = ns_at(before, box, x)
        assert abs(parse_duration_ns(measure[key]) - at) < 1.5 * px, (key, measure, at)

    # M on the selected event: its duration and times.
    mark = steps["mark"]
    marked = event(link_of(mark["url"])["sel"])
    assert marked["dur_ns"] > 0
    assert math.isclose(parse_duration_ns(mark["duration"]), marked["dur_ns"], rel_tol=2e-3), (mark, marked)
    assert abs(parse_duration_ns(mark["from"]) - marked["start_ns"]) <= max(1.0, 1e-6 * marked["start_ns"])
    assert mark["duration"] == mark["detailsDuration"]

    # Flows toggle: arrows on the canvas, the view unchanged.
    flows = steps["flows"]
    assert event(link_of(flows["kernelUrl"])["sel"])["flows_in"]
    assert view_range(link_of(flows["view"])) == view_range(link_of(flows["viewAfter"]))
    assert flows["flowsBefore"] == 0 and flows["flowsAfter"] >= 1, flows
    diff = flows["diff"]
    assert diff["changed"] > 150 and diff["towards"] > 0.9 * diff["changed"] and diff["leftChanged"] == 0, (
        diff
    )

    # A kernel's "Flows in" link, clicked while the launch is off screen, selects and shows the launch.
    follow = steps["followFlow"]
    kernel = event(link_of(follow["kernelUrl"])["sel"])
    launch_ref = kernel["flows_in"][0]
    assert follow["flowId"] == str(launch_ref["id"]), (follow, launch_ref)
    start, end = view_range(link_of(follow["moved"]))
    assert launch_ref["start_ns"] + launch_ref["dur_ns"] < start or launch_ref["start_ns"] > end, follow
    followed = link_of(follow["followed"])
    assert int(followed["sel"]) == launch_ref["id"]
    launch = event(launch_ref["id"])
    start, end = view_range(followed)
    assert start <= launch["start_ns"] and launch["start_ns"] + launch["dur_ns"] <= end, (followed, launch)
    assert follow["name"] == launch["name"]

    # Ctrl+click: the summary table of the two selected events is the server's.
    ctrl = steps["ctrlClick"]
    ids = link_of(ctrl["url"])["sel"].split(",")
    assert len(ids) == 2 and ids[0] != ids[1], ctrl
    summary = get_json(server, f"trace/summary?{query}&ids={','.join(ids)}")
    assert dict(ctrl["rows"]) == {r["name"]: r["count"] for r in summary["rows"]}, ctrl
    assert ctrl["title"] == "2 selected events"
    picked = ctrl["picked"]
    count = next(r["count"] for r in summary["rows"] if r["name"] == picked["name"])
    assert f"1 / {count}" in picked["text"], picked

    # A / D pan: the window moves both ways, its width stays.
    pan = {k: view_range(link_of(u)) for k, u in steps["pan"].items()}
    width = pan["zoomed"][1] - pan["zoomed"][0]
    for k in ("right", "left"):
        assert math.isclose(pan[k][1] - pan[k][0], width, rel_tol=1e-6), pan
    assert pan["right"][0] > pan["zoomed"][0] + 0.05 * width, pan
    assert pan["left"][0] < pan["right"][0] - 0.05 * width, pan
    assert results["errors"] == [], results["errors"]


def test_roofline_view_in_firefox(tensorboard_server, tmp_path) -> None:
    """The Roofline tab of the TPU v6e XPlane in Firefox: hovering a chart point shows that op's
    figures, clicking it highlights its table row, its card's link opens the Trace tab on the op's TPU
    executions ("1 of N"), and Back returns to the Roofline tab. Then, in the MI300 JAX XPlane of the
    same logdir, a kernel's `kernel_details` are fields of the details panel."""
    firefox = _firefox()
    xplanes = REPO / "tests" / "data" / "xplane"
    session = tmp_path / "logdir" / "tpu_v6e" / "plugins" / "profile" / "session1"
    session.mkdir(parents=True)
    shutil.copy(xplanes / "tpu_v6e_inference.xplane.pb", session / "tpu.xplane.pb")
    mi300 = tmp_path / "logdir" / "mi300" / "plugins" / "profile" / "session"
    mi300.mkdir(parents=True)
    shutil.copy(xplanes / "mi300_jax_conv.xplane.pb", mi300 / "host.xplane.pb")
    server = tensorboard_server(tmp_path / "logdir")
    out = REPO / "test-output" / "e2e" / "firefox_roofline"
    results = _run_script(server, out, "--roofline", firefox, tmp_path, 300, "tpu_v6e", "mi300")
    steps = results["steps"]["roofline"]
    answer = get_json(server, "roofline?run=tpu_v6e&session=session1&host=tpu")
    kind, rank = steps["key"].split(":")
    op = next(o for o in answer["ops"] if str(o["rank"]) == rank)
    assert kind == "op" and steps["tooltip"].startswith(f"{op['name']}\n"), steps
    assert "FLOP rate: " in steps["tooltip"] and "HBM intensity: " in steps["tooltip"], steps
    assert steps["selectedRank"] == rank and op["name"] in steps["pinned"], steps
    # The link lands on the op's executions on the TPU, not a host event of the same name; Back returns.
    link = link_of(steps["url"])
    subject = "run=tpu_v6e&session=session1&host=tpu"
    meta = get_json(server, f"trace/meta?{subject}")
    on_tpu = {
        t["id"]
        for t in meta["tracks"]
        if t["section"] in {s["id"] for s in meta["sections"] if s["kind"] == "tpu"}
    }
    found = get_json(server, f"trace/search?{subject}&q={urllib.parse.quote(op['search'])}&limit=1000")
    device = [m["id"] for m in found["matches"] if m["name"] == op["search"] and m["track"] in on_tpu][:200]
    assert link["tool"] == "trace" and link["lk"] == ",".join(map(str, device)), link
    assert int(link["sel"]) == device[0] and steps["linked"] == f"1 of {len(device):,}", steps
    assert link_of(steps["backUrl"])["tool"] == "roofline", steps["backUrl"]

    # The MI300 kernel's kernel_details, as the server wrote them, one field each.
    kernel = results["steps"]["kernelDetails"]
    query = subject_query(link_of(kernel["url"]))
    assert query == "run=mi300&session=session&host=host", query
    found = get_json(server, f"trace/search?{query}&arg=kernel_details:*grid:*&limit=1")
    event = get_json(server, f"trace/event?{query}&id={found['matches'][0]['id']}")
    assert kernel["id"] == str(event["id"]), kernel
    fields = dict(row.split("\t") for row in kernel["fields"])
    written = dict(item.split(":", 1) for item in event["args"]["kernel_details"].split())
    assert fields["Grid"] == written["grid"].replace(",", " × "), (fields, written)
    assert fields["Block"] == written["block"].replace(",", " × "), (fields, written)
    assert fields["Occupancy"] == f"{written['occ_pct']} %", (fields, written)
    assert results["errors"] == [], results["errors"]


def _luminance(css_or_rgb: str | list[int]) -> float:
    r, g, b = (
        [float(v) for v in re.findall(r"[\d.]+", css_or_rgb)[:3]]
        if isinstance(css_or_rgb, str)
        else css_or_rgb
    )
    return 0.299 * r + 0.587 * g + 0.114 * b


def test_tracks_details_and_looks_in_firefox(tensorboard_server, tmp_path) -> None:
    """Issue 42's panels and looks in Firefox at 1280×800 on the H100 trace: "Device first" brings
    the GPU streams to the top and into the link, "Hide Python stacks" hides the Python frames' tracks
    (kept in the link too), a kernel found by search shows its launch → kernel
    latency, the axis' tooltip the time from the trace's start, the bars stay on one line and the
    timeline keeps 60 % of the height with the kernel selected; after Enter or Esc in the search box
    W zooms; a Roofline row's link selects exactly its GPU kernels ("1 of N") and Back returns to the
    Roofline tab, then to the Trace window left; TensorBoard's dark-mode toggle turns the timeline,
    the details and the Overview dark."""
    firefox = _firefox()
    server = tensorboard_server(GPU_LOGDIR)
    require_trace_routes(server)
    out = REPO / "test-output" / "e2e" / "firefox_looks"
    script = FRONTEND / "scripts" / "firefox-trace-looks.mjs"
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["node", str(script), server.url, str(out), FLASH_KERNEL, firefox],
        cwd=FRONTEND,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    results_path = out / "results.json"
    assert results_path.exists(), f"firefox-trace-looks.mjs wrote no results:\n{proc.stdout}\n{proc.stderr}"
    results = json.loads(results_path.read_text())
    assert "failure" not in results, results["failure"]
    steps = results["steps"]

    tracks = steps["tracks"]
    query = subject_query(link_of(tracks["url"]))
    meta = get_json(server, f"trace/meta?{query}")
    gpu_sections = {s["id"] for s in meta["sections"] if s["kind"] == "gpu"}
    # The Python frames' tracks (`· Python`) are not device work: "Device first" leaves them.
    python = {t["id"] for t in meta["tracks"] if t["name"].endswith(" · Python")}
    gpu_tracks = {t["id"] for t in meta["tracks"] if t["section"] in gpu_sections} - python
    before = [int(t) for t in tracks["before"].split(",")]
    after = [int(t) for t in tracks["after"].split(",")]
    assert before[0] not in gpu_tracks and set(after[: len(gpu_tracks)]) == gpu_tracks, tracks
    assert {int(t) for t in link_of(tracks["url"])["tp"].split(",")} == gpu_tracks, tracks["url"]

    # "Hide Python stacks" takes the Python frames' tracks (the reader's `· Python` tracks) away.
    hidden = steps["hidePython"]
    shown = {int(t) for t in hidden["after"].split(",")}
    assert python and not python & shown and gpu_tracks <= shown, hidden
    assert link_of(hidden["url"])["tk"] == "python", hidden["url"]

    details = steps["details"]
    kernel = get_json(server, f"trace/event?{query}&id={details['id']}")
    launch = kernel["flows_in"][0]
    label, value = details["latency"].split("\t")
    assert label.startswith("Latency from"), details
    expected = kernel["start_ns"] - launch["start_ns"]
    assert abs(parse_duration_ns(value) - expected) <= max(1.0, 1e-3 * expected), (value, expected)
    assert "from the trace start" in details["axisLabel"], details
    sizes = details["sizes"]
    for bar in ("bar", "toolbar"):
        assert sizes[bar]["height"] < 45 and sizes[bar]["scroll"] <= sizes[bar]["width"], (bar, sizes)
    assert details["viewport"] == 800 and sizes["timeline"]["height"] >= 0.6 * 800, sizes

    # Enter and Esc in the search box hand the keys to the timeline: W zooms, the box keeps the term.
    found = get_json(server, f"trace/search?{query}&q={FLASH_KERNEL}&limit=1000")["matches"]
    assert link_of(steps["keys"]["Escape"]["before"])["sel"] == str(found[1]["id"]), steps["keys"]
    for key, seen in steps["keys"].items():
        before, after = view_range(link_of(seen["before"])), view_range(link_of(seen["after"]))
        assert seen["focus"] == "trace-viewer" and seen["box"] == FLASH_KERNEL, (key, seen)
        assert after[1] - after[0] < 0.9 * (before[1] - before[0]), (key, before, after)

    # A Roofline row's link selects exactly its GPU kernels; Back returns through the Roofline tab
    # to the Trace window the tab switch left.
    roofline = steps["roofline"]
    op = next(o for o in get_json(server, f"roofline?{query}")["ops"] if str(o["rank"]) == roofline["rank"])
    ids = op["event_ids"]
    link = link_of(roofline["url"])
    assert link["lk"] == ",".join(map(str, ids)) and int(link["sel"]) == ids[0], (link, ids)
    assert roofline["linked"] == f"1 of {len(ids)}", roofline
    for event_id in ids[:5]:
        event = get_json(server, f"trace/event?{query}&id={event_id}")
        assert event["track"] in gpu_tracks and event["name"] != op["name"].split("(")[0], event
    assert link_of(roofline["tabUrl"])["tool"] == "roofline", roofline  # the tab switch pushed an entry
    assert link_of(roofline["backUrl"])["tool"] == "roofline", roofline
    back = link_of(roofline["backAgain"])
    assert back["tool"] == "trace" and view_range(back) == view_range(link_of(roofline["left"])), roofline

    dark = steps["dark"]
    assert dark["theme"] == "dark"
    assert _luminance(dark["canvas"]) < 70 and _luminance(dark["bar"]) < 70, dark
    assert _luminance(dark["detailsText"]) > 180 and _luminance(dark["overviewText"]) > 180, dark
    assert _luminance(dark["overviewCard"]) < 70, dark
    assert results["errors"] == [], results["errors"]


@pytest.mark.skipif(
    os.environ.get("PROFSCOPE_BENCH") != "1",
    reason="benchmark: set PROFSCOPE_BENCH=1 (ingests a 1 M-event trace)",
)
def test_zoom_fps_1m_events_firefox(tensorboard_server, tmp_path) -> None:
    """Benchmark, not a timing assertion: test_zoom_fps_1m_events (Chromium) in Firefox, through the
    same synthetic 1 M-event trace and real TensorBoard; numbers in test-output/e2e/firefox_fps.json."""
    firefox = _firefox()
    run = tmp_path / "logdir" / "big"
    run.mkdir(parents=True)
    n = write_big_kineto_trace(run / "worker0.pt.trace.json.gz", 1_050_000)
    server = tensorboard_server(run.parent)
    require_trace_routes(server)
    out = REPO / "test-output" / "e2e" / "firefox_fps"
    results = _run_script(server, out, "--fps", firefox, tmp_path, timeout_s=1200)
    report = {"events": n, "browser": "firefox-esr", **results["steps"]["fps"]}
    (REPO / "test-output" / "e2e" / "firefox_fps.json").write_text(json.dumps(report, indent=2))
    print("Firefox FPS benchmark:", json.dumps(report))
    assert report["1400x900 zoom in (W)"]["fps"] > 0
    assert results["errors"] == [], results["errors"]
