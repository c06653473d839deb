"""`export`: a timeline as gzipped Chrome trace JSON, read back by our own Chrome reader.

Round trips on real profiles (a Kineto trace, a TPU XPlane, two ranks merged on one timeline):
every event comes back with its name, track and times to the ps, and every flow between the same
events; a range export holds exactly `trace/summary`'s events of the range; a redacted export of a
trace with secrets in its labels holds none of them and as many events; the CLI writes the file;
the route streams it as an attachment. Every exported document is also checked against the Chrome
trace event format (the phases, fields and pairings Perfetto's JSON importer reads).
"""

from __future__ import annotations

import collections
import gzip
import json
import pathlib
import shutil
import time

import fsspec
import numpy as np
import pytest

from profscope import cli
from profscope.engine import query
from profscope.engine.lod import index as lod
from profscope.engine.timeline import HostTrace, Timeline
from profscope.formats.chrome import reader as chrome_json
from profscope.formats.xplane import reader as xplane
from profscope.tools.trace import export
from profscope.tools.trace.redact import RedactOptions
from tests.support import DATA_DIR

DATA = DATA_DIR
BERT = DATA / "trace" / "logdir" / "bert" / "bert_small.pt.trace.json.gz"
RANKS = [DATA / "trace" / "logdir" / "ranks" / f"rank-{r}.pt.trace.json.gz" for r in (0, 1)]
TPU = DATA / "xplane" / "tpu_v6e_inference.xplane.pb"
BASE = "/data/plugin/profscope"
FS = fsspec.filesystem("file")
SUBJECT_FIELDS = ("run", "session")


def host_trace(path: pathlib.Path, name: str | None = None) -> HostTrace:
    reader = xplane if path.name.endswith(".xplane.pb") else chrome_json
    trace = reader.read(str(path), FS)
    return HostTrace(name or path.name.split(".")[0], trace, lod.build(trace), key=str(path))


def exported(
    timeline: Timeline,
    tmp_path: pathlib.Path,
    span: export.ExportRange | None = None,
    redact: RedactOptions | None = None,
) -> tuple[export.Exporter, pathlib.Path, dict]:
    subject = export.Subject("run", "session", [h.name for h in timeline.hosts])
    exporter = export.Exporter(timeline, subject, span or export.ExportRange(), redact or RedactOptions())
    out = tmp_path / f"export{len(list(tmp_path.glob('export*')))}.json.gz"
    export.write(exporter, str(out))
    doc = json.loads(gzip.decompress(out.read_bytes()))
    check_chrome_trace(doc)
    return exporter, out, doc


def check_chrome_trace(doc: dict) -> None:
    """The document as the Chrome trace event format describes it and Perfetto's importer reads it:
    an object with a `traceEvents` array; `M` events naming every process and thread used; `X`
    with numeric `ts` and `dur` >= 0, `i` with thread scope, `C` with numeric args, flows as one
    `s` and one `f` (binding its enclosing slice) per (cat, name, id); args always objects."""
    assert isinstance(doc["traceEvents"], list) and doc["displayTimeUnit"] == "ns"
    assert isinstance(doc["profscope_export"], dict)
    processes, threads = set(), set()
    flows: dict[tuple, list[str]] = collections.defaultdict(list)
    for ev in doc["traceEvents"]:
        assert isinstance(ev["pid"], int) and isinstance(ev["tid"], int), ev
        if ev["ph"] == "M":
            assert ev["name"] in ("process_name", "process_sort_index", "thread_name", "thread_sort_index")
            if ev["name"] == "process_name":
                processes.add(ev["pid"])
            if ev["name"] == "thread_name":
                threads.add((ev["pid"], ev["tid"]))
    for ev in doc["traceEvents"]:
        ph = ev["ph"]
        assert ph in ("M", "X", "i", "C", "s", "f"), ev
        if ph == "M":
            continue
        assert isinstance(ev["ts"], (int, float)) and isinstance(ev["name"], str), ev
        assert ev["pid"] in processes and (ev["pid"], ev["tid"]) in threads, ev
        assert isinstance(ev.get("args", {}), dict), ev
        if ph == "X":
            assert isinstance(ev["dur"], (int, float)) and ev["dur"] >= 0
        elif ph == "i":
            assert ev["s"] == "t" and "dur" not in ev
        elif ph == "C":
            assert all(isinstance(v, (int, float)) or v is None for v in ev["args"].values())
        else:
            assert isinstance(ev["id"], int) and isinstance(ev["cat"], str)
            assert ph == "s" or ev["bp"] == "e"
            flows[(ev["cat"], ev["name"], ev["id"])].append(ph)
    assert all(sorted(phases) == ["f", "s"] for phases in flows.values())


