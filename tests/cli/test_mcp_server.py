"""`profscope mcp` driven by the MCP SDK's own client over stdio, on real profiles: the tools it
lists, the overview's numbers and a trace search equal to the tab's routes, errors as tool errors
naming what exists, and exports only under the output folder, redacted by default."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gzip
import json
import pathlib
import sys
from typing import Any

import pytest
from werkzeug.test import Client

pytest.importorskip("mcp")
from mcp import Client as McpClient  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

BASE = "/data/plugin/profscope"
TOOLS = {
    "list_runs",
    "overview",
    "findings",
    "top_ops",
    "roofline",
    "memory",
    "compare",
    "search_trace",
    "event_details",
    "export_trace",
}


def session_calls(
    logdir: pathlib.Path, cache: pathlib.Path, output: pathlib.Path, calls: list[tuple[str, dict[str, Any]]]
) -> tuple[set[str], list[tuple[bool, str]]]:
    """Start the server as an agent would, list its tools and make the calls, in one session."""

    async def drive() -> tuple[set[str], list[tuple[bool, str]]]:
        server = StdioServerParameters(
            command=sys.executable,
            args=[
                "-m",
                "profscope.cli",
                "mcp",
                str(logdir),
                "--cache-dir",
                str(cache),
                "--output-dir",
                str(output),
            ],
        )
        async with McpClient(server, read_timeout_seconds=300) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            results = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                results.append((result.is_error, result.content[0].text))
            return listed, results

    # On a thread of its own: in a pytest-xdist worker that ran the browser tests first, Playwright's
    # sync API keeps its event loop running on the main thread, where asyncio.run refuses to start.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, drive()).result()


def xla_op_event(tab: Client) -> int:
    """The id of one XLA op run (`dot.*`) in the PyTorch/XLA job's XPlane, as the tab finds it."""
    (run,) = [r for r in route(tab, "/runs")["runs"] if r["name"] == "xla_job"]
    session = next(s for s in run["sessions"] if any("trace" in h["tools"] for h in s["hosts"]))
    subject = {"run": "xla_job", "session": session["name"], "host": session["hosts"][0]["name"]}
    while (
        found := tab.get(f"{BASE}/trace/search", query_string={**subject, "q": "dot."})
    ).status_code == 202:
        pass
    return next(m["id"] for m in found.get_json()["matches"] if m["name"].startswith("dot."))


@pytest.fixture(scope="module")
def served(
    cli_logdir: pathlib.Path, cache_dir: pathlib.Path, tmp_path_factory: pytest.TempPathFactory, tab: Client
) -> tuple[set[str], list[tuple[bool, str]], pathlib.Path]:
    output = tmp_path_factory.mktemp("mcp_out")
    calls = [
        ("list_runs", {}),
        ("overview", {"run": "input_bound"}),
        ("search_trace", {"run": "input_bound", "query": "aten::mm", "limit": 3}),
        ("top_ops", {"run": "bert_h100", "table": "kernels", "limit": 2}),
        ("overview", {"run": "nope"}),
        ("export_trace", {"run": "bert_h100", "path": "../escape.json.gz"}),
        ("export_trace", {"run": "bert_h100", "path": "traces/bert.json.gz"}),
        ("compare", {"base_run": "prefetched", "run": "input_bound", "max_slowdown_percent": 5}),
        ("event_details", {"run": "xla_job", "event_id": xla_op_event(tab)}),
    ]
    listed, results = session_calls(cli_logdir, cache_dir, output, calls)
    return listed, results, output


def route(tab: Client, path: str, **query: str) -> dict:
    response = tab.get(f"{BASE}{path}", query_string=query)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def test_lists_the_analyses(served) -> None:
    listed, results, _ = served
    assert listed == TOOLS
    error, text = results[0]
    assert not error
    assert {r["name"] for r in json.loads(text)["runs"]} == {
        "bert_h100",
        "input_bound",
        "prefetched",
        "xla_job",
    }


def test_overview_and_search_are_the_routes(served, tab: Client) -> None:
    _, results, _ = served
    error, text = results[1]
    assert not error, text
    overview = json.loads(text)
    (host,) = overview["hosts"]
    runs = route(tab, "/runs")["runs"]
    (session,) = next(r for r in runs if r["name"] == "input_bound")["sessions"]
    subject = {"run": "input_bound", "session": session["name"], "host": host["host"]}
    answer = route(tab, "/overview", **subject)
    assert host["steps"]["stats"] == answer["per_host"][0]["steps"]["stats"]
    assert host["breakdown"]["per_step_median"] == answer["per_host"][0]["steady"]["per_step_median"]
    assert [f["cost_ns"] for f in overview["findings"]] == [f["cost_ns"] for f in answer["findings"]]
    assert "ns" in overview["units"]
    error, text = results[2]
    assert not error, text
    search = json.loads(text)
    tab_search = route(tab, "/trace/search", **subject, q="aten::mm", limit="3")
    assert search["total"] == tab_search["total"] == 40
    assert search["matches"] == tab_search["matches"]


def test_tables_are_paged(served) -> None:
    _, results, _ = served
    error, text = results[3]
    assert not error, text
    page = json.loads(text)
    assert len(page["rows"]) == 2 and page["offset"] == 0 and page["next_offset"] == 2
    assert page["total"] > 2


def test_errors_name_what_exists(served) -> None:
    _, results, _ = served
    error, text = results[4]
    assert error and "run 'nope' is not in logdir" in text and "'bert_h100'" in text


def test_exports_only_under_the_output_folder_redacted(served) -> None:
    _, results, output = served
    error, text = results[5]
    assert error and "outside the output folder; refused" in text
    error, text = results[6]
    assert not error, text
    written = json.loads(text)
    assert written["path"] == "traces/bert.json.gz"
    # The BERT capture's metadata holds its container's host name and an HF token (PROVENANCE.md).
    assert {k["kind"] for k in written["redacted"]} >= {"host"}
    exported = json.loads(gzip.decompress((output / "traces" / "bert.json.gz").read_bytes()))
    assert len([e for e in exported["traceEvents"] if e.get("ph") == "X"]) > 0
    assert sorted(p.name for p in output.rglob("*") if p.is_file()) == ["bert.json.gz"]


def test_compare_gives_the_gate(served) -> None:
    _, results, _ = served
    error, text = results[7]
    assert not error, text
    found = json.loads(text)
    assert found["gate"]["exit"] == 1
    assert found["shift"]["low_ns"] > 0.05 * found["base"]["stats"]["median_ns"]


def test_links_out_of_the_logdir_are_refused(tmp_path: pathlib.Path, cli_logdir: pathlib.Path) -> None:
    logdir = tmp_path / "logdir"
    (logdir / "linked").mkdir(parents=True)
    outside = next((cli_logdir / "prefetched").iterdir())
    (logdir / "linked" / outside.name).symlink_to(outside)
    listed, results = session_calls(
        logdir, tmp_path / "cache", tmp_path / "out", [("list_runs", {}), ("overview", {"run": "linked"})]
    )
    assert "list_runs" in listed
    runs = json.loads(results[0][1])
    assert runs["runs"] == [] and any("outside" in e or "link" in e for e in runs["errors"])
    assert results[1][0]


def test_event_details_carry_the_hlo_of_an_xla_op(served) -> None:
    _, results, _ = served
    error, text = results[8]
    assert not error, text
    found = json.loads(text)
    assert found["event"]["name"].startswith("dot.")
    assert found["hlo"]["kind"] == "op" and found["hlo"]["op"] == found["event"]["name"]
