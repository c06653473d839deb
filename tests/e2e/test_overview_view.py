"""End to end: the Overview tab in headless Chromium against a real `tensorboard`.

The logdir (made in the test's temp folder from profiles already in the repository) holds real
PyTorch traces: the demo's CPU-only training loop whose input is read on the training thread
(demo/logdir/pytorch_cpu_slow_input), a V100 ResNet-50 run with kernels and launch flows, an MI250
toy run whose first step is warm-up, a CPU-only capture, two ranks of one job, and PyTorch/XLA logs
without a trace (tests/data/layouts). The tests read the findings and follow one into the Trace
tab, see warm-up steps marked and the split rule and verdict stated, sort the op table and download
what it shows, follow a kernel row to its events, name an annotation as the step and give a batch
size through the inputs (kept in the deep link), see a CPU-only capture say "not observed" for every
device figure, compare two ranks, see the findings of logs without a trace, and follow the memory
peak of a capture with memory events (tests/data/memory) to the Memory tab, and see the peak of the
8-GPU TensorFlow XPlane's BFC allocators (tests/data/xplane). Expectations come
from the server's own answer. Screenshots go to test-output/e2e/<test>/ (docs/screenshots holds
copies: chromium_overview*.png).
"""

from __future__ import annotations

import csv as csv_module
import io
import pathlib
import shutil
import urllib.parse

import pytest

from tests.e2e.trace_fixtures import fragment, get_json, wait_idle

REPO = pathlib.Path(__file__).resolve().parents[2]
BUNDLE = REPO / "tb_plugin" / "profscope" / "static" / "index.js"
LAYOUTS = REPO / "tests" / "data" / "layouts" / "logdir" / "kineto"
RUNS = {
    "slow_input": REPO / "demo" / "logdir" / "pytorch_cpu_slow_input",
    "v100": LAYOUTS / "v100_resnet50",
    "mi250": LAYOUTS / "mi250_minitoy",
    "cpu_only": LAYOUTS / "cpu_only",
    "ranks": LAYOUTS / "multi_rank_sampled",
    "xla_logs": LAYOUTS.parent / "xla" / "pytorch_xla_cpu_recompile",
    "input_bound_zh": REPO / "tests" / "data" / "jobs" / "torch_input_bound_zh",
}
MEMORY_PEAK = REPO / "tests" / "data" / "memory" / "peak_backward.pt.trace.json.gz"
MEMORY_XPLANE = REPO / "tests" / "data" / "xplane" / "gpu_8x_tf_training.xplane.pb"

pytestmark = pytest.mark.skipif(
    not BUNDLE.is_file(), reason="the frontend bundle is not built (npm --prefix frontend run build)"
)


@pytest.fixture(scope="module")
def overview_logdir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """Read-only to the tests: the module's tests share it, and so one server (see e2e/conftest.py)."""
    tmp_path = tmp_path_factory.mktemp("overview_logdir")
    logdir = tmp_path / "logdir"
    for run, source in RUNS.items():
        shutil.copytree(source, logdir / run)
    (logdir / "memory_peak").mkdir()
    shutil.copy(MEMORY_PEAK, logdir / "memory_peak" / "worker0.pt.trace.json.gz")
    session = logdir / "memory_xplane" / "plugins" / "profile" / "session"
    session.mkdir(parents=True)
    shutil.copy(MEMORY_XPLANE, session / "host.xplane.pb")
    return logdir


def subject(server, run: str) -> str:  # type: ignore[no-untyped-def]
    """`run=…&session=…&host=…` of the run's only session, every host of it selected."""
    runs = get_json(server, "runs")["runs"]
    session = next(r for r in runs if r["name"] == run)["sessions"][0]
    hosts = ",".join(h["name"] for h in session["hosts"])
    return urllib.parse.urlencode({"run": run, "session": session["name"], "host": hosts})


def overview_answer(server, query: str) -> dict:  # type: ignore[no-untyped-def]
    return get_json(server, f"overview?{query}")


