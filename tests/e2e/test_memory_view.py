"""End to end: the Memory tab in headless Chromium against a real `tensorboard`.

The logdir (made in the test's temp folder from files in the repository) holds the two memory
captures of tests/data/memory (the 16 MiB temporary in the backward of step 3, and the leak of
1 MiB a step) and a real PyTorch trace recorded without `profile_memory` (tests/data/overview). The
tests read the peak card, its step and op, the tables against the server's own answer, click the
peak's triangle on the chart and follow it into the Trace tab (the range around the peak's op, the op
selected), see the leak's never-freed blocks one per step, see the plain trace say how to record
memory, and read the compiler's view of the XLA programs of the JAX CPU XPlane of tests/data/memory
(its peak, its buffers, another program picked in the selector, the peak instruction's link into the
Trace tab where its HLO graph opens; its allocation timeline, a box named on hover and selected from
its row, at 1280×800 in both themes), the memory spaces of the TPU v6e XPlane's program (picked in
their selector, kept in the deep link and reopened from it), the allocator curve of the TensorFlow
CPU XPlane there, and the GPU BFC allocators of the TensorFlow 8-GPU XPlane of tests/data/xplane
(the op at the peak, the shapes and dtypes their events name, their capacity and fragmentation, the
peak's step broken down as XProf does) and
the TPU XPlane's four chips. One tensorboard serves the module.
Screenshots go to test-output/e2e/<test>/.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import (
    OUTPUT,
    STARTUP_TIMEOUT_S,
    TensorBoardServer,
    _free_port,
    _stop,
    _tensorboard_command,
)
from tests.e2e.trace_fixtures import fragment, get_json, wait_idle

REPO = pathlib.Path(__file__).resolve().parents[2]
BUNDLE = REPO / "tb_plugin" / "profscope" / "static" / "index.js"
DATA = REPO / "tests" / "data"
FILES = {
    "peak/worker0.peak.pt.trace.json.gz": DATA / "memory/peak_backward.pt.trace.json.gz",
    "leak/worker0.leak.pt.trace.json.gz": DATA / "memory/leak_per_step.pt.trace.json.gz",
    "plain/worker0.plain.pt.trace.json.gz": DATA / "overview/slow_input.pt.trace.json.gz",
    "jax/plugins/profile/session/vm.xplane.pb": DATA / "memory/jax_cpu_train_step.xplane.pb",
    "tf/plugins/profile/session/vm.xplane.pb": DATA / "memory/tf_keras_cpu_bfc.xplane.pb",
    "gpu/plugins/profile/session/worker.xplane.pb": DATA / "xplane/gpu_8x_tf_training.xplane.pb",
    "tpu/plugins/profile/session/tpu.xplane.pb": DATA / "xplane/tpu_v6e_inference.xplane.pb",
}
MiB = 1024 * 1024

pytestmark = pytest.mark.skipif(
    not BUNDLE.is_file(), reason="the frontend bundle is not built (npm --prefix frontend run build)"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TensorBoardServer]:
    """One `tensorboard` on the module's logdir for all its tests (each run is read once)."""
    root = tmp_path_factory.mktemp("memory")
    logdir = root / "logdir"
    for dest, src in FILES.items():
        (logdir / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, logdir / dest)
    out = OUTPUT / "test_memory_view"
    out.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    command = [*_tensorboard_command(), "--logdir", str(logdir), "--host", "127.0.0.1", "--port", str(port)]
    command += ["--profscope_cache_dir", str(root / "cache")]
    with open(out / "tensorboard.log", "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=root)
    started = TensorBoardServer(
        f"http://127.0.0.1:{port}", port, str(logdir), process, out / "tensorboard.log"
    )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while process.poll() is None and time.monotonic() < deadline:
            try:
                if started.get("/data/plugins_listing", timeout=5)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.25)
        else:
            pytest.fail(f"tensorboard did not start: {' '.join(command)}\n{started.log_tail()}")
        yield started
    finally:
        _stop(started)


def subject(server, run: str) -> str:  # type: ignore[no-untyped-def]
    runs = get_json(server, "runs")["runs"]
    (session,) = next(r for r in runs if r["name"] == run)["sessions"]
    (host,) = session["hosts"]
    assert "memory" in host["tools"]
    return f"run={run}&session={session['name']}&host={host['name']}"