def read_back(path: pathlib.Path):
    return chrome_json.read(str(path), FS)


def event_keys(trace, offset_ps: int = 0, shift_ps: int = 0) -> list[tuple]:
    """(track name, name, start, duration) of every event; start in session ps minus `shift_ps`."""
    names = [t.name for t in trace.tracks]
    return [
        (names[t], trace.strings[n], s + offset_ps - shift_ps, d)
        for t, n, s, d in zip(
            trace.ev_track.tolist(),
            trace.ev_name.tolist(),
            trace.ev_start_ps.tolist(),
            trace.ev_dur_ps.tolist(),
        )
    ]


def flow_keys(trace, keys: list[tuple], exclude: set[int] = frozenset()) -> collections.Counter:
    """(source key, destination key, name) of every flow, but those from an event whose Kineto
    correlation id is in `exclude`."""
    return collections.Counter(
        (keys[s], keys[d], trace.strings[n])
        for s, d, n in zip(trace.flow_src.tolist(), trace.flow_dst.tolist(), trace.flow_name.tolist())
        if not exclude or json.loads(trace.args_json(s) or b"{}").get("correlation") not in exclude
    )


def source_keys(timeline: Timeline) -> tuple[list[tuple], collections.Counter, int]:
    """Every event and flow of the timeline keyed as `event_keys`, with starts measured from the
    reader's zero on reading the export back: the first event's start, floored to a whole ns."""
    first = min(
        int(np.asarray(h.trace.ev_start_ps).min()) + off
        for h, off in zip(timeline.hosts, timeline.offsets_ps)
    )
    shift = first // 1000 * 1000
    keys, flows = [], collections.Counter()
    for host, offset in zip(timeline.hosts, timeline.offsets_ps):
        mine = event_keys(host.trace, offset, shift)
        keys.extend(mine)
        flows += flow_keys(host.trace, mine)
    return keys, flows, shift


def test_round_trip_of_a_kineto_trace(tmp_path):
    timeline = Timeline([host_trace(BERT)])
    exporter, out, doc = exported(timeline, tmp_path)
    back = read_back(out)
    source = timeline.hosts[0].trace
    keys, flows, shift = source_keys(timeline)
    assert back.num_events == source.num_events == exporter.counts["events"]
    assert collections.Counter(event_keys(back)) == collections.Counter(keys)
    assert flow_keys(back, event_keys(back)) == flows and sum(flows.values()) == source.flow_src.shape[0]
    assert {t.name for t in back.tracks} == {t.name for t in source.tracks}
    assert {s.name for s in back.sections if s.kind != "other"} >= {"python3 (pid 19392)"}
    assert back.clock_origin_ns == doc["baseTimeNanoseconds"] + shift // 1000
    assert back.clock_origin_ns == source.clock_origin_ns + shift // 1000
    # Kineto's launch flows are written as Kineto writes them; the reader rebuilds them from ids.
    launches = [ev for ev in doc["traceEvents"] if ev["ph"] == "s" and ev["cat"] == "ac2g"]
    assert (
        len(launches) == collections.Counter(source.strings[n] for n in source.flow_name.tolist())["launch"]
    )
    meta = doc["profscope_export"]
    assert meta["counts"] == {"events": source.num_events, "flows": 62, "counter_samples": 0}
    assert meta["hosts"][0]["metadata"]["with_stack"] == 1 and meta["whole_trace"] is True
    assert meta["redaction"] == {"enabled": False, "shapes": False, "args": False, "kinds": []}


def test_round_trip_of_an_xplane_keeps_picoseconds(tmp_path):
    timeline = Timeline([host_trace(TPU)])
    _, out, doc = exported(timeline, tmp_path)
    back = read_back(out)
    source = timeline.hosts[0].trace
    keys, _, _ = source_keys(timeline)
    assert int((source.ev_start_ps % 1000 != 0).sum()) > 1000, "the XPlane has sub-ns times"
    assert back.num_events == source.num_events
    assert collections.Counter(event_keys(back)) == collections.Counter(keys)
    assert {t.name for t in back.tracks} == {
        t.name for t in source.tracks if t.id in set(source.ev_track.tolist())
    }
    names = {ev["args"]["name"] for ev in doc["traceEvents"] if ev["name"] == "process_name"}
    assert names == {s.name for s in source.sections}
    assert sum(1 for ev in doc["traceEvents"] if ev["ph"] == "i") == int((source.ev_dur_ps == 0).sum())


