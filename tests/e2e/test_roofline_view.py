"""End to end: the Roofline tab in headless Chromium against a real `tensorboard`.

The logdir (made in the test's temp folder from files already in the repository) holds the TPU v6e
XPlane (tests/data/xplane), the 8-GPU TensorFlow XPlane (it has a step), the H100 Kineto trace of
tests/data/trace/logdir (costs estimated from shapes) and the demo's CPU-only JAX XPlane. The tests
read the device peaks and their sources, hover a chart point and read its tooltip, click it and find
its table row highlighted, follow its link into the Trace tab, sort, filter and download the op table
as CSV (the blob the link points at), toggle infeed and pick a step through the deep link, and see a
CPU-only capture say why it has no roofline. Expectations come from the server's own answer where
they are numbers. Screenshots go to test-output/e2e/<test>/.
"""

from __future__ import annotations

import pathlib
import shutil
import urllib.parse

import pytest

from tests.e2e.trace_fixtures import fragment, get_json

REPO = pathlib.Path(__file__).resolve().parents[2]
BUNDLE = REPO / "tb_plugin" / "profscope" / "static" / "index.js"
FILES = {
    "tpu_v6e/plugins/profile/session1/tpu.xplane.pb": REPO / "tests/data/xplane/tpu_v6e_inference.xplane.pb",
    "gpu_8x/plugins/profile/session1/worker0.xplane.pb": REPO
    / "tests/data/xplane/gpu_8x_tf_training.xplane.pb",
    "bert/bert_small.pt.trace.json.gz": REPO / "tests/data/trace/logdir/bert/bert_small.pt.trace.json.gz",
    "jax_cpu/plugins/profile/session1/vm.xplane.pb": REPO
    / "demo/logdir/jax_cpu_training/plugins/profile/2026_11_30_00_33_00/vm.xplane.pb",
}
TPU = "run=tpu_v6e&session=session1&host=tpu"
GPU_8X = "run=gpu_8x&session=session1&host=worker0"
BERT = "run=bert&session=pytorch&host=bert_small"
CPU = "run=jax_cpu&session=session1&host=vm"

pytestmark = pytest.mark.skipif(
    not BUNDLE.is_file(), reason="the frontend bundle is not built (npm --prefix frontend run build)"
)


@pytest.fixture(scope="module")
def roofline_logdir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """Read-only to the tests: the module's tests share it, and so one server (see e2e/conftest.py)."""
    tmp_path = tmp_path_factory.mktemp("roofline_logdir")
    logdir = tmp_path / "logdir"
    for dest, src in FILES.items():
        (logdir / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, logdir / dest)
    return logdir


def open_roofline(page, server, subject: str, extra: str = ""):  # type: ignore[no-untyped-def]
    """Open the Roofline tab of `subject` and return the plugin's frame once the answer is shown."""
    page.goto(f"{server.url}/#profscope&{subject}&tool=roofline{extra}")
    iframe = page.wait_for_selector(
        "iframe[src*='plugin_entry.html?name=profscope']", state="attached", timeout=30_000
    )
    frame = iframe.content_frame()
    frame.wait_for_selector(
        "[data-testid=rf-ops], [data-testid=rf-not-observed], [data-testid=rf-error]", timeout=120_000
    )
    return frame


def roofline_answer(server, subject: str, extra: str = "") -> dict:
    return get_json(server, f"roofline?{subject}{extra}")


def point_on_page(frame, key: str) -> tuple[float, float]:
    """Page coordinates of the chart point `key` ("op:<rank>"), scrolled into view, once drawn."""
    frame.eval_on_selector("[data-testid=rf-chart] canvas", "c => c.scrollIntoView({block: 'center'})")
    item = frame.wait_for_selector(f"[data-testid=rf-point][data-key='{key}'][data-x]", state="attached")
    box = frame.locator("[data-testid=rf-chart] canvas").bounding_box()
    return box["x"] + float(item.get_attribute("data-x")), box["y"] + float(item.get_attribute("data-y"))