def open_memory(page, server, run: str):  # type: ignore[no-untyped-def]
    """Open the Memory tab of `run` and return the plugin's frame once the answer is shown."""
    page.goto(f"{server.url}/#profscope&{subject(server, run)}&tool=memory")
    iframe = page.wait_for_selector(
        "iframe[src*='plugin_entry.html?name=profscope']", state="attached", timeout=30_000
    )
    frame = iframe.content_frame()
    frame.wait_for_selector(
        "[data-testid=mem-device], [data-testid=mem-not-observed], [data-testid=mem-error]", timeout=120_000
    )
    return frame


def test_peak_cards_tables_and_the_click_into_the_trace(
    server, browser_page, page_errors, screenshot
) -> None:  # type: ignore[no-untyped-def]
    frame = open_memory(browser_page, server, "peak")
    answer = get_json(server, f"memory?{subject(server, 'peak')}")
    (device,) = answer["devices"]
    peak = device["peak"]
    assert peak["allocated_bytes"] == 16815160 and peak["step"] == "ProfilerStep#3"

    assert "16 MiB" in frame.inner_text("[data-testid=mem-peak-bytes]")
    assert "ProfilerStep#3" in frame.inner_text("[data-testid=mem-peak-step]")
    assert "big_backward_temporary › aten::div" in frame.inner_text("[data-testid=mem-peak-op]")
    assert "Reserved at peak\nnot observed" in frame.inner_text("[data-testid=mem-peak]")
    steps = frame.locator("[data-testid=mem-steps-table] tbody tr")
    assert steps.count() == 5
    assert "16 MiB" in steps.nth(2).inner_text() and "ProfilerStep#3" in steps.nth(2).inner_text()
    live = frame.locator("[data-testid=mem-live-table] tbody tr").first.inner_text()
    assert "aten::empty" in live and "[4194304]" in live and "16 MiB" in live
    listing = frame.inner_text("[data-testid=mem-live] .mem-hint")
    assert listing.endswith("all of the peak.")
    biggest = frame.locator("[data-testid=mem-allocations-table] tbody tr").first.inner_text()
    assert "16 MiB" in biggest and "big_backward_temporary" in biggest
    assert (
        frame.locator("[data-testid=mem-allocations-table] tbody tr").count() == device["allocations_count"]
    )

    frame.wait_for_selector("[data-testid=mem-chart-canvas][data-drawn]")
    marker = frame.wait_for_selector("[data-testid=mem-peak-point][data-x]", state="attached")
    frame.eval_on_selector("[data-testid=mem-chart]", "e => e.scrollIntoView({block: 'center'})")
    screenshot(browser_page, "peak")
    box = frame.locator("[data-testid=mem-chart-canvas]").bounding_box()
    x, y = box["x"] + float(marker.get_attribute("data-x")), box["y"] + float(marker.get_attribute("data-y"))
    browser_page.mouse.click(x, y)
    frame.wait_for_selector("[data-testid=trace-canvas]", timeout=60_000)
    link = fragment(browser_page)
    assert link["tool"] == "trace" and link["sel"] == str(peak["op_event_id"]), link
    assert float(link["start"]) == peak["trace_start_ns"] and float(link["end"]) == peak["trace_end_ns"]
    wait_idle(frame)
    screenshot(browser_page, "trace_at_peak")
    assert page_errors == []


def test_the_leak_lists_one_block_a_step_never_freed(server, browser_page, page_errors, screenshot) -> None:  # type: ignore[no-untyped-def]
    frame = open_memory(browser_page, server, "leak")
    frame.wait_for_selector("[data-testid=mem-chart-canvas][data-drawn]")
    screenshot(browser_page, "leak_chart")
    rows = frame.locator("[data-testid=mem-never-table] tbody tr")
    kept = [rows.nth(i).inner_text() for i in range(rows.count())]
    kept = [r for r in kept if "aten::mul" in r and "[256, 1024]" in r]
    assert sorted(next(s for s in r.split("\t") if s.startswith("ProfilerStep")) for r in kept) == [
        f"ProfilerStep#{n}" for n in range(1, 6)
    ]
    growth = frame.locator("[data-testid=mem-steps-table] tbody tr td[data-col=growth]")
    assert [growth.nth(i).inner_text() for i in range(1, 4)] == ["1 MiB"] * 3
    frame.eval_on_selector("[data-testid=mem-never]", "e => e.scrollIntoView()")
    screenshot(browser_page, "leak")
    assert page_errors == []