def test_round_trip_of_two_merged_hosts(tmp_path):
    timeline = Timeline([host_trace(p) for p in RANKS])
    _, out, doc = exported(timeline, tmp_path)
    back = read_back(out)
    keys, flows, _ = source_keys(timeline)
    assert back.num_events == sum(h.trace.num_events for h in timeline.hosts)
    assert collections.Counter(event_keys(back)) == collections.Counter(keys)
    processes = [ev["args"]["name"] for ev in doc["traceEvents"] if ev["name"] == "process_name"]
    assert processes[0].startswith("rank-0: ") and any(p.startswith("rank-1: ") for p in processes)
    assert len(set(doc["profscope_export"]["hosts"][h]["offset_ns"] for h in (0, 1))) == 2
    # Our reader joins Kineto correlation ids over the whole file, so the launches of a correlation
    # id both ranks use may be joined across them: every other flow comes back as it was.
    shared = _correlations_of_both(timeline)
    assert shared, "the two ranks share some correlation ids"
    got = flow_keys(back, event_keys(back), exclude=shared)
    want = collections.Counter()
    for host, offset in zip(timeline.hosts, timeline.offsets_ps):
        want += flow_keys(
            host.trace, event_keys(host.trace, offset, source_keys(timeline)[2]), exclude=shared
        )
    assert got == want and sum(want.values()) > 2000
    assert back.flow_src.shape[0] == sum(flows.values())


def _correlations_of_both(timeline: Timeline) -> set[int]:
    per_host = []
    for host in timeline.hosts:
        found = set()
        for i in range(host.trace.num_events):
            raw = host.trace.args_json(i)
            if b'"correlation"' in raw:
                found.add(json.loads(raw)["correlation"])
        per_host.append(found)
    return per_host[0] & per_host[1]


def test_a_range_export_holds_exactly_the_events_of_the_range(tmp_path):
    timeline = Timeline([host_trace(p) for p in RANKS])
    span_ns = timeline.span_ps / 1000
    start, end = span_ns * 0.3, span_ns * 0.55
    span = export.ExportRange(round(start * 1000), round(end * 1000))
    exporter, out, doc = exported(timeline, tmp_path, span)
    expected = []
    for host, offset in zip(timeline.hosts, timeline.offsets_ps):
        mine = query.range_events(host.trace, host.index, None, span.start_ps - offset, span.end_ps - offset)
        expected.append(set(mine.tolist()))
    total = sum(len(e) for e in expected)
    assert 0 < total < sum(h.trace.num_events for h in timeline.hosts)
    assert exporter.counts["events"] == total == timeline.summary(start, end).num_events
    back = read_back(out)
    assert back.num_events == total
    names = collections.Counter(ev["name"] for ev in doc["traceEvents"] if ev["ph"] in ("X", "i"))
    want = collections.Counter(
        h.trace.strings[int(h.trace.ev_name[i])] for h, mine in zip(timeline.hosts, expected) for i in mine
    )
    assert names == want
    # flows: those whose two ends are both in the range
    inside = sum(
        int(sum(1 for s, d in zip(h.trace.flow_src.tolist(), h.trace.flow_dst.tolist()) if s in e and d in e))
        for h, e in zip(timeline.hosts, expected)
    )
    assert exporter.counts["flows"] == inside
    assert doc["profscope_export"]["range_ns"] == pytest.approx([start, end])
    assert doc["profscope_export"]["whole_trace"] is False
    preview = export.Exporter(
        timeline, export.Subject("run", "session", ["rank-0", "rank-1"]), span, RedactOptions()
    ).preview()
    assert (preview.events, preview.flows) == (total, inside)