def row_in_view(frame, selector: str) -> bool:
    """Whether the element is inside the table's scroll box and the view's scroll box."""
    return frame.eval_on_selector(
        selector,
        """e => [e.closest('.rf-table-scroll'), e.closest('.rf-body')].every(s => {
             const a = e.getBoundingClientRect(), b = s.getBoundingClientRect();
             return a.top >= b.top - 1 && a.bottom <= b.bottom + 1; })""",
    )


def test_tpu_peaks_chart_tooltip_row_and_trace_link(
    tensorboard_server, browser_page, page_errors, screenshot, roofline_logdir
) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(roofline_logdir)
    frame = open_roofline(browser_page, server, TPU)
    answer = roofline_answer(server, TPU)
    assert answer["observed"] and answer["device"]["name"] == "TPU v6 Lite"

    device = frame.inner_text("[data-testid=rf-device]")
    assert "TPU v6 Lite" in device and "4 devices with activity" in device
    # the profile's one peak is the v6e's datasheet bf16 figure: the MXU's bf16 peak; every op of this
    # program is vector work, against that figure under a roof that says so; f32 dots at HIGH /
    # HIGHEST precision would be against the modelled 3- / 6-pass peaks
    compute = frame.inner_text("[data-testid=rf-peak-flops-bf16]")
    assert "918 TFLOP/s" in compute and "from the profile; the MXU's bf16 peak" in compute
    vector = frame.inner_text("[data-testid='rf-peak-flops-vector (MXU bf16 peak)']")
    assert "918 TFLOP/s" in vector and "the compute roof" in vector and "no VPU peak is published" in vector
    modelled = frame.inner_text("[data-testid='rf-peak-flops-bf16_3x (modelled)']")
    assert "306 TFLOP/s" in modelled and "modelled: bf16 peak ÷ 3" in modelled
    hbm = frame.inner_text("[data-testid=rf-peak-bw-hbm]")
    assert "1.64 TB/s" in hbm and "ridge point 560 FLOP/B" in hbm and "from the profile" in hbm
    assert "no traffic: no roof" in frame.inner_text("[data-testid=rf-peak-bw-vmem_read]")

    # one roof per level with traffic: only HBM moves bytes in this profile
    frame.wait_for_selector("[data-testid=rf-chart] canvas[data-drawn]")
    roofs = frame.eval_on_selector_all(
        "[data-testid=rf-legend] li[data-level]", "els => els.map(e => e.dataset.level)"
    )
    assert roofs == ["hbm"]
    legend = frame.inner_text("[data-testid=rf-legend]")
    assert "Compute roof (vector (MXU bf16 peak)): 918 TFLOP/s" in legend, legend
    assert "HBM roof: 1.64 TB/s · ridge point 560 FLOP/B" in legend
    zero_flops = sum(1 for op in answer["ops"] if op["figures"].get("flop_rate") == 0)
    assert f"{zero_flops} ops: no FLOPs (a log axis has no 0)" in frame.inner_text(
        "[data-testid=rf-not-drawn]"
    )

    total = frame.inner_text("[data-testid=rf-program-row][data-step=Total]")
    assert "4.47 GFLOP/s" in total and "71.2 GB/s" in total and "0.0628 FLOP/B" in total and "4.35%" in total
    assert "vector (MXU bf16 peak)" in total, "the program row names the roof of its FLOP utilization"
    # above the chart: the share of the counted ops' time with a cost (libtpu costs every op)
    coverage = frame.inner_text("[data-testid=rf-coverage]")
    assert coverage == "Costs known for 100% of the program's device time in counted ops.", coverage
    assert answer["program"][0]["coverage"] == 1.0
    screenshot(browser_page, "tpu_roofs")
    assert answer["ops_total"] == len(answer["ops"])
    assert frame.inner_text("[data-testid=rf-listing]") == f"{answer['ops_total']} ops"

    # hover the all-reduce: its figures in the tooltip
    reduce = next(op for op in answer["ops"] if op["name"] == "all-reduce")
    x, y = point_on_page(frame, f"op:{reduce['rank']}")
    browser_page.mouse.move(x, y)
    tooltip = frame.wait_for_selector("[data-testid=rf-tooltip]:not([hidden])").inner_text()
    assert tooltip.startswith("all-reduce\n"), tooltip
    assert "FLOP rate: 11 GFLOP/s" in tooltip and "HBM intensity: 0.125 FLOP/B" in tooltip
    assert "Bound by: HBM" in tooltip and "HBM bandwidth: 88.2 GB/s" in tooltip
    screenshot(browser_page, "tooltip")

    # click it: its row is highlighted and scrolled into view, its card stays
    browser_page.mouse.click(x, y)
    row = f"[data-testid=rf-op-table] tr.rf-selected[data-rank='{reduce['rank']}']"
    frame.wait_for_selector(row)
    assert row_in_view(frame, row)
    assert "all-reduce" in frame.wait_for_selector("[data-testid=rf-pinned]:not([hidden])").inner_text()
    frame.eval_on_selector("[data-testid=rf-chart]", "e => e.scrollIntoView()")
    screenshot(browser_page, "selected")

    # the card's link opens the op's events in the Trace tab (named by its search text, the TPU's first)
    frame.click("[data-testid=rf-pinned-trace]")
    frame.wait_for_selector("[data-testid=trace-canvas]", timeout=60_000)
    frame.wait_for_function("() => window.top.location.hash.includes('sel=')", timeout=30_000)
    link = fragment(browser_page)
    assert link["tool"] == "trace" and link["lk"].split(",")[0] == link["sel"], link
    event = get_json(server, f"trace/event?{TPU}&id={link['sel']}")
    assert event["name"] == reduce["search"], event
    assert page_errors == []


