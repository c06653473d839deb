"""Hostile and broken files: each case of the hardening issue that hung a reader, failed a whole
file on one event or answered 500, now loads what it can, skips and counts the rest, or is refused
with a message that names the file and the problem (never an exception type), in bounded time.

Reading runs under `within(seconds)`: the hangs were Python loops, which its timers interrupt.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import shutil
from pathlib import Path
from typing import Any

import fsspec
import pytest

from profscope.errors import UnreadableProfile
from profscope.formats.chrome import blocks as chrome_blocks
from profscope.formats.chrome import reader as chrome_json
from profscope.formats.chrome import scan as chrome_scan
from profscope.formats.xla import debug as xla_debug
from profscope.formats.xla import graphs as xla_graphs
from profscope.formats.xla import metrics as xla_metrics
from profscope.formats.xla.text import Frame
from profscope.formats.xplane import reader as xplane
from tests.support import DATA_DIR
from tests.support.reading_limits import cpu_bound
from tests.support.xplane_messages import field

DATA = DATA_DIR
XLA = DATA / "xla" / "pytorch_xla_cpu_recompile"
_EXCEPTION_NAME = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b")
GOOD = {"ph": "X", "name": "good", "pid": 1, "tid": 1, "ts": 1, "dur": 2}


def within(seconds: float) -> contextlib.AbstractContextManager[None]:
    """Fail the test when the block uses more than `seconds` of CPU, or four times that of wall
    time (a reader waiting on its helper process), instead of hanging the run."""
    return cpu_bound(seconds, lambda: AssertionError(f"still reading after {seconds:g} s (the reader hangs)"))


def read_chrome(tmp_path: Path, content: bytes, name: str = "trace.json", seconds: float = 20) -> Any:
    path = tmp_path / name
    path.write_bytes(content)
    with within(seconds):
        return chrome_json.read(str(path), fsspec.filesystem("file"))


def refusal(tmp_path: Path, content: bytes, name: str = "trace.json") -> str:
    """The reason of the UnreadableProfile `content` is refused with (checked to be a description)."""
    with pytest.raises(UnreadableProfile) as info:
        read_chrome(tmp_path, content, name)
    assert name in str(info.value)
    assert not _EXCEPTION_NAME.search(info.value.reason), info.value.reason
    return info.value.reason


def events_doc(*events: Any) -> bytes:
    return b'{"traceEvents": [' + b", ".join(
        e if isinstance(e, bytes) else json.dumps(e).encode() for e in events
    )


def closed(text: bytes) -> bytes:
    return text + b"]}"


def names(trace: Any) -> list[str]:
    return sorted(trace.strings[i] for i in trace.ev_name.tolist())


def gzip_stream(head: bytes, filler: bytes, megabytes: int, tail: bytes = b"") -> bytes:
    """`head`, `filler` repeated to `megabytes` MB, `tail`, gzipped: one member per MB (a valid
    gzip file; concatenated members are one stream), so it is made without holding the middle."""
    block = gzip.compress(filler * ((1 << 20) // len(filler)), compresslevel=9, mtime=0)
    return gzip.compress(head, mtime=0) + block * megabytes + gzip.compress(tail, mtime=0)


# -- Chrome JSON: hangs --------------------------------------------------------------------------


def _large_event_cuts(name: str) -> list[tuple[int, bytes, int]]:
    """(size, text, cut) for cuts inside the largest events of a real trace: 90 % into each."""
    text = gzip.decompress((DATA / "kineto" / name).read_bytes())
    starts = [m.end() - 1 for m in re.finditer(rb"\}\s*,\s*\{", text)]
    sizes = sorted(((b - a, a) for a, b in zip(starts, starts[1:])), reverse=True)
    return [(size, text, a + size * 9 // 10) for size, a in sizes if size > 4096]


@pytest.mark.parametrize("name", ["alexnet.pt.trace.json.gz", "rank-0.pt.trace.json.gz"])
def test_a_real_trace_cut_inside_an_event_over_4_kb_loads_up_to_the_cut(tmp_path: Path, name: str) -> None:
    """7 of 7 such cuts hung: the window size went back and forth between 4 and 16 KB."""
    cuts = _large_event_cuts(name)
    assert cuts
    for _, text, cut in cuts[:4]:
        trace = read_chrome(tmp_path, text[:cut], seconds=10)
        assert trace.num_events > 0
        assert trace.skipped["event cut off by the end of the file"] == 1
        (warning,) = [w for w in trace.warnings if "truncated inside an event" in w]
        m = re.fullmatch(r"the file is truncated inside an event of (\d+) bytes at offset (\d+)", warning)
        assert m is not None and int(m[1]) > 4096 and int(m[1]) + int(m[2]) == cut


def test_an_element_larger_than_the_event_limit_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An element over MAX_EVENT_BYTES (128 MB in the report) hung the same way; here the limit is
    1 MB and the element 3 MB, the same loop at a smaller scale."""
    monkeypatch.setattr(chrome_scan, "MAX_EVENT_BYTES", 1 << 20)
    huge = {"ph": "X", "name": "x" * (3 << 20), "pid": 1, "tid": 1, "ts": 2, "dur": 1}
    trace = read_chrome(tmp_path, closed(events_doc(GOOD, huge, {**GOOD, "name": "after"})))
    assert names(trace) == ["after", "good"]
    assert trace.skipped == {"array elements larger than 1 MB": 1}


