"""The HLO graph of an XLA op in the Trace tab's details panel, in headless Chromium against a real
`tensorboard`: a click on an op of the TPU v6e XPlane's XLA Ops line draws its neighbourhood (the op
highlighted, the instruction text and fused computation beside it, as the `hlo` route answers), a
click on a neighbour node re-centres the graph on that instruction, Back returns, the whole module
opens as text and "Find its events" searches the trace; the roofline's "graph" link of the MI300
XPlane's convolution opens it with its graph; an XPlane without HloProtos shows no Graph section.
The screenshot of the first graph is docs/screenshots/chromium_hlo_graph.png (a copy).
"""

from __future__ import annotations

import pathlib
import shutil
import urllib.parse

from tests.e2e.trace_fixtures import (
    LABEL_WIDTH,
    REPO,
    ROW_HEIGHT,
    TRACK_PAD,
    canvas_box,
    fragment,
    get_json,
    open_trace_tab,
    require_trace_routes,
    requires_bundle,
    settled_link,
    subject_query,
    track_rows,
    wait_idle,
    wait_link,
)

pytestmark = requires_bundle

TPU_XPLANE = REPO / "tests" / "data" / "xplane" / "tpu_v6e_inference.xplane.pb"
MI300_XPLANE = REPO / "tests" / "data" / "xplane" / "mi300_jax_conv.xplane.pb"
CONVOLUTION = "cudnn-conv.1"
FUSION = "broadcast_add_fusion.2"
_SVG_NODES_JS = "() => document.querySelectorAll('[data-testid=hlo-graph] svg g.node').length"


def _logdir_of(tmp_path: pathlib.Path, run: str, xplane: pathlib.Path) -> pathlib.Path:
    """A logdir of one run holding `xplane` as host "host" of session "session"."""
    folder = tmp_path / "logdir" / run / "plugins" / "profile" / "session"
    folder.mkdir(parents=True)
    shutil.copy(xplane, folder / "host.xplane.pb")
    return tmp_path / "logdir"


def _open_trace(tensorboard_server, page, open_profscope, logdir: pathlib.Path):
    server = tensorboard_server(logdir)
    require_trace_routes(server)
    frame = open_profscope(page, server)
    frame.wait_for_selector("[data-testid=run-select] option", state="attached", timeout=30_000)
    return server, frame


def _wait_graph_of(frame, op: str) -> None:
    """Wait until the Graph section shows `op` and its drawing is there."""
    frame.wait_for_function(
        "op => (document.querySelector('[data-testid=hlo-title]')?.textContent ?? '').startsWith('%' + op + ' ')",
        arg=op,
        timeout=30_000,
    )
    frame.wait_for_function(f"() => ({_SVG_NODES_JS})() > 0", timeout=30_000)


def _initially_collapsed(meta: dict, max_open_threads: int = 8) -> set[int]:
    """The sections the viewer starts collapsed (viewer.ts `initiallyCollapsed`): with a device on
    the timeline, host sections of more than 8 threads."""
    if not any(s["kind"] in ("gpu", "tpu") for s in meta["sections"]):
        return set()
    counts: dict[int, int] = {}
    for t in meta["tracks"]:
        counts[t["section"]] = counts.get(t["section"], 0) + 1
    return {
        s["id"] for s in meta["sections"] if s["kind"] == "cpu" and counts.get(s["id"], 0) > max_open_threads
    }


def _click_event(page, frame, meta: dict, event: dict) -> None:
    """Click the middle of `event`'s box where the timeline draws it (its track's row at its depth,
    less the scroll; its time span in the window of the deep link)."""
    link = settled_link(page, frame)
    top, _ = track_rows(meta, _initially_collapsed(meta))[event["track"]]
    scrolled = frame.evaluate("document.querySelector('.tv-scroll').scrollTop")
    y = top + TRACK_PAD + event["depth"] * ROW_HEIGHT + ROW_HEIGHT / 2 - scrolled
    start, end = float(link["start"]), float(link["end"])
    box = canvas_box(frame)
    middle = max(start, event["start_ns"]) / 2 + min(end, event["start_ns"] + event["dur_ns"]) / 2
    x = LABEL_WIDTH + (middle - start) / (end - start) * (box["width"] - LABEL_WIDTH)
    assert 0 < y < box["height"], (y, box)
    page.mouse.click(box["x"] + x, box["y"] + y)