def test_op_table_sorts_filters_and_downloads_what_it_shows(
    tensorboard_server, browser_page, page_errors, roofline_logdir
) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(roofline_logdir)
    frame = open_roofline(browser_page, server, TPU)
    answer = roofline_answer(server, TPU)

    frame.click("button[data-sort=flop_rate]")
    frame.wait_for_selector("th[aria-sort=descending] button[data-sort=flop_rate]")
    names = frame.eval_on_selector_all(
        "[data-testid=rf-op-row] .rf-name", "els => els.map(e => e.textContent)"
    )
    by_rate = sorted(answer["ops"], key=lambda op: -op["figures"]["flop_rate"])
    assert names[:4] == [op["name"] for op in by_rate[:4]]

    frame.select_option("[data-testid=rf-filter-category]", "copy-start")
    copy_starts = [op for op in answer["ops"] if op["category"] == "copy-start"]
    frame.wait_for_function(
        "n => document.querySelectorAll('[data-testid=rf-op-row]').length === n", arg=len(copy_starts)
    )
    assert frame.inner_text("[data-testid=rf-listing]").startswith(f"showing {len(copy_starts)} of")
    # an op measured above its roof: no efficiency, the anomaly as tooltip; one without bytes: not observed
    above = frame.eval_on_selector_all(
        "[data-testid=rf-op-row] td[data-absent='above the roof']", "els => els.map(e => e.title)"
    )
    assert above and all("the roof" in t for t in above)
    absent = frame.eval_on_selector_all(
        "[data-testid=rf-op-row] td[data-absent='not observed']", "els => els.map(e => e.title)"
    )
    assert absent and all(t for t in absent)

    link = frame.wait_for_selector("[data-testid=rf-csv]")
    assert link.get_attribute("download") == "roofline_ops_tpu_v6e_session1.csv"
    assert link.get_attribute("href").startswith("blob:")
    # the link downloads the blob: the file holds the shown rows, in the shown order
    with browser_page.expect_download() as download:
        frame.click("[data-testid=rf-csv]")
    assert download.value.suggested_filename == "roofline_ops_tpu_v6e_session1.csv"
    csv = pathlib.Path(download.value.path()).read_bytes().decode("utf-8")
    lines = csv.rstrip("\r\n").split("\r\n")
    assert lines[0].startswith("#,Op,Category,Occurrences,Total time (ns)")
    assert len(lines) == 1 + len(copy_starts)
    shown = frame.eval_on_selector_all(
        "[data-testid=rf-op-row] .rf-name", "els => els.map(e => e.textContent)"
    )
    assert [line.split(",")[1] for line in lines[1:]] == shown
    assert page_errors == []