def test_a_trace_without_memory_says_how_to_record_it(server, browser_page, page_errors) -> None:  # type: ignore[no-untyped-def]
    frame = open_memory(browser_page, server, "plain")
    assert (
        frame.inner_text("[data-testid=mem-not-observed]")
        == "memory not observed: record with profile_memory=True"
    )
    assert frame.locator("[data-testid=mem-device]").count() == 0
    assert page_errors == []


def test_an_xla_program_shows_its_peak_heap_and_buffers(
    server, browser_page, page_errors, screenshot
) -> None:  # type: ignore[no-untyped-def]
    frame = open_memory(browser_page, server, "jax")
    answer = get_json(server, f"memory?{subject(server, 'jax')}")
    shown = answer["program"]
    assert shown["name"] == "jit_train_step" and shown["peak_bytes"] == answer["programs"][0]["peak_bytes"]
    frame.wait_for_selector("[data-testid=mem-program-chart-canvas][data-drawn]")
    assert "allocator memory not observed" in frame.inner_text("[data-testid=mem-not-observed]")
    assert "8.59 MiB" in frame.inner_text("[data-testid=mem-program-peak-bytes]")
    assert "ynn_fusion.2" in frame.inner_text("[data-testid=mem-program-peak-bytes]")
    rows = frame.locator("[data-testid=mem-program-live-table] tbody tr")
    assert rows.count() == shown["live_at_peak_count"]
    assert "f32[512,1024]{1,0}" in rows.first.inner_text() and "temporary" in rows.first.inner_text()
    frame.eval_on_selector("[data-testid=mem-program]", "e => e.scrollIntoView()")
    screenshot(browser_page, "program")

    other = answer["programs"][1]  # the second largest peak: a jit__normal with a heap simulation
    frame.select_option("[data-testid=mem-program-select]", "1")
    frame.wait_for_selector(f"[data-testid=mem-program][data-program={other['name']}]", timeout=30_000)
    frame.wait_for_selector("[data-testid=mem-program-chart-canvas][data-drawn]")
    picked = get_json(server, f"memory?{subject(server, 'jax')}&program={other['program_id']}")["program"]
    assert picked["peak_bytes"] == other["peak_bytes"] and picked["heap"]["events"] > 0
    link = fragment(browser_page)  # the pick is kept in the deep link
    assert (link["program"], link["program_host"]) == (
        other["program_id"],
        "0",
    ) and "memory_space" not in link
    rows = frame.locator("[data-testid=mem-program-live-table] tbody tr")
    assert rows.count() == picked["live_at_peak_count"]
    screenshot(browser_page, "program_picked")

    only_whole = next(p for p in answer["programs"] if p["name"] == "jit_dynamic_slice")
    frame.select_option("[data-testid=mem-program-select]", str(answer["programs"].index(only_whole)))
    frame.wait_for_selector("[data-testid=mem-program][data-program=jit_dynamic_slice]", timeout=30_000)
    assert frame.locator("[data-testid=mem-program-chart]").count() == 0  # no heap simulation: no curve
    assert "no heap simulation" in frame.inner_text("[data-testid=mem-program-temporary]")
    assert page_errors == []


def test_a_tensorflow_allocator_shows_its_curve_and_peak(
    server, browser_page, page_errors, screenshot
) -> None:  # type: ignore[no-untyped-def]
    frame = open_memory(browser_page, server, "tf")
    frame.wait_for_selector("[data-testid=mem-chart-canvas][data-drawn]")
    section = frame.locator("[data-testid=mem-device]")
    assert section.get_attribute("data-device") == "bfc_cpu_allocator_for_gpu"
    assert "866 KiB" in frame.inner_text("[data-testid=mem-peak-bytes]")
    op = frame.inner_text("[data-testid=mem-peak-op]")  # the event's tf_op, inside its op's TraceMe
    assert "StatefulPartitionedCall/gradient_tape/sequential_1/dense_1_2/MatMul/MatMul" in op
    assert "_MklMatMul › StatefulPartitionedCall" in op
    screenshot(browser_page, "tf_allocator")
    assert page_errors == []