def open_overview(page, server, query: str, extra: str = ""):  # type: ignore[no-untyped-def]
    """Open the Overview tab of `query` and return the plugin's frame once the answer is shown."""
    page.goto(f"{server.url}/#profscope&{query}&tool=overview{extra}")
    iframe = page.wait_for_selector(
        "iframe[src*='plugin_entry.html?name=profscope']", state="attached", timeout=30_000
    )
    frame = iframe.content_frame()
    frame.wait_for_selector("[data-testid=ov-tables], [data-testid=ov-error]", timeout=120_000)
    assert frame.query_selector("[data-testid=ov-error]") is None, frame.inner_text("[data-testid=ov-error]")
    return frame


def wait_drawn(frame) -> None:  # type: ignore[no-untyped-def]
    """Wait until every chart canvas has drawn its first frame."""
    frame.wait_for_function(
        "() => [...document.querySelectorAll('.ov-chart canvas')].every(c => c.dataset.drawn === '1')",
        timeout=30_000,
    )


def whole_view(page, frame, height_cap: int = 2600) -> None:  # type: ignore[no-untyped-def]
    """Make the page tall enough to show the view without its inner scrolling (for a screenshot)."""
    height = frame.evaluate("document.querySelector('.ov-body').scrollHeight")
    page.set_viewport_size({"width": 1400, "height": min(height + 160, height_cap)})
    wait_drawn(frame)


def texts(frame, selector: str) -> list[str]:  # type: ignore[no-untyped-def]
    return frame.eval_on_selector_all(selector, "els => els.map(e => e.textContent)")


def test_findings_first_and_a_finding_opens_its_events(
    tensorboard_server, browser_page, page_errors, screenshot, overview_logdir
) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(overview_logdir)
    query = subject(server, "v100")
    frame = open_overview(browser_page, server, query)
    answer = overview_answer(server, query)
    wait_drawn(frame)

    # the findings come first: one row per finding, Observation | Hypothesis | Next check
    first = frame.eval_on_selector(".ov-body > section", "s => s.dataset.testid")
    assert first == "ov-findings"
    assert texts(frame, "[data-testid=ov-findings-table] th") == ["Observation", "Hypothesis", "Next check"]
    kinds = frame.eval_on_selector_all(
        "[data-testid=ov-findings-table] tbody tr", "rs => rs.map(r => r.dataset.kind)"
    )
    assert kinds == [f["kind"] for f in answer["findings"]] and "input_bound" in kinds
    finding = next(f for f in answer["findings"] if f["kind"] == "input_bound")
    row = "[data-testid=ov-finding-input_bound]"
    cells = texts(frame, f"{row} td")
    assert finding["observation"] in cells[0] and f"Rule: {finding['rule']}" in cells[0]
    assert cells[1] == finding["hypothesis"] and cells[2] == finding["next_check"]
    assert texts(frame, f"{row} [data-testid=ov-evidence] li") == [
        f"{e['label']}: {e['text']}" for e in finding["evidence"]
    ]

    # steps, their breakdown and the device figures of a GPU run
    host = answer["per_host"][0]
    steps = host["steps"]["rows"]
    assert len(texts(frame, "[data-testid=ov-step-chart] canvas li")) == len(steps)
    observed = [
        c["label"] for c in sorted(answer["categories"], key=lambda c: c["priority"]) if c["observed"]
    ]
    assert texts(frame, "[data-testid=ov-breakdown-legend] li:not([data-absent])") == observed
    assert (
        frame.inner_text("[data-testid=ov-devices-table] [data-testid=ov-device-row] td")
        == host["devices"]["devices"][0]["name"]
    )
    assert frame.query_selector("[data-testid=ov-launch-chart] canvas[data-drawn='1']") is not None
    assert len(frame.query_selector_all("[data-testid=ov-kernels-row]")) == len(answer["tables"]["kernels"])
    whole_view(browser_page, frame)
    screenshot(browser_page, "overview")

    # the finding's link opens its time range in the Trace tab
    frame.click(f"{row} [data-testid=ov-finding-link]")
    frame.wait_for_selector("[data-testid=trace-canvas]", timeout=60_000)
    wait_idle(frame)
    link = fragment(browser_page)
    assert link["tool"] == "trace", link
    assert float(link["start"]) == pytest.approx(finding["link"]["start_ns"], abs=1)
    assert float(link["end"]) == pytest.approx(finding["link"]["end_ns"], abs=1)
    # ... and selects its evidence one by one: the events named as its search text inside that range.
    frame.wait_for_function("() => window.top.location.hash.includes('sel=')", timeout=30_000)
    link = fragment(browser_page)
    ids = link["lk"].split(",")
    assert link["sel"] == ids[0]
    assert frame.inner_text("[data-testid=linked-count]") == f"1 of {len(ids)}"
    for event_id in ids[:5]:
        event = get_json(server, f"trace/event?{query}&id={event_id}")
        assert event["name"] == finding["link"]["search"], event
        assert finding["link"]["start_ns"] <= event["start_ns"] + event["dur_ns"]
        assert event["start_ns"] <= finding["link"]["end_ns"]
    assert page_errors == []