def test_infeed_toggle_and_step_live_in_the_link(
    tensorboard_server, browser_page, page_errors, roofline_logdir
) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(roofline_logdir)
    requests: list[str] = []
    browser_page.on("request", lambda r: requests.append(r.url) if "/roofline?" in r.url else None)
    frame = open_roofline(browser_page, server, GPU_8X)
    answer = roofline_answer(server, GPU_8X)
    assert answer["steps"], answer["steps"]
    step = answer["steps"][0]

    frame.uncheck("[data-testid=rf-infeed]")
    frame.wait_for_function("() => window.top.location.hash.includes('infeed=0')")
    frame.wait_for_function("() => !document.querySelector('[data-testid=rf-infeed]').disabled")
    assert "infeed=0" in requests[-1]
    frame.select_option("[data-testid=rf-step]", str(step))
    frame.wait_for_selector(f"[data-testid=rf-program-row].rf-current[data-step='{step}']")
    link = fragment(browser_page)
    assert link["infeed"] == "0" and link["step"] == str(step), link
    assert "infeed=0" in requests[-1] and f"step={step}" in requests[-1]
    expected = roofline_answer(server, GPU_8X, f"&infeed=0&step={step}")
    rows = frame.eval_on_selector_all("[data-testid=rf-op-row]", "els => els.length")
    assert rows == len(expected["ops"])

    # the link reopens the same state
    frame = open_roofline(browser_page, server, GPU_8X, f"&infeed=0&step={step}")
    frame.wait_for_selector(f"[data-testid=rf-program-row].rf-current[data-step='{step}']")
    assert not frame.is_checked("[data-testid=rf-infeed]")
    assert frame.eval_on_selector("[data-testid=rf-step]", "s => s.value") == str(step)
    assert page_errors == []