def test_clicking_an_xla_op_draws_its_graph_and_a_node_walks_to_a_neighbour(
    tensorboard_server, browser_page, page_errors, open_profscope, screenshot, tmp_path
) -> None:
    logdir = _logdir_of(tmp_path, "tpu_v6e", TPU_XPLANE)
    server, frame = _open_trace(tensorboard_server, browser_page, open_profscope, logdir)
    open_trace_tab(frame)
    query = subject_query(fragment(browser_page))
    meta = get_json(server, f"trace/meta?{query}")
    # Find a fusion's event on a TPU XLA Ops line (its long_name names it), then click its box anew.
    frame.fill("[data-testid=search-input]", f"%{FUSION} = ")
    frame.press("[data-testid=search-input]", "Enter")
    wait_link(frame, "sel=")
    event = get_json(server, f"trace/event?{query}&id={settled_link(browser_page, frame)['sel']}")
    assert event["name"] == FUSION
    frame.press("[data-testid=search-input]", "Escape")  # leaves the search box for the timeline
    browser_page.keyboard.press("f")  # zooms to the match (a search keeps the zoom)
    wait_idle(frame)
    browser_page.keyboard.press("Escape")  # clears the selection
    frame.wait_for_selector("[data-testid=hlo-section]", state="detached")
    _click_event(browser_page, frame, meta, event)
    frame.wait_for_function(
        "name => document.querySelector('[data-testid=details-name]')?.textContent === name", arg=FUSION
    )
    event_id = str(event["id"])
    answer = get_json(server, f"hlo?{query}&event={event_id}")
    assert answer["kind"] == "op", answer
    _wait_graph_of(frame, answer["op"])
    browser_page.mouse.move(1, 1)  # no hover tooltip over the timeline
    screenshot(browser_page, "hlo_graph")

    # What the section shows is the server's answer: the module, the instruction text, every node.
    title = frame.inner_text("[data-testid=hlo-title]")
    assert f"in {answer['module']} · program {answer['program_id']}" in title
    assert frame.inner_text("[data-testid=hlo-text]") == answer["text"]
    drawn = frame.eval_on_selector_all("[data-testid=hlo-graph] g.node", "gs => gs.map(g => g.dataset.op)")
    assert sorted(drawn) == sorted(n["name"] for n in answer["nodes"])
    current = frame.eval_on_selector_all("g.tv-hlo-current", "gs => gs.map(g => g.dataset.op)")
    assert current == [answer["op"]]
    if "fusion" in answer:
        assert frame.inner_text("[data-testid=hlo-fusion]") == "\n".join(answer["fusion"]["instructions"])

    # A click on a neighbour re-centres the graph on it; Back returns to the op.
    neighbour = next(n["name"] for n in answer["nodes"] if n["distance"] == 1)
    frame.click(f"[data-testid=hlo-graph] g.node[data-op='{neighbour}']")
    _wait_graph_of(frame, neighbour)
    params = {"program_id": answer["program_id"], "op": neighbour, "host_index": answer["host_index"]}
    moved = get_json(server, f"hlo?{query}&{urllib.parse.urlencode(params)}")
    assert frame.inner_text("[data-testid=hlo-text]") == moved["text"]
    assert frame.eval_on_selector_all("g.tv-hlo-current", "gs => gs.map(g => g.dataset.op)") == [neighbour]
    assert answer["op"] in frame.eval_on_selector_all(
        "[data-testid=hlo-graph] g.node", "gs => gs.map(g => g.dataset.op)"
    )
    frame.click("[data-testid=hlo-back]")
    _wait_graph_of(frame, answer["op"])

    # The whole module opens as text, and "Find its events" searches the trace for the op.
    frame.click("[data-testid=hlo-module] summary")
    frame.wait_for_selector("[data-testid=hlo-module-text]", timeout=30_000)
    assert frame.inner_text("[data-testid=hlo-module-text]").startswith(f"HloModule {answer['module']}")
    frame.click("[data-testid=hlo-find-events]")
    frame.wait_for_function(
        "op => document.querySelector('[data-testid=search-input]').value === op", arg=answer["op"]
    )
    assert page_errors == []


def test_the_roofline_graph_link_opens_the_op_with_its_graph(
    tensorboard_server, browser_page, page_errors, open_profscope, tmp_path
) -> None:
    """On the MI300 JAX XPlane, the convolution's "graph" link opens the Trace tab on the op's first
    execution on a GPU (not the host-side thunk named after it) with the op's graph."""
    logdir = _logdir_of(tmp_path, "mi300", MI300_XPLANE)
    server, frame = _open_trace(tensorboard_server, browser_page, open_profscope, logdir)
    frame.click("[data-testid=tab-roofline]")
    row = f"[data-testid=rf-op-row]:has(.rf-name:text-is('{CONVOLUTION}'))"
    frame.click(f"{row} [data-testid=rf-open-graph]", timeout=120_000)
    _wait_graph_of(frame, CONVOLUTION)
    wait_link(frame, "sel=")
    link = fragment(browser_page)
    query = subject_query(link)
    assert get_json(server, f"hlo?{query}&event={link['sel']}")["op"] == CONVOLUTION
    meta = get_json(server, f"trace/meta?{query}")
    gpu = {s["id"] for s in meta["sections"] if s["kind"] == "gpu"}
    on_gpu = {t["id"] for t in meta["tracks"] if t["section"] in gpu}
    assert get_json(server, f"trace/event?{query}&id={link['sel']}")["track"] in on_gpu
    assert page_errors == []


def test_an_xplane_without_hlo_protos_shows_no_graph_section(
    tensorboard_server, browser_page, page_errors, open_profscope, tmp_path
) -> None:
    """The TensorFlow GPU XPlane carries no HloProto: the route says so, and its events get no Graph
    section (the panel asks quietly and shows nothing)."""
    logdir = _logdir_of(tmp_path, "tf", REPO / "tests" / "data" / "xplane" / "gpu_8x_tf_training.xplane.pb")
    server, frame = _open_trace(tensorboard_server, browser_page, open_profscope, logdir)
    open_trace_tab(frame)
    query = subject_query(fragment(browser_page))
    assert get_json(server, f"hlo?{query}&program_id=1&op=fusion") == {
        "kind": "no-module",
        "subject": "run 'tf' session 'session'",
        "host_index": 0,
        "reason": "the profile carries no HLO module",
    }
    frame.fill("[data-testid=search-input]", "MatMul")
    frame.press("[data-testid=search-input]", "Enter")
    frame.wait_for_selector("[data-testid=details-name]", timeout=30_000)
    wait_link(frame, "sel=")
    hlo_answered = f"hlo?{query}&event={fragment(browser_page)['sel']}"
    assert get_json(server, hlo_answered)["kind"] == "no-module"
    frame.wait_for_timeout(500)
    assert frame.eval_on_selector_all("[data-testid=hlo-section]:not([hidden])", "els => els.length") == 0
    assert page_errors == []