def test_the_peak_instruction_opens_its_executions_and_hlo_graph_in_the_trace(
    server, browser_page, page_errors, screenshot
) -> None:  # type: ignore[no-untyped-def]
    frame = open_memory(browser_page, server, "jax")
    shown = get_json(server, f"memory?{subject(server, 'jax')}")["program"]
    ids = shown["instruction_events"]["ynn_fusion.2"]
    frame.wait_for_selector("[data-testid=mem-program-chart-canvas][data-drawn]")
    links = frame.locator("[data-testid=mem-program-live-table] [data-testid=mem-instruction-link]")
    assert sorted(links.nth(i).inner_text() for i in range(links.count())) == sorted(
        shown["instruction_events"]
    )
    assert frame.inner_text("[data-testid=mem-program-peak-link]") == "ynn_fusion.2"
    frame.click("[data-testid=mem-program-peak-link]")
    frame.wait_for_selector("[data-testid=trace-canvas]", timeout=60_000)
    link = fragment(browser_page)
    assert link["tool"] == "trace" and link["lk"] == ",".join(map(str, ids)), link
    frame.wait_for_function(
        "() => (document.querySelector('[data-testid=hlo-title]')?.textContent ?? '').startsWith('%ynn_fusion.2 in jit_train_step')",
        timeout=60_000,
    )
    wait_idle(frame)
    screenshot(browser_page, "peak_instruction_in_trace")
    assert page_errors == []


def test_a_tpu_programs_memory_spaces_are_picked_and_kept_in_the_link(
    server, browser_page, page_errors, screenshot
) -> None:  # type: ignore[no-untyped-def]
    frame = open_memory(browser_page, server, "tpu")
    query = subject(server, "tpu")
    shown = get_json(server, f"memory?{query}")["program"]
    assert shown["name"] == "jit_f" and shown["memory_spaces"] == [0, 1, 2, 5]
    frame.wait_for_selector("[data-testid=mem-program][data-memory-space='0']")
    options = frame.eval_on_selector_all(
        "[data-testid=mem-space-select] option", "os => os.map(o => o.value)"
    )
    assert options == ["0", "1", "2", "5"]
    frame.select_option("[data-testid=mem-space-select]", "2")
    frame.wait_for_selector("[data-testid=mem-program][data-memory-space='2']", timeout=30_000)
    space = get_json(server, f"memory?{query}&program={shown['program_id']}&memory_space=2")["program"]
    assert space["peak_bytes"] == 12 and space["peak_bytes"] != shown["peak_bytes"]
    assert "12 B" in frame.inner_text("[data-testid=mem-program-peak-bytes]")
    rows = frame.locator("[data-testid=mem-program-live-table] tbody tr")
    assert rows.count() == space["live_at_peak_count"]
    link = fragment(browser_page)
    assert (link["program"], link["memory_space"]) == (shown["program_id"], "2"), link
    frame.eval_on_selector("[data-testid=mem-program]", "e => e.scrollIntoView()")
    screenshot(browser_page, "memory_space_2")

    # The deep link reopens the same program and memory space.
    browser_page.goto("about:blank")
    params = "&".join(f"{k}={v}" for k, v in link.items())
    browser_page.goto(f"{server.url}/#profscope&{params}")
    iframe = browser_page.wait_for_selector(
        "iframe[src*='plugin_entry.html?name=profscope']", state="attached"
    )
    reopened = iframe.content_frame()
    reopened.wait_for_selector("[data-testid=mem-program][data-memory-space='2']", timeout=120_000)
    assert reopened.eval_on_selector("[data-testid=mem-space-select]", "s => s.value") == "2"
    assert page_errors == []