def test_counters_are_exported_as_counter_events(tmp_path):
    from profscope.model.columns import TraceBuilder

    b = TraceBuilder("mem", "test")
    b.clock_origin_ns = 1_700_000_000_000_000_000
    section = b.section("device", "gpu")
    b.add_events(
        b.track(section, "stream 3"), [0, 5_000_000], [2_000_000, 0], [b.intern("k"), b.intern("mark")]
    )
    b.add_counter(b.track(section, "memory", kind="counter"), [1_000, 2_500_000, 9_000_000], [1.5, 2.0, 0.0])
    trace = b.finalize()
    timeline = Timeline([HostTrace("h", trace, lod.build(trace), key="h")])
    exporter, out, doc = exported(timeline, tmp_path)
    samples = [ev for ev in doc["traceEvents"] if ev["ph"] == "C"]
    assert [(ev["name"], ev["ts"], ev["args"]) for ev in samples] == [
        ("memory", 0.001, {"value": 1.5}),
        ("memory", 2.5, {"value": 2.0}),
        ("memory", 9.0, {"value": 0.0}),
    ]
    assert exporter.counts == {"events": 2, "flows": 0, "counter_samples": 3}
    back = read_back(out)
    assert back.ctr_value.tolist() == [1.5, 2.0, 0.0] and back.tracks[int(back.ctr_track[0])].name == "memory"


def test_flow_ends_bind_to_their_slice_not_to_a_child_starting_with_it(tmp_path):
    from profscope.model.columns import TraceBuilder

    b = TraceBuilder("flows", "test")
    section = b.section("host", "cpu")
    cpu, gpu = b.track(section, "thread 1"), b.track(section, "thread 2")
    names = [b.intern(n) for n in ("parent", "first child", "second child", "target", "leaf")]
    # parent [0, 100 ns) with children [0, 30) and [30, 50): the free gap is [50, 100)
    first = b.add_events(cpu, [0, 0, 30_000], [100_000, 30_000, 20_000], names[:3])
    target = b.add_events(gpu, [200_000, 200_000], [50_000, 10_000], names[3:])
    b.add_flow(first, target, b.intern("custom"))
    trace = b.finalize()
    parent = int(np.flatnonzero(trace.ev_name == names[0])[0])
    goal = int(np.flatnonzero(trace.ev_name == names[3])[0])
    assert export.bind_times(trace, np.array([parent, goal])).tolist() == [75_000, 230_000]
    timeline = Timeline([HostTrace("h", trace, lod.build(trace), key="h")])
    _, out, doc = exported(timeline, tmp_path)
    assert [(ev["ph"], ev["ts"]) for ev in doc["traceEvents"] if ev["ph"] in "sf"] == [
        ("s", 0.075),
        ("f", 0.23),
    ]
    back = read_back(out)
    keys = event_keys(back)
    assert flow_keys(back, keys) == collections.Counter(
        {(("thread 1", "parent", 0, 100_000), ("thread 2", "target", 200_000, 50_000), "custom"): 1}
    )


# -- redaction ---------------------------------------------------------------------------------------

SECRETS = {
    "email": "alice.smith@example.com",
    "github_token": "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "huggingface_token": "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567",
    "api_key": "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
    "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "secret_value": "s3cr3t-Value-42",
}
HOST = "gpu-node-17"


def secret_trace(folder: pathlib.Path, inject: bool = True) -> tuple[pathlib.Path, dict[str, int]]:
    """The BERT Kineto trace with secrets put where a user's code puts them: `record_function`
    labels, their args, `with_stack` paths in Python function names and `Call stack` args, a
    trace name under the user's home; returns the file and how many places got each kind, beyond
    what the trace itself holds (its metadata has the environment, paths and a trace id).
    `inject=False` writes the trace as it is, under the same name."""
    doc = json.loads(gzip.decompress(BERT.read_bytes()))
    places: collections.Counter[str] = collections.Counter()
    target = folder / ("secrets" if inject else "plain") / f"{HOST}.pt.trace.json.gz"
    target.parent.mkdir(parents=True)
    if not inject:
        target.write_bytes(gzip.compress(json.dumps(doc).encode()))
        return target, places
    events = doc["traceEvents"]
    annotations = [e for e in events if e.get("cat") == "cpu_op"][:6]
    for k, ev in enumerate(annotations):
        ev["name"] = f"## step {k} for {SECRETS['email']} token={SECRETS['secret_value']} ##"
        ev["args"]["Call stack"] = (
            "/home/alice/project/train.py(42): forward;"
            "/home/alice/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py(1501): _call_impl"
        )
        ev["args"]["note"] = (
            f"GITHUB={SECRETS['github_token']} HF {SECRETS['huggingface_token']} "
            f"OPENAI {SECRETS['api_key']} {SECRETS['aws_access_key']} "
            f"aws_secret_access_key={SECRETS['aws_secret_key']} on {HOST}"
        )
        ev["args"]["hostname"] = f"{HOST}.cluster"
    places.update(email=6, secret_value=6, github_token=6, huggingface_token=6, api_key=6)
    places.update(aws_access_key=6, aws_secret_key=6, path=12, user=12, host=6 + 6)
    python = [e for e in events if e.get("cat") == "python_function"][:4]
    for ev in python:
        ev["name"] = "/home/alice/project/model.py(7): " + ev["name"].split(": ", 1)[-1]
    places.update(path=4, user=4)
    doc["traceName"] = "/home/alice/traces/" + HOST + ".pt.trace.json"  # was a path under /tmp
    places.update(user=1, host=1)
    target.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return target, places