def test_warmup_steps_are_marked_with_the_split_rule_and_verdict(
    tensorboard_server, browser_page, page_errors, screenshot, overview_logdir
) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(overview_logdir)
    query = subject(server, "mi250")
    frame = open_overview(browser_page, server, query)
    answer = overview_answer(server, query)
    wait_drawn(frame)
    steps = answer["per_host"][0]["steps"]
    assert steps["split"]["warmup"], "the MI250 run's first step should be warm-up"

    phases = frame.eval_on_selector_all(
        "[data-testid=ov-step-chart] canvas li",
        "els => els.map(e => [Number(e.dataset.step), e.dataset.phase])",
    )
    assert phases == [[s["number"], s["phase"]] for s in steps["rows"]]
    warm = frame.inner_text(f"[data-testid=ov-step-chart] li[data-step='{steps['split']['warmup'][0]}']")
    assert "(warm-up)" in warm
    legend = frame.inner_text("[data-testid=ov-step-legend]")
    assert f"warm-up ({len(steps['split']['warmup'])} step" in legend
    split = frame.inner_text("[data-testid=ov-split]")
    assert steps["split"]["verdict"] in split and steps["split"]["rule"] in split
    # the warm-up bar has its own colour: the colours drawn along a line through the bars
    colours = frame.evaluate(
        """() => {
          const c = document.querySelector('[data-testid=ov-step-chart] canvas');
          const data = c.getContext('2d').getImageData(0, Math.round(c.height * 0.7), c.width, 1).data;
          const seen = new Set();
          for (let i = 0; i < data.length; i += 4) seen.add(`${data[i]},${data[i + 1]},${data[i + 2]}`);
          return [...seen];
        }"""
    )
    assert "249,171,0" in colours, colours  # WARMUP_COLOR #f9ab00
    whole_view(browser_page, frame, height_cap=1100)
    screenshot(browser_page, "warmup")
    assert page_errors == []