def test_an_element_of_130_mb_is_skipped_and_the_rest_loads(tmp_path: Path) -> None:
    huge = {"ph": "X", "name": "y" * (130 << 20), "pid": 1, "tid": 1, "ts": 2, "dur": 1}
    trace = read_chrome(tmp_path, closed(events_doc(GOOD, huge, {**GOOD, "name": "after"})), seconds=30)
    assert names(trace) == ["after", "good"]
    assert trace.skipped == {"array elements larger than 64 MB": 1}


def test_100k_unclosed_objects_are_an_event_cut_by_the_end_of_the_file(tmp_path: Path) -> None:
    text = events_doc(GOOD, b'{"a":' * 100_000)
    trace = read_chrome(tmp_path, text)
    assert names(trace) == ["good"]
    assert trace.skipped == {"event cut off by the end of the file": 1}
    at = text.index(b'{"a":')
    assert f"the file is truncated inside an event of 500000 bytes at offset {at}" in trace.warnings


def test_an_unclosed_event_in_the_middle_is_skipped_and_the_rest_loads(tmp_path: Path) -> None:
    broken = b'{"ph": "X", "name": "broken", "args": {"a": 1}'
    trace = read_chrome(tmp_path, closed(events_doc(GOOD, broken, {**GOOD, "name": "after"})))
    assert names(trace) == ["after", "good"]
    assert trace.skipped == {"malformed event JSON": 1}


@pytest.mark.parametrize(
    ("what", "filler", "tail"),
    [("whitespace", b" ", b"]}"), ("one string", b"a", b'"]}')],
)
def test_a_gzip_bomb_of_1_gb_is_refused_by_its_ratio(
    tmp_path: Path, what: str, filler: bytes, tail: bytes
) -> None:
    head = events_doc(GOOD) + (b', "' if filler == b"a" else b", ")
    packed = gzip_stream(head, filler, 1024, tail)
    assert len(packed) < 2 << 20
    reason = refusal(tmp_path, packed, "bomb.json.gz")
    assert re.fullmatch(
        r"the gzip stream inflates (\d+) times \(\d+ MB from 0\.\d+ MB; the limit is 200 times past 64 MB\); "
        r"refused as a likely gzip bomb",
        reason,
    ), reason
    assert int(reason.split()[4]) > 200