def test_a_redacted_export_keeps_every_event_and_no_secret(tmp_path):
    path, places = secret_trace(tmp_path)
    timeline = Timeline([host_trace(path, HOST)])
    source = timeline.hosts[0].trace
    assert sum(1 for i in range(source.num_events) if b"alice" in source.args_json(i)) == 6
    options = RedactOptions(enabled=True)
    exporter, out, doc = exported(timeline, tmp_path, redact=options)
    text = gzip.decompress(out.read_bytes())
    for secret in [*SECRETS.values(), "alice", HOST, "example.com", "/home/", "GITHUB=ghp"]:
        assert secret.encode() not in text, secret
    assert exporter.counts["events"] == source.num_events
    back = read_back(out)
    assert back.num_events == source.num_events
    assert collections.Counter(n[0:1] + n[2:] for n in event_keys(back)) == collections.Counter(
        k[0:1] + k[2:] for k in source_keys(timeline)[0]
    ), "every event keeps its track and times"
    names = {back.strings[int(n)] for n in back.ev_name.tolist()}
    assert "## step 0 for <email-1> token=<secret_value-1> ##" in names
    from_stack = [n for n in names if "model.py(7): " in n]
    assert len(from_stack) == 4 and all(n.startswith("<path-") for n in from_stack)
    kinds = {k["kind"]: k for k in doc["profscope_export"]["redaction"]["kinds"]}
    plain_path, _ = secret_trace(tmp_path, inject=False)
    _, _, plain = exported(Timeline([host_trace(plain_path, HOST)]), tmp_path, redact=options)
    before = {k["kind"]: k["occurrences"] for k in plain["profscope_export"]["redaction"]["kinds"]}
    assert before["secret_value"] == 1 and before["long_secret"] == 1, "HF_TOKEN and trace_id in metadata"
    users_before = {k["kind"]: k["values"] for k in plain["profscope_export"]["redaction"]["kinds"]}["user"]
    assert users_before == 1, "started_by in the metadata and its environment"
    for kind in set(places) | set(before):
        assert kinds[kind]["occurrences"] == places[kind] + before.get(kind, 0), (
            kind,
            kinds[kind],
            places[kind],
        )
    assert kinds["email"]["values"] == kinds["github_token"]["values"] == kinds["user"]["values"] - 1 == 1
    assert b'"HF_TOKEN":"<secret_value-' in text and b'"trace_id":"<long_secret-1>"' in text
    preview = export.Exporter(
        timeline, export.Subject("run", "session", [HOST]), export.ExportRange(), options
    ).preview()
    assert [(k.kind, k.values, k.occurrences) for k in preview.redactions] == [
        (k["kind"], k["values"], k["occurrences"]) for k in doc["profscope_export"]["redaction"]["kinds"]
    ]
    assert preview.events == source.num_events and preview.filename == "redacted.trace.json.gz"
    shown = {(r.kind, r.original): r.replacement for r in preview.replacements}
    assert shown[("host", "gp…17")] == doc["profscope_export"]["hosts"][0]["name"]
    assert shown[("email", "al…om")] == "<email-1>"
    node = doc["profscope_export"]["hosts"][0]["metadata"]["metadata"]["system"]["uname"]["node"]
    assert shown[("host", "a3…13")] == node, "the container's host name, replaced in uname too"
    assert all("alice" not in r.original and HOST not in r.original for r in preview.replacements)