def test_op_tables_sort_download_and_open_a_kernel(
    tensorboard_server, browser_page, page_errors, overview_logdir
) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(overview_logdir)
    query = subject(server, "v100")
    frame = open_overview(browser_page, server, query)
    tables = overview_answer(server, query)["tables"]

    listing = frame.inner_text("[data-testid=ov-host-ops] [data-testid=ov-listing]")
    shown, total = len(tables["host_ops"]), tables["host_ops_total"]
    assert listing == (
        f"{total} host ops"
        if shown == total
        else f"showing {shown} of {total} host ops (the {shown} with the most total time)"
    )
    frame.click("[data-testid=ov-host-ops] button[data-sort=calls]")
    frame.wait_for_selector("[data-testid=ov-host-ops] th[aria-sort=descending] button[data-sort=calls]")
    names = texts(frame, "[data-testid=ov-host-ops-row] .ov-name")
    by_calls = sorted(tables["host_ops"], key=lambda r: -r["calls"])
    assert names == [r["name"] for r in by_calls]

    # the CSV link downloads exactly the rows shown, in the order shown
    csv_link = "[data-testid=ov-host-ops-csv]"
    session = urllib.parse.parse_qs(query)["session"][0]
    assert frame.get_attribute(csv_link, "download") == f"overview_host_ops_v100_{session}.csv"
    assert frame.get_attribute(csv_link, "href").startswith("blob:")
    with browser_page.expect_download() as download:
        frame.click(csv_link)
    assert download.value.suggested_filename == f"overview_host_ops_v100_{session}.csv"
    csv = pathlib.Path(download.value.path()).read_bytes().decode("utf-8")
    assert csv.endswith("\r\n")
    header, *rows = list(csv_module.reader(io.StringIO(csv, newline="")))
    assert header[:4] == ["Host op", "Calls", "Total (ns)", "Self (ns)"]
    assert [(r[0], int(r[1]), float(r[2])) for r in rows] == [
        (r["name"], r["calls"], r["total_ns"]) for r in by_calls
    ]

    # a kernel row opens its first event in the Trace tab, selected
    kernel = tables["kernels"][0]
    frame.click("[data-testid=ov-kernels-row] [data-testid=ov-open-trace]")
    frame.wait_for_selector("[data-testid=trace-canvas]", timeout=60_000)
    frame.wait_for_function("() => window.top.location.hash.includes('sel=')", timeout=30_000)
    link = fragment(browser_page)
    found = get_json(server, f"trace/search?{query}&q={urllib.parse.quote(kernel['search'])}&limit=50")
    first = next(m for m in found["matches"] if m["name"] == kernel["search"])
    assert link["tool"] == "trace" and link["sel"] == str(first["id"]), link
    assert float(link["start"]) <= first["start_ns"] <= float(link["end"])
    assert page_errors == []


def test_step_name_and_batch_size_refetch_and_stay_in_the_link(
    tensorboard_server, browser_page, page_errors, overview_logdir
) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(overview_logdir)
    query = subject(server, "slow_input")
    frame = open_overview(browser_page, server, query)
    assert frame.inner_text("[data-testid=ov-card-examples]").startswith("Examples/s\nnot observed")

    frame.fill("[data-testid=ov-step-name]", "train")
    frame.press("[data-testid=ov-step-name]", "Enter")
    answer = overview_answer(server, f"{query}&step_name=train")
    source = answer["per_host"][0]["steps"]["source"]
    frame.wait_for_function(
        "s => (document.querySelector('[data-testid=ov-step-source]')?.textContent ?? '').includes(s)",
        arg=source,
    )
    assert fragment(browser_page)["step_name"] == "train"

    frame.fill("[data-testid=ov-batch-size]", "16")
    frame.press("[data-testid=ov-batch-size]", "Enter")
    answer = overview_answer(server, f"{query}&step_name=train&batch_size=16")
    rate = answer["per_host"][0]["steps"]["stats"]["examples_per_s"]
    expected = f"{float(f'{rate:.3g}'):,.10g}"
    frame.wait_for_function(
        "t => document.querySelector('[data-testid=ov-card-examples] .ov-card-value').textContent === t",
        arg=expected,
    )
    link = fragment(browser_page)
    assert link["batch_size"] == "16" and link["step_name"] == "train"

    # the link restores both inputs
    browser_page.reload()
    frame = browser_page.wait_for_selector("iframe[src*='plugin_entry.html?name=profscope']").content_frame()
    frame.wait_for_selector("[data-testid=ov-tables]", timeout=60_000)
    assert frame.input_value("[data-testid=ov-step-name]") == "train"
    assert frame.input_value("[data-testid=ov-batch-size]") == "16"
    assert page_errors == []