def test_tensorflow_gpu_allocators_show_the_op_shape_and_dtype_their_events_name(
    server, browser_page, page_errors, screenshot
) -> None:  # type: ignore[no-untyped-def]
    frame = open_memory(browser_page, server, "gpu")
    answer = get_json(server, f"memory?{subject(server, 'gpu')}")
    labels = [d["label"] for d in answer["devices"]]
    assert labels == ["GPU_1_bfc", "GPU_4_bfc", "GPU_6_bfc", "gpu_host_bfc"]
    sections = frame.locator("[data-testid=mem-device]")
    assert [sections.nth(i).get_attribute("data-device") for i in range(sections.count())] == labels
    gpu4 = frame.locator("[data-testid=mem-device][data-device=GPU_4_bfc]")
    assert "gradient_tape/replica_4/Tile" in gpu4.locator("[data-testid=mem-peak-op]").inner_text()
    headers = gpu4.locator("[data-testid=mem-allocations-table] thead th").all_inner_texts()
    assert any(h.startswith("Dtype") for h in headers) and any(h.startswith("Region") for h in headers)
    first = gpu4.locator("[data-testid=mem-live-table] tbody tr").first
    assert first.locator("td[data-col=shape]").inner_text() == "[30522,1024]"
    assert first.locator("td[data-col=dtype]").inner_text() == "half"
    assert "word_embeddings/GatherV2/Cast" in first.locator("td[data-col=op]").inner_text()
    gpu4.evaluate("e => e.scrollIntoView()")
    screenshot(browser_page, "gpu_allocators")
    assert page_errors == []


def test_a_gpu_allocator_shows_its_capacity_and_fragmentation(
    server, browser_page, page_errors, screenshot
) -> None:  # type: ignore[no-untyped-def]
    """XProf's summary figures (capacity, free and fragmentation at the peak, highest fragmentation,
    lifetime peak) as cards and the fragmentation curve under the byte curves; the TPU's chips, whose
    runtime reserves a stack, add the peak of allocated + reserved."""
    frame = open_memory(browser_page, server, "gpu")
    answer = get_json(server, f"memory?{subject(server, 'gpu')}")
    stats = next(d for d in answer["devices"] if d["label"] == "GPU_4_bfc")["allocator_stats"]
    gpu4 = frame.locator("[data-testid=mem-device][data-device=GPU_4_bfc]")
    assert "14.4 GiB" in gpu4.locator("[data-testid=mem-capacity]").inner_text()  # 15,477,102,400 B
    assert "0.0283%" in gpu4.locator("[data-testid=mem-fragmentation-at-peak]").inner_text()
    assert stats["peak_fragmentation"] == 0.0228278
    assert "2.28%" in gpu4.locator("[data-testid=mem-peak-fragmentation]").inner_text()
    assert "5.78 GiB" in gpu4.locator("[data-testid=mem-lifetime-peak]").inner_text()
    assert gpu4.locator("[data-testid=mem-peak-in-use]").count() == 0  # nothing reserved: the same peak
    frame.wait_for_selector(
        "[data-testid=mem-device][data-device=GPU_4_bfc] [data-testid=mem-fragmentation-canvas][data-drawn]"
    )
    gpu4.evaluate("e => e.scrollIntoView()")
    screenshot(browser_page, "gpu_allocator_fragmentation")
    step = gpu4.locator("[data-testid=mem-step-blocks]")  # XProf's breakdown of the peak's step
    assert (
        "Step 0 (the events' group_id): 554 blocks" in step.locator("[data-testid=mem-listing]").inner_text()
    )
    assert "3.74 GiB held from before the step" in step.inner_text()  # 4,013,337,088 B
    assert step.locator("tbody tr").count() == 200
    step.evaluate("e => e.scrollIntoView()")
    screenshot(browser_page, "gpu_allocator_peak_step")
    gpu1 = frame.locator("[data-testid=mem-device][data-device=GPU_1_bfc]")
    assert "names its step (group_id)" in gpu1.locator("[data-testid=mem-peak-step-reason]").inner_text()
    frame = open_memory(browser_page, server, "tpu")
    chip = frame.locator("[data-testid=mem-device][data-device='device 0']")
    assert "20 GiB" in chip.locator("[data-testid=mem-peak-in-use]").inner_text()  # 21,492,569,216 B
    frame.wait_for_selector("[data-testid=mem-fragmentation-canvas][data-drawn]")
    screenshot(browser_page, "tpu_allocator")
    assert page_errors == []