def test_shapes_and_argument_values_can_be_redacted_too(tmp_path):
    path, _ = secret_trace(tmp_path)
    timeline = Timeline([host_trace(path, HOST)])
    source = timeline.hosts[0].trace
    _, out, doc = exported(timeline, tmp_path, redact=RedactOptions(enabled=True, shapes=True))
    shaped = [ev["args"] for ev in doc["traceEvents"] if "Input Dims" in ev.get("args", {})]
    assert shaped and all(a["Input Dims"].startswith("<shapes-") for a in shaped)
    assert all(a["Input type"].startswith("<shapes-") for a in shaped if "Input type" in a)
    kinds = {k["kind"]: k for k in doc["profscope_export"]["redaction"]["kinds"]}
    assert kinds["shapes"]["occurrences"] >= len(shaped)
    _, out, doc = exported(timeline, tmp_path, redact=RedactOptions(enabled=True, args=True))
    leaves = [v for ev in doc["traceEvents"] if ev["ph"] in ("X", "i") for v in _leaves(ev.get("args", {}))]
    assert len(leaves) > source.num_events and set(leaves) <= {"<redacted>", None}
    assert read_back(out).num_events == source.num_events
    # with the ids gone, launch flows still come back from the flow events themselves
    assert read_back(out).flow_src.shape[0] == source.flow_src.shape[0]


def _leaves(value):
    """The scalars of a JSON value, lists and objects walked."""
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


# -- the CLI and the route ----------------------------------------------------------------------------


@pytest.fixture
def logdir(tmp_path):
    target = tmp_path / "logdir"
    shutil.copytree(DATA / "trace" / "logdir", target)
    return target


def test_cli_export_writes_the_trace(logdir, tmp_path, capsys):
    out = tmp_path / "bert.json.gz"
    argv = [
        "export",
        str(logdir),
        "bert",
        "pytorch",
        "bert_small",
        "-o",
        str(out),
        "--cache-dir",
        str(tmp_path / "c"),
    ]
    assert cli.main(argv) == 0
    doc = json.loads(gzip.decompress(out.read_bytes()))
    check_chrome_trace(doc)
    assert sum(1 for ev in doc["traceEvents"] if ev["ph"] in ("X", "i")) == 2298
    assert "2298 events" in capsys.readouterr().out
    ranged = tmp_path / "ranged.json.gz"
    argv = [
        *argv[:6],
        str(ranged),
        "--cache-dir",
        str(tmp_path / "c"),
        "--start",
        "0",
        "--end",
        "1000000",
        "--redact",
    ]
    assert cli.main(argv) == 0
    doc = json.loads(gzip.decompress(ranged.read_bytes()))
    assert doc["profscope_export"]["range_ns"] == [0.0, 1_000_000.0]
    assert doc["profscope_export"]["redaction"]["enabled"] is True
    assert cli.main(["export", str(logdir), "bert", "pytorch", "nohost", "-o", str(out)]) == 2


def wait_for_trace(client, query: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while client.get(f"{BASE}/trace/meta?{query}").status_code == 202:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_the_route_streams_an_attachment(plugin_client, logdir, monkeypatch):
    monkeypatch.setattr(export, "BATCH_EVENTS", 500)
    _, client = plugin_client(logdir)
    query = "run=jax&session=session1&host=tw003"
    wait_for_trace(client, query)
    preview = client.get(f"{BASE}/export/preview?{query}&redact=1")
    assert preview.status_code == 200, preview.get_data(as_text=True)
    counts = preview.get_json()
    meta = client.get(f"{BASE}/trace/meta?{query}").get_json()
    assert counts["events"] == meta["num_events"] > 1000 and counts["redact"] is True
    assert counts["filename"] == "redacted.trace.json.gz"
    assert {"kind": "host", "original": "t…3", "replacement": "<host-1>"} in counts["replacements"]
    res = client.get(f"{BASE}/export?{query}", buffered=False)
    assert res.status_code == 200
    assert res.headers["Content-Type"] == "application/gzip"
    assert res.headers["Content-Disposition"] == 'attachment; filename="jax_session1_tw003.trace.json.gz"'
    assert "Content-Length" not in res.headers and "Content-Encoding" not in res.headers
    chunks = list(res.response)
    assert len(chunks) > 3, "the body is sent as it is made"
    doc = json.loads(gzip.decompress(b"".join(chunks)))
    check_chrome_trace(doc)
    assert sum(1 for ev in doc["traceEvents"] if ev["ph"] in ("X", "i")) == counts["events"]
    bad = client.get(f"{BASE}/export?{query}&start=10&end=5")
    assert bad.status_code == 400 and "ends before it starts" in bad.get_data(as_text=True)
    assert client.get(f"{BASE}/export?{query}&redact=yes").status_code == 400