def test_cpu_only_capture_says_not_observed(
    tensorboard_server, browser_page, page_errors, screenshot, overview_logdir
) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(overview_logdir)
    for run in ("cpu_only", "slow_input"):
        query = subject(server, run)
        frame = open_overview(browser_page, server, query)
        answer = overview_answer(server, query)
        reason = answer["per_host"][0]["devices"]["reason"]
        assert answer["per_host"][0]["devices"]["observed"] is False and reason
        figures = frame.eval_on_selector_all(
            "[data-testid=ov-devices] .ov-card-value span",
            "els => els.map(e => [e.textContent, e.getAttribute('title')])",
        )
        assert figures and all(f == ["not observed", reason] for f in figures), figures
        device_text = frame.inner_text("[data-testid=ov-devices]")
        assert "0 ns" not in device_text and "0%" not in device_text
        kernels = frame.wait_for_selector("[data-testid=ov-kernels-absent]")
        assert (
            kernels.inner_text() == "not observed"
            and kernels.get_attribute("title") == answer["tables"]["kernels_reason"]
        )
        unobserved = [c["id"] for c in answer["categories"] if not c["observed"]]
        legend = frame.eval_on_selector_all(
            "[data-testid=ov-breakdown-legend] [data-absent]", "els => els.map(e => e.dataset.category)"
        )
        assert legend == unobserved
        rows = frame.eval_on_selector_all(
            "[data-testid=ov-breakdown-table] tr[data-observed='0']",
            "rs => rs.map(r => [...r.querySelectorAll('td.num')].map(td => td.textContent))",
        )
        assert len(rows) == len(unobserved) and all(set(r) == {"not observed"} for r in rows)
    whole_view(browser_page, frame, height_cap=2000)
    screenshot(browser_page, "cpu_only")
    assert page_errors == []


def test_phases_of_the_steps(
    tensorboard_server, browser_page, page_errors, screenshot, overview_logdir
) -> None:  # type: ignore[no-untyped-def]
    """A job whose four phases torch wrote as `unknown`: told apart by order, charted per step and
    tabled with their shares; device busy is not observed on this CPU-only capture."""
    server = tensorboard_server(overview_logdir)
    query = subject(server, "input_bound_zh")
    frame = open_overview(browser_page, server, query)
    phases = overview_answer(server, query)["per_host"][0]["phases"]
    names = [p["name"] for p in phases["phases"]]
    assert names == ["unknown", "unknown (2)", "unknown (3)", "unknown (4)", "(outside your phases)"]
    rows = frame.eval_on_selector_all(
        "[data-testid=ov-phases-table] tbody tr",
        "rs => rs.map(r => [r.dataset.phaseName, ...[...r.querySelectorAll('td')].map(td => td.textContent)])",
    )
    assert [r[0] for r in rows] == names
    assert float(rows[0][4].rstrip("%")) == pytest.approx(phases["phases"][0]["share"] * 100, abs=0.1)
    assert rows[0][5] == "not observed" and rows[2][6] != "0%"
    assert len(texts(frame, "[data-testid=ov-phases-chart] canvas li")) == len(phases["step_numbers"])
    assert phases["source"] in frame.inner_text("[data-testid=ov-phases-source]")
    whole_view(browser_page, frame, height_cap=2400)
    frame.eval_on_selector("[data-testid=ov-phases]", "el => el.scrollIntoView()")
    screenshot(browser_page, "phases")
    assert page_errors == []


def test_several_ranks_side_by_side(tensorboard_server, browser_page, page_errors, overview_logdir) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(overview_logdir)
    query = subject(server, "ranks")
    frame = open_overview(browser_page, server, query)
    answer = overview_answer(server, query)
    assert len(answer["hosts"]) == 2

    ranks = texts(frame, "[data-testid=ov-ranks-table] tbody tr td:first-child")
    assert ranks == [h["host"] for h in answer["per_host"]]
    # the sampled NCCL pair: order cannot pair its collectives, and the view says so (tests/e2e/test_ranks_view.py)
    assert answer["ranks"]["unmatched"] in frame.inner_text("[data-testid=ov-rank-unmatched]")
    assert len(frame.query_selector_all("details[data-testid=ov-host]")) == 2
    assert page_errors == []