def test_kineto_costs_estimated_from_shapes_are_marked(
    tensorboard_server, browser_page, page_errors, screenshot, roofline_logdir
) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(roofline_logdir)
    frame = open_roofline(browser_page, server, BERT)
    answer = roofline_answer(server, BERT)
    estimated = [op for op in answer["ops"] if op["source"] == "estimated from shapes"]
    missing = [op for op in answer["ops"] if "flop_rate" not in op["figures"]]
    assert estimated and missing
    # the ProfilerStep#6 marker gives the program a step row, as an XPlane's Steps line does
    frame.wait_for_selector("[data-testid=rf-program-row][data-step='6']")
    steps = frame.eval_on_selector_all("[data-testid=rf-program-row]", "els => els.map(e => e.dataset.step)")
    assert steps == [r["step"] for r in answer["program"]] == ["Total", "Average step (1 complete)", "6"]
    assert (
        frame.inner_text("[data-testid=rf-step-source]") == "Steps: ProfilerStep#N markers (PyTorch profiler)"
    )
    # step 6's wall time (the Overview's step window, 4.43 ms) beside its device time (3.91 ms)
    step6 = frame.inner_text("[data-testid=rf-program-row][data-step='6']")
    assert "4.43 ms" in step6 and "3.91 ms" in step6, step6

    # a bf16 model: the compute roof is bf16 (tensor cores); its layer norms, GELUs and adds run on
    # the vector units, at the fp32 roof, drawn too; each op's roof is named in its row
    assert answer["device"]["roof_precision"] == "bf16" and answer["device"]["roofs"] == ["bf16", "fp32"]
    legend = frame.inner_text("[data-testid=rf-legend]")
    assert "Compute roof (bf16): 990 TFLOP/s" in legend and "fp32 compute roof: 67 TFLOP/s" in legend, legend
    assert "ops at the bf16 roof" in legend and "ops at the fp32 roof" in legend, legend
    cells = frame.eval_on_selector_all("[data-testid=rf-op-row] td", "els => els.map(e => e.textContent)")
    assert {"bf16", "fp32"} <= set(cells)
    total = frame.inner_text("[data-testid=rf-program-row][data-step=Total]")
    assert "bf16 + fp32" in total, total
    # above the chart: the share of the counted ops' time with a cost (the rest: no formula)
    coverage = frame.inner_text("[data-testid=rf-coverage]")
    assert coverage.startswith("Costs known for ") and "lower bounds" in coverage, coverage
    assert answer["program"][0]["coverage"] < 1
    frame.eval_on_selector("[data-testid=rf-chart]", "e => e.scrollIntoView()")
    screenshot(browser_page, "kineto_roofs")

    rate = frame.locator(
        f"[data-testid=rf-op-row][data-rank='{estimated[0]['rank']}'] td[data-estimated]"
    ).first
    assert rate.get_attribute("title") == "estimated from shapes"
    assert rate.inner_text().startswith("≈ ")
    absent = frame.locator(f"[data-testid=rf-op-row][data-rank='{missing[0]['rank']}'] td.rf-absent").first
    assert absent.inner_text() == "not observed"
    assert absent.get_attribute("title") == missing[0]["source"]
    assert "estimated from shapes" in frame.inner_text("[data-testid=rf-legend]")

    x, y = point_on_page(frame, f"op:{estimated[0]['rank']}")
    browser_page.mouse.move(x, y)
    tooltip = frame.wait_for_selector("[data-testid=rf-tooltip]:not([hidden])").inner_text()
    assert "FLOPs and bytes estimated from shapes" in tooltip, tooltip
    screenshot(browser_page, "kineto_estimated")
    assert page_errors == []


def test_cpu_only_capture_says_not_observed(
    tensorboard_server, browser_page, page_errors, screenshot, roofline_logdir
) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(roofline_logdir)
    frame = open_roofline(browser_page, server, CPU)
    answer = roofline_answer(server, CPU)
    assert not answer["observed"]
    text = frame.inner_text("[data-testid=rf-not-observed]")
    assert text == answer["reason"] and text.startswith("no device roofline: device activity not observed")
    assert frame.query_selector("[data-testid=roofline-view] canvas") is None
    assert frame.query_selector("[data-testid=roofline-view] table") is None
    screenshot(browser_page, "not_observed")
    assert page_errors == []


def test_trace_tab_searches_the_linked_op(tensorboard_server, browser_page, roofline_logdir) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(roofline_logdir)
    frame = open_roofline(browser_page, server, TPU)
    answer = roofline_answer(server, TPU)
    op = answer["ops"][0]
    frame.click(f"[data-testid=rf-op-row][data-rank='{op['rank']}'] [data-testid=rf-open-trace]")
    frame.wait_for_selector("[data-testid=trace-canvas]", timeout=60_000)
    frame.wait_for_function(
        "q => document.querySelector('[data-testid=search-input]').value === q",
        arg=op["search"],
        timeout=10_000,
    )
    found = get_json(server, f"trace/search?{TPU}&q={urllib.parse.quote(op['search'])}&limit=1000")
    meta = get_json(server, f"trace/meta?{TPU}")
    tpu = {s["id"] for s in meta["sections"] if s["kind"] == "tpu"}
    on_tpu = {t["id"] for t in meta["tracks"] if t["section"] in tpu}
    # The link lands on the op's executions on the TPU (named exactly as the op), walked "k of N".
    device = [m for m in found["matches"] if m["name"] == op["search"] and m["track"] in on_tpu][:200]
    assert device
    frame.wait_for_function(
        "want => document.querySelector('[data-testid=linked-count]')?.textContent === want",
        arg=f"1 of {len(device):,}",
        timeout=10_000,
    )