def test_a_gzip_stream_past_the_absolute_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream of ordinary ratio is refused once it inflates past MAX_INFLATED_BYTES (16 GB; 1 MB here)."""
    monkeypatch.setattr(chrome_blocks, "MAX_INFLATED_BYTES", 1 << 20)
    events = [{**GOOD, "name": f"op{i}", "ts": i, "args": {"n": i * 7919 % 10007}} for i in range(40_000)]
    packed = gzip.compress(json.dumps({"traceEvents": events}).encode())
    reason = refusal(tmp_path, packed, "big.json.gz")
    assert reason.startswith("the gzip stream inflates to more than 1 MB (the limit) from 0.")


def test_a_gzip_file_of_100k_members_is_read_in_linear_time(tmp_path: Path) -> None:
    """The rest of the block was copied at the end of each member: quadratic in the members."""
    events = [json.dumps({**GOOD, "name": f"op{i}", "ts": i}).encode() + b"," for i in range(100_000)]
    members = [gzip.compress(b'{"traceEvents": [', mtime=0)]
    members += [gzip.compress(e, compresslevel=1, mtime=0) for e in events]
    members.append(gzip.compress(json.dumps(GOOD).encode() + b"]}", mtime=0))
    trace = read_chrome(tmp_path, b"".join(members), "members.json.gz", seconds=10)
    assert trace.num_events == 100_001 and trace.warnings == []


def test_real_traces_are_far_below_the_ratio_limit() -> None:
    for path in sorted((DATA / "kineto").glob("*.gz")):
        packed = path.read_bytes()
        assert len(gzip.decompress(packed)) < chrome_blocks.MAX_INFLATE_RATIO / 4 * len(packed), path.name


def test_256_mb_of_whitespace_between_events_is_passed_quickly(tmp_path: Path) -> None:
    """It was skipped byte by byte in Python (a gigabyte took minutes)."""
    trace = read_chrome(
        tmp_path,
        closed(events_doc(GOOD, b" " * (256 << 20) + json.dumps({**GOOD, "name": "b"}).encode())),
        seconds=10,
    )
    assert names(trace) == ["b", "good"] and trace.skipped == {}


def test_a_pretty_printed_32_mb_event_needing_repair_is_repaired_in_linear_time(tmp_path: Path) -> None:
    """Its repair made one Python call per string token and scanned the text with a pattern that
    stopped at every comma: 7 s of CPU for this event, 15 s at the 64 MB event limit."""
    pretty = (
        b'{\n  "ph": "X", "name": "big", "pid": 1, "tid": 1, "ts": 5, "dur": 1,\n  "args": {\n'
        b'    "note": "a\tb", "quoted": "say \\"hi\\"\\\\", "flag": NaN,\n    "v": [\n'
        + b'      "x",\n' * (2 << 20)
        + b"      -inf\n    ]\n  }\n}"
    )
    trace = read_chrome(tmp_path, closed(events_doc(GOOD, pretty)), seconds=4)
    assert names(trace) == ["big", "good"] and trace.skipped == {}
    assert sorted(trace.warnings) == [
        "repaired: bare -inf values kept as strings (1)",
        "repaired: bare NaN values kept as strings (1)",
        "repaired: raw control characters escaped in strings (1)",
    ]
    (big,) = [i for i in range(len(trace.ev_name)) if trace.strings[trace.ev_name[i]] == "big"]
    args = json.loads(trace.args_json(big))
    assert args["note"] == "a\tb" and args["quoted"] == 'say "hi"\\' and args["flag"] == "NaN"
    assert len(args["v"]) == (2 << 20) + 1 and args["v"][-1] == "-inf"


def test_a_huge_string_element_and_a_huge_top_level_value_are_skipped(tmp_path: Path) -> None:
    text = closed(events_doc(GOOD, b'"' + b"s" * (80 << 20) + b'"', {**GOOD, "name": "after"}))
    text = text[:-1] + b', "blob": "' + b"v" * (3 << 20) + b'", "schemaVersion": 1}'
    trace = read_chrome(tmp_path, text, seconds=20)
    assert names(trace) == ["after", "good"]
    assert trace.skipped == {"array element is not an event object": 1}
    assert trace.metadata["schemaVersion"] == 1 and "blob" not in trace.metadata
    assert any(w.startswith("top-level key 'blob' (") for w in trace.warnings)


# -- Chrome JSON: one bad event --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ({"ph": "B", "name": "b", "pid": 1, "tid": 1}, "B/E events without a valid numeric ts"),
        ({"ph": "X", "name": "b", "pid": 1, "tid": 1, "dur": 1}, "events without a valid numeric ts"),
        (
            {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 9_300_000_000_000_000_000, "dur": 1},
            "events without a valid numeric ts",
        ),
        (
            {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 1e300, "dur": 1},
            "events without a valid numeric ts",
        ),
        (
            {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": "1e999999", "dur": 1},
            "events without a valid numeric ts",
        ),
        (
            {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 1, "dur": 1e300},
            "X events without a valid numeric dur",
        ),
        (
            {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": -9223372036854775808, "dur": 1},
            "events without a valid numeric ts",
        ),
    ],
)
def test_one_event_with_a_missing_or_impossible_time_is_skipped(
    tmp_path: Path, bad: dict[str, Any], reason: str
) -> None:
    """IndexError in `parse_us` (an event group without any `ts`) or OverflowError (≥ 9.3e18, 1e300)
    failed the whole file."""
    trace = read_chrome(tmp_path, closed(events_doc(GOOD, bad)), seconds=10)
    assert names(trace) == ["good"]
    assert trace.skipped == {reason: 1}


@pytest.mark.parametrize("alone", [True, False])
def test_events_nested_100k_levels_deep_are_skipped(tmp_path: Path, alone: bool) -> None:
    """RecursionError from the JSON decoder failed the whole file."""
    deep = (
        b'{"ph": "X", "name": "deep", "pid": 1, "tid": 1, "ts": 2, "dur": 1, "args": '
        + b'{"a":' * 100_000
        + b"1"
        + b"}" * 100_001
    )
    events = [deep] if alone else [GOOD, deep, {**GOOD, "name": "after"}]
    if alone:
        reason = refusal(tmp_path, closed(events_doc(*events)))
        assert reason == "no readable events (1 × events nested too deeply to decode)"
        return
    trace = read_chrome(tmp_path, closed(events_doc(*events)))
    assert names(trace) == ["after", "good"]
    assert trace.skipped == {"events nested too deeply to decode": 1}


def test_a_deeply_nested_top_level_value_is_ignored(tmp_path: Path) -> None:
    text = closed(events_doc(GOOD))[:-1] + b', "deviceProperties": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    trace = read_chrome(tmp_path, text)
    assert names(trace) == ["good"]
    assert "top-level value 'deviceProperties' is nested too deeply to decode; ignored" in trace.warnings


def _read_within_memory(path: str, megabytes: int, result: Any) -> None:
    """Forked child: read `path` with its address space bounded to what it has plus `megabytes`."""
    import resource

    with open("/proc/self/statm") as f:
        limit = int(f.read().split()[0]) * resource.getpagesize() + (megabytes << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        trace = chrome_json.read(path, fsspec.filesystem("file"))
        result.put((trace.num_events, int(trace.flow_src.shape[0]), dict(trace.skipped)))
    except MemoryError:
        result.put("MemoryError")


@pytest.mark.parametrize("where", ["correlation", "async id", "flow id", "bind_id"])
def test_a_megabyte_long_id_is_not_an_id_and_costs_no_memory(tmp_path: Path, where: str) -> None:
    """Ids are kept in fixed-width byte columns as wide as the longest id of their chunk: the fuzz soak
    found a 3-million-digit correlation in a 3.3 MB file that made the reader take 13 GB."""
    import multiprocessing

    source = DATA / "kineto" / "alexnet.pt.trace.json.gz"
    base = chrome_json.read(str(source), fsspec.filesystem("file"))
    text = gzip.decompress(source.read_bytes())
    long_id = b"7" * 3_000_000
    at = {"pid": 1, "tid": 1, "ts": float(re.search(rb'"ts": ([\d.]+)', text).group(1))}  # within the trace
    extra = {
        "correlation": None,
        "async id": {"ph": "b", "name": "a", "cat": "c", **at, "id": long_id.decode()},
        "flow id": {"ph": "s", "name": "f", "cat": "c", **at, "id": long_id.decode()},
        "bind_id": {**GOOD, **at, "name": "bound", "bind_id": long_id.decode(), "flow_out": True},
    }[where]
    if extra is None:
        text, n = re.subn(rb'"correlation": \d+', b'"correlation": ' + long_id, text, count=1)
        assert n == 1
    else:
        text = text.replace(b'"traceEvents": [', b'"traceEvents": [' + json.dumps(extra).encode() + b",", 1)
    path = tmp_path / "trace.json"
    path.write_bytes(text)
    context = multiprocessing.get_context("fork")
    result = context.Queue()
    child = context.Process(target=_read_within_memory, args=(str(path), 600, result))
    child.start()
    outcome = result.get(timeout=120)
    child.join()
    assert outcome != "MemoryError", "the reader needed more than 600 MB"
    events, flows, skipped = outcome
    expected_skip = {
        "correlation": {},
        "async id": {"async events with an id of over 256 bytes": 1},
        "flow id": {"flow events with an id of over 256 bytes": 1},
        "bind_id": {"flow bindings with an id of over 256 bytes": 1},
    }[where]
    assert {k: v for k, v in skipped.items() if "256 bytes" in k} == expected_skip
    assert events == base.num_events + (where == "bind_id")
    assert base.flow_src.shape[0] - (where == "correlation") <= flows <= base.flow_src.shape[0]


@pytest.mark.parametrize("where", ["thread name", "tid"])
def test_a_stream_numbered_with_5000_digits_is_a_plain_thread(tmp_path: Path, where: str) -> None:
    """`int()` of the number in "stream 999…" raised ValueError (found by the fuzz soak)."""
    label = "stream " + "9" * 5000
    if where == "tid":
        doc = events_doc({**GOOD, "tid": label})
    else:
        meta = {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": label}}
        doc = events_doc(meta, GOOD)
    trace = read_chrome(tmp_path, closed(doc))
    assert names(trace) == ["good"] and [t.kind for t in trace.tracks] == ["thread"]


def test_a_file_that_is_not_json_is_described_not_quoted(tmp_path: Path) -> None:
    reason = refusal(tmp_path, b"root:x:0:0:root:/root:/bin/bash\n")
    assert (
        "root" not in reason
        and reason == "not a JSON trace: it starts with a letter; the content is not shown"
    )


# -- XLA logs ----------------------------------------------------------------------------------------


def _metrics_with(tmp_path: Path, replace: str, by: str) -> Path:
    text = (XLA / "xla_metrics_report.txt").read_text()
    assert replace in text
    path = tmp_path / "xla_metrics_report.txt"
    path.write_text(text.replace(replace, by, 1))
    return path


@pytest.mark.parametrize(
    ("replace", "by", "skipped"),
    [
        ("  Value: 7\n", "  Value: 1e999999\n", "Counter value"),
        ("  Value: 7\n", "  Value: nan\n", "Counter value"),
        ("  Accumulator: 004.757us\n", "  Accumulator: 1e999999\n", "unreadable accumulator"),
        ("  Accumulator: 004.757us\n", "  Accumulator: " + "9" * 400 + "s\n", "unreadable accumulator"),
        ("  Accumulator: 004.757us\n", "  Accumulator: " + "9" * 400 + "KB\n", "unreadable accumulator"),
    ],
)
def test_metric_values_beyond_float_range_are_skipped(
    tmp_path: Path, replace: str, by: str, skipped: str
) -> None:
    """`Value: 1e999999` raised OverflowError in `int(float())`, and broke the xla/* routes."""
    parsed = xla_metrics.read(str(_metrics_with(tmp_path, replace, by)))
    if skipped == "Counter value":  # the counter then has no value: its block is dropped too
        assert parsed.skipped == {"unreadable Counter value": 1, "Counter block without Value": 1}
    else:
        assert parsed.skipped == {skipped: 1}
    assert parsed.reports


def test_xla_routes_answer_on_a_metrics_value_of_1e999999(plugin_client, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run = tmp_path / "logdir" / "job"
    run.mkdir(parents=True)
    for name in ("pt_xla_debug.txt", "xla_graphs.txt.0", "xla_metrics_per_step.txt"):
        shutil.copy(XLA / name, run / name)
    _metrics_with(run, "  Value: 7\n", "  Value: 1e999999\n")
    _, client = plugin_client(tmp_path / "logdir")
    query = "run=job&session=xla&host=xla"
    for route in ("xla/report", "xla/graphs", "xla/graph"):
        extra = "&index=0" if route == "xla/graph" else ""
        response = client.get(f"/data/plugin/profscope/{route}?{query}{extra}")
        assert response.status_code == 200, (route, response.get_data(as_text=True)[:300])


@pytest.mark.parametrize(
    ("replace", "by"),
    [
        ("aten::mul(%1, %0)", "aten::mul(%1, %" + "9" * 5000 + ")"),
        (
            "location=<module>@train.py:18, xla_shape=s64[]",
            "location=<module>@train.py:" + "1" * 5000 + ", xla_shape=s64[]",
        ),
        ("  %2 = s64[]", "  %" + "2" * 5000 + " = s64[]"),
    ],
)
def test_xla_graph_routes_answer_on_5000_digit_ids_and_lines(
    plugin_client, tmp_path: Path, replace: str, by: str
) -> None:  # type: ignore[no-untyped-def]
    """`int()` of 5000 digits in the graph parser raised ValueError: a 500 on `xla/graph`."""
    run = tmp_path / "logdir" / "job"
    run.mkdir(parents=True)
    text = (XLA / "xla_graphs.txt.0").read_text()
    assert replace in text
    (run / "xla_graphs.txt.0").write_text(text.replace(replace, by))
    _, client = plugin_client(tmp_path / "logdir")
    query = "run=job&session=xla&host=xla"
    listing = client.get(f"/data/plugin/profscope/xla/graphs?{query}")
    assert listing.status_code == 200
    for index in range(len(listing.get_json()["records"])):
        response = client.get(f"/data/plugin/profscope/xla/graph?{query}&index={index}")
        assert response.status_code == 200, response.get_data(as_text=True)[:300]


def test_a_long_run_of_blanks_in_a_metrics_line_is_read_in_linear_time(tmp_path: Path) -> None:
    """The key regex scanned the rest of the run from each of its positions: 100 k tabs took minutes."""
    path = tmp_path / "xla_metrics.txt"
    path.write_text((XLA / "xla_metrics_report.txt").read_text() + "  Va" + "\t" * 200_000 + "lue: 14\n")
    with within(5):
        assert xla_metrics.read(str(path)).reports


@pytest.mark.parametrize(
    "line",
    [
        "  ValueRate: 010ms109.611u" + "0" * 50_000 + " 0s / second",
        "  Accumulator: " + "1" * 50_000 + "ms",
        "[MetricsData; step=" + "7" * 5000 + "]",
    ],
)
def test_metrics_lines_with_huge_numbers_are_read_in_linear_time(tmp_path: Path, line: str) -> None:
    """A time parsed by searching its parts anywhere took quadratic time (a minute for this
    ValueRate); `int()` of a 5000-digit step raised ValueError."""
    path = tmp_path / "xla_metrics.txt"
    path.write_text(
        (XLA / "xla_metrics_report.txt").read_text() + "Metric: Hostile\n  TotalSamples: 1\n" + line + "\n"
    )
    with within(5):
        assert xla_metrics.read(str(path)).reports


def test_a_size_with_two_decimal_points_is_ignored(tmp_path: Path) -> None:
    """`float('0.000.01')` raised ValueError out of the debug reader."""
    path = tmp_path / "pt_xla_debug.txt"
    text = (XLA / "pt_xla_debug.txt").read_text()
    path.write_text(text + "Post Compilation Analysis: Graph input size: 0.000.01 GB\n")
    assert xla_debug.read(str(path)).analyses


def test_frames_with_5000_digit_lines_and_long_lines_are_read(tmp_path: Path) -> None:
    """`int()` of 5000 digits raised ValueError; a lazy regex took quadratic time on long frames."""
    assert Frame.parse("f (a.py:" + "9" * 5000 + ")") == Frame("f (a.py:" + "9" * 5000 + ")")
    assert Frame.parse("g (x (y) z.py:12)") == Frame("g", "x (y) z.py", 12)
    text = (XLA / "pt_xla_debug.txt").read_text()
    path = tmp_path / "pt_xla_debug.txt"
    frame = "Compilation Analysis:   sync (/home/user/venv/lib/python3.11/site-packages/torch_xla/torch_xla.py:87)\n"
    assert frame in text
    path.write_text(
        text.replace(
            frame,
            "Compilation Analysis:   f (a.py:"
            + "9" * 5000
            + ")\n"
            + "Compilation Analysis:  "
            + " (" * 100_000
            + "\n",
            1,
        )
    )
    with within(5):
        assert xla_debug.read(str(path)).analyses


@pytest.mark.parametrize(
    "message",
    [
        "pt-xla-profiler: TransferFromDeviceTime too frequent: " + "9" * 5000 + " counts during 3 steps",
        "pt-xla-profiler: Following metrics too frequent: CompileTime (1e+ counts) during 2 steps",
        "pt-xla-profiler: Op(s) not lowered: aten::nonzero" + " " * 100_000 + "x",
        "pt-xla-profiler: " + "w" * 100_000 + " too slow",
    ],
)
def test_hostile_profiler_messages_are_read(tmp_path: Path, message: str) -> None:
    path = tmp_path / "pt_xla_debug.txt"
    path.write_text((XLA / "pt_xla_debug.txt").read_text() + message + "\n")
    with within(5):
        parsed = xla_debug.read(str(path))
    assert parsed.messages[-1].text == message.split(": ", 1)[1].strip()


def test_a_line_over_1_mb_is_cut_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "xla_graphs.txt"
    path.write_bytes((XLA / "xla_graphs.txt.0").read_bytes() + b"x" * (3 << 20) + b"\n")
    parsed = xla_graphs.read(str(path))
    assert parsed.skipped["lines longer than 1 MB (cut)"] == 1


def test_a_gzip_bomb_named_like_a_text_log_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "xla_metrics.txt.gz"
    path.write_bytes(gzip_stream((XLA / "xla_metrics_report.txt").read_bytes(), b"\n", 1024))
    with within(10), pytest.raises(UnreadableProfile) as info:
        xla_metrics.read(str(path))
    assert "refused as a likely gzip bomb" in info.value.reason and str(path) in str(info.value)


# -- XPlane -------------------------------------------------------------------------------------------


def _xspace(offsets_ps: list[int]) -> bytes:
    events = b"".join(field(4, field(1, 1) + field(2, off) + field(3, 1000)) for off in offsets_ps)
    line = field(1, 1) + field(2, b"Stream #1(Compute)") + field(3, 1_000_000) + events
    metadata = field(4, field(1, 1) + field(2, field(1, 1) + field(2, b"kernel")))
    plane = field(1, 1) + field(2, b"/device:GPU:0") + field(3, line) + metadata
    return field(1, plane)


@pytest.mark.parametrize("offset", [-(2**63), 2**63 - 1, 2**62, -(2**61)])
def test_an_xplane_event_at_an_impossible_offset_is_skipped(tmp_path: Path, offset: int) -> None:
    """-2**63 passed the sanity check (np.abs leaves it negative) and overflowed: OverflowError."""
    path = tmp_path / "x.xplane.pb"
    path.write_bytes(_xspace([5000, offset, 9000]))
    trace = xplane.read(str(path), fsspec.filesystem("file"))
    assert trace.num_events == 2
    assert trace.skipped == {"events with a negative or impossible offset/duration": 1}


# -- messages name no server path and show no errno formatting (issue 41) ---------------------------


def _reason(read: Any, path: Path) -> str:
    with pytest.raises(UnreadableProfile) as caught:
        read(str(path), fsspec.filesystem("file"))
    return caught.value.reason


@pytest.mark.parametrize(
    ("read", "name"),
    [
        (chrome_json.read, "gone.pt.trace.json"),
        (chrome_json.read, "gone.pt.trace.json.gz"),
        (xla_metrics.read, "xla_metrics.txt"),
        (xla_debug.read, "pt_xla_debug.txt"),
        (xla_graphs.read, "xla_graphs.txt.gz"),
    ],
)
def test_unreadable_reasons_show_no_errno_and_no_server_path(tmp_path: Path, read: Any, name: str) -> None:
    missing = tmp_path / "missing" / name
    folder = tmp_path / name  # a directory where a file is expected
    folder.mkdir()
    for path, words in (
        (missing, ("no such file", "not found")),
        (folder, ("is a directory", "is a folder")),
    ):
        reason = _reason(read, path)
        assert "[Errno" not in reason and "Errno" not in reason, reason
        assert str(tmp_path) not in reason, reason
        assert any(w in reason.lower() for w in words), reason