def test_logs_without_a_trace_show_their_findings_only(
    tensorboard_server, browser_page, page_errors, overview_logdir
) -> None:  # type: ignore[no-untyped-def]
    server = tensorboard_server(overview_logdir)
    query = subject(server, "xla_logs")
    browser_page.goto(f"{server.url}/#profscope&{query}&tool=overview")
    frame = browser_page.wait_for_selector(
        "iframe[src*='plugin_entry.html?name=profscope']", state="attached", timeout=30_000
    ).content_frame()
    frame.wait_for_selector("[data-testid=ov-findings]", timeout=60_000)
    answer = overview_answer(server, query)
    assert answer["per_host"] == [] and answer["findings"]
    kinds = frame.eval_on_selector_all(
        "[data-testid=ov-findings-table] tbody tr", "rs => rs.map(r => r.dataset.kind)"
    )
    assert kinds == [f["kind"] for f in answer["findings"]]
    assert texts(frame, "[data-testid=ov-warnings] li") == answer["warnings"]
    assert (
        frame.query_selector("[data-testid=ov-finding-link], [data-testid=ov-host], [data-testid=ov-error]")
        is None
    )
    assert page_errors == []


def test_the_memory_peak_links_to_the_memory_tab(
    tensorboard_server, browser_page, page_errors, overview_logdir
) -> None:  # type: ignore[no-untyped-def]
    """A capture with memory events says its peak in one line whose link opens the Memory tab of the
    same run and host; one without memory events has no such line."""
    server = tensorboard_server(overview_logdir)
    query = subject(server, "memory_peak")
    frame = open_overview(browser_page, server, query)
    peak = overview_answer(server, query)["per_host"][0]["memory_peak"]
    line = frame.inner_text("[data-testid=ov-memory-peak]")
    assert (
        line.startswith("Memory peak: 16")
        and f"in {peak['step']} under {peak['op']} ({peak['device']})" in line
    )
    frame.click("[data-testid=ov-memory-link]")
    frame.wait_for_selector("[data-testid=mem-device]", timeout=60_000)
    link = fragment(browser_page)
    assert link["tool"] == "memory" and link["run"] == "memory_peak", link
    assert peak["step"] in frame.inner_text("[data-testid=mem-peak-step]")
    frame = open_overview(browser_page, server, subject(server, "slow_input"))
    assert frame.query_selector("[data-testid=ov-memory-peak]") is None
    assert page_errors == []


def test_an_xplane_allocator_s_peak_is_shown_too(
    tensorboard_server, browser_page, page_errors, screenshot, overview_logdir
) -> None:  # type: ignore[no-untyped-def]
    """TensorFlow's BFC allocators (MemoryAllocation events of an XPlane) give the same line: the
    highest allocator's peak, its numbered step as "step N", its op the event's own tf_op."""
    server = tensorboard_server(overview_logdir)
    query = subject(server, "memory_xplane")
    frame = open_overview(browser_page, server, query)
    peak = overview_answer(server, query)["per_host"][0]["memory_peak"]
    assert peak["device"] == "GPU_6_bfc" and peak["op"] == "gradient_tape/replica_6/Tile"
    line = frame.inner_text("[data-testid=ov-memory-peak]")
    assert line == f"Memory peak: 5.78 GiB in step {peak['step']} under {peak['op']} (GPU_6_bfc) → Memory tab"
    screenshot(browser_page, "overview_xplane_memory_peak")
    frame.click("[data-testid=ov-memory-link]")
    frame.wait_for_selector("[data-testid=mem-device]", timeout=60_000)
    assert fragment(browser_page)["tool"] == "memory"
    assert page_errors == []
