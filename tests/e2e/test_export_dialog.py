"""The Trace tab's "Export…" dialog in headless Chromium against a real `tensorboard` (H100 trace).

A user opens the dialog, sees what the export holds and what redaction takes out before anything
is downloaded (each distinct value, partly masked, with what replaces it: the container's host name
of the trace's metadata among them, never in clear), switches to the visible window, and downloads the file: it gunzips into Chrome trace
JSON with the events the preview counted. (Perfetto UI itself is not reachable from here; the
document's shape is checked against the Chrome trace format in tests/test_export.py.)
"""

from __future__ import annotations

import gzip
import json
import pathlib
import urllib.parse

from tests.e2e.trace_fixtures import fragment, get_json, open_gpu_trace, requires_bundle, subject_query

pytestmark = requires_bundle
# The container the H100 trace was captured in (its metadata's `uname.node` and `HOSTNAME`).
HOST_NAME = "a39ca6b8f513"


def test_export_dialog_previews_and_downloads(
    tensorboard_server, browser_page, page_errors, open_profscope, screenshot
) -> None:
    server, frame, _ = open_gpu_trace(tensorboard_server, browser_page, open_profscope)
    query = subject_query(fragment(browser_page))
    meta = get_json(server, f"trace/meta?{query}")

    frame.click("[data-testid=export-button]")
    frame.wait_for_selector("[data-testid=export-dialog]:not([hidden])")
    assert frame.is_checked("[data-testid=export-redact]"), "redaction is on by default"
    frame.wait_for_selector("[data-testid=export-download]:not([hidden])", timeout=60_000)
    lines = frame.eval_on_selector_all(
        "[data-testid=export-preview-line]", "els => els.map(e => e.textContent)"
    )
    preview = get_json(server, f"export/preview?{query}&redact=1")
    assert lines[0] == f"{preview['events']:,} events, {preview['flows']:,} flows, 0 counter samples"
    assert preview["events"] == meta["num_events"]
    assert len(lines) == 1 + len(preview["redactions"]) and preview["redactions"], lines
    values = frame.eval_on_selector_all("[data-testid=export-value]", "els => els.map(e => e.textContent)")
    assert values == [f"{v['original']} → {v['replacement']}" for v in preview["replacements"]]
    assert any(v.startswith("a3…13 → <host-") for v in values), values
    assert HOST_NAME not in frame.inner_text("[data-testid=export-dialog]")
    screenshot(browser_page, "export_dialog")

    link = frame.locator("[data-testid=export-download]")
    assert link.get_attribute("download") == "redacted.trace.json.gz"
    href = urllib.parse.urlparse(link.get_attribute("href"))
    params = urllib.parse.parse_qs(href.query)
    assert href.path.endswith("/data/plugin/profscope/export") and params["redact"] == ["1"]
    assert "start" not in params

    with browser_page.expect_download() as download:
        link.click()
    assert download.value.suggested_filename == "redacted.trace.json.gz"
    doc = json.loads(gzip.decompress(pathlib.Path(download.value.path()).read_bytes()))
    events = [ev for ev in doc["traceEvents"] if ev["ph"] in ("X", "i")]
    assert len(events) == meta["num_events"]
    assert doc["profscope_export"]["redaction"]["kinds"] == preview["redactions"]
    assert HOST_NAME not in json.dumps(doc) and "x86_64" in json.dumps(doc)

    # The visible window: the link then names the range the timeline shows.
    frame.check("[data-testid=export-visible]")
    frame.wait_for_function(
        "() => { const a = document.querySelector('[data-testid=export-download]');"
        " return !a.hidden && a.href.includes('start='); }"
    )
    ranged = urllib.parse.parse_qs(urllib.parse.urlparse(link.get_attribute("href")).query)
    shown = fragment(browser_page)
    assert float(ranged["start"][0]) == float(shown["start"]) and float(ranged["end"][0]) == float(
        shown["end"]
    )
    frame.press("[data-testid=export-dialog]", "Escape")
    frame.wait_for_selector("[data-testid=export-dialog]", state="hidden")
    assert page_errors == []