def _box_centre(frame, timeline: dict, box: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Page coordinates of box `box`'s centre, from the plot area the chart writes on its canvas."""
    canvas = frame.locator("[data-testid=mem-timeline-canvas]")
    left, top, right, bottom = map(int, canvas.get_attribute("data-area").split(","))
    frame_box = canvas.bounding_box()
    x = (timeline["start"][box] + timeline["end"][box]) / 2 / timeline["events"]
    band = timeline["bands"][timeline["band"][box]]
    y = (band["base_bytes"] + timeline["offset_bytes"][box] + timeline["size_bytes"][box] / 2) / timeline[
        "height_bytes"
    ]
    return frame_box["x"] + left + x * (right - left), frame_box["y"] + bottom - y * (bottom - top)


def test_the_allocation_timeline_names_a_box_and_follows_the_live_table(
    server, browser_page, page_errors, screenshot
) -> None:  # type: ignore[no-untyped-def]
    """XProf's allocation timeline of jit_train_step: hovering a box names its buffer and lights its
    row, a click on a row selects its box; at 1280×800 in the light and the dark theme."""
    browser_page.set_viewport_size({"width": 1280, "height": 800})
    frame = open_memory(browser_page, server, "jax")
    shown = get_json(server, f"memory?{subject(server, 'jax')}")["program"]
    timeline = shown["timeline"]
    assert timeline["instruction"] == [
        "ynn_fusion.4",
        "broadcast_maximum_fusion",
        "ynn_fusion.2",
        "compare_select_fusion",
    ]
    frame.wait_for_selector("[data-testid=mem-timeline-canvas][data-drawn][data-area]")
    assert "4 buffers of 1 temporary allocation over 8 heap events" in frame.inner_text(
        "[data-testid=mem-timeline-text]"
    )
    frame.eval_on_selector("[data-testid=mem-timeline]", "e => e.scrollIntoView({block: 'center'})")
    browser_page.mouse.move(*_box_centre(frame, timeline, 2))
    frame.wait_for_selector("[data-testid=mem-timeline][data-lit='80']")
    tip = frame.inner_text("[data-testid=mem-timeline-tip]")
    assert "ynn_fusion.2" in tip and "heap events 2–4 · live at the peak" in tip, tip
    lit = frame.locator("[data-testid=mem-program-live-table] tr.mem-row-lit")
    assert lit.count() == 1 and "ynn_fusion.2" in lit.inner_text()
    screenshot(browser_page, "timeline_hover")

    browser_page.mouse.move(5, 5)
    frame.wait_for_selector("[data-testid=mem-timeline][data-lit='']")
    frame.locator(
        "[data-testid=mem-program-live-table] tr[data-box]", has_text="broadcast_maximum_fusion"
    ).click(position={"x": 5, "y": 5})
    frame.wait_for_selector("[data-testid=mem-timeline][data-selected='75']")
    assert "Selected: broadcast_maximum_fusion" in frame.inner_text("[data-testid=mem-timeline-detail]")
    frame.eval_on_selector("[data-testid=mem-timeline]", "e => e.scrollIntoView({block: 'start'})")
    screenshot(browser_page, "timeline_selected_light")
    browser_page.click("app-header-dark-mode-toggle-component button")
    browser_page.get_by_role("menuitem", name="Dark").click()
    frame.wait_for_function("() => document.documentElement.dataset.theme === 'dark'")
    browser_page.keyboard.press("Escape")  # TensorBoard's theme menu, gone before the picture
    browser_page.get_by_role("menuitem", name="Dark").wait_for(state="hidden")
    frame.wait_for_selector("[data-testid=mem-timeline-canvas][data-drawn]")
    screenshot(browser_page, "timeline_selected_dark")
    browser_page.click("app-header-dark-mode-toggle-component button")
    browser_page.get_by_role("menuitem", name="Light").click()
    assert page_errors == []
