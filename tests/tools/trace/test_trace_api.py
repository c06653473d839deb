"""The trace/* routes through TensorBoard's own WSGI app, on real profiles (tests/data/trace)."""

from __future__ import annotations

import gzip
import json
import os
import pathlib
import shutil
import time

import pytest

from profscope.engine import service
from profscope.engine.lod import tiles
from profscope.tools.trace import routes as trace_routes
from tests.support import DATA_DIR

DATA = DATA_DIR / "trace" / "logdir"
BASE = "/data/plugin/profscope"


@pytest.fixture
def logdir(tmp_path):
    target = tmp_path / "logdir"
    shutil.copytree(DATA, target)
    return target


def snapshot(folder: pathlib.Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file() or p.is_dir()
    }


def get(client, route, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return client.get(f"{BASE}/{route}?{query}")


def ready_meta(client, run, session, host, timeout_s=120):
    deadline = time.monotonic() + timeout_s
    seen_202 = False
    while True:
        res = get(client, "trace/meta", run=run, session=session, host=host)
        if res.status_code == 200 and not res.get_json()["pending_hosts"]:
            return res.get_json(), seen_202
        if res.status_code == 200:  # a merged timeline shows the hosts ready so far
            seen_202 = True
            assert time.monotonic() < deadline
            time.sleep(0.05)
            continue
        assert res.status_code == 202, res.get_data(as_text=True)
        body = res.get_json()
        assert body["state"] == "ingesting" and body["bytes_total"] > 0
        assert 0 <= body["bytes_done"] <= body["bytes_total"]
        seen_202 = True
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_meta_tile_event_search_summary_on_a_kineto_trace(plugin_client, logdir, tmp_path, monkeypatch):
    monkeypatch.setattr(trace_routes, "META_WAIT_S", 0.0)
    before = snapshot(logdir)
    _, client = plugin_client(logdir)
    meta, seen_202 = ready_meta(client, "bert", "pytorch", "bert_small")
    assert seen_202, "the first request answers 202 while the child process ingests"
    assert meta["num_events"] > 2000 and meta["num_flows"] > 0
    assert meta["span_ns"][0] == 0 and meta["span_ns"][1] > 0
    assert meta["tile"]["tile_px"] == 1024 and meta["tile"]["base_ns"] == pytest.approx(1.024)
    assert 1024 * 2 ** meta["tile"]["max_level"] >= meta["span_ns"][1] * 1000
    assert {t["kind"] for t in meta["tracks"]} >= {"thread"}
    assert meta["hosts"][0]["name"] == "bert_small"

    # Full view: one tile, binary, cacheable, and every event is either drawn or summarized.
    level = meta["tile"]["max_level"]
    res = get(client, "trace/tile", run="bert", session="pytorch", host="bert_small", level=level, index=0)
    assert res.status_code == 200
    assert res.headers["Content-Type"] == "application/octet-stream"
    assert res.headers["ETag"] and "max-age=" in res.headers["Cache-Control"]
    tile = tiles.decode(res.get_data())
    assert tile.level == level and tile.index == 0
    assert len(set(tile.events["id"].tolist())) + int(tile.summaries["count"].sum()) == meta["num_events"]
    again = get(client, "trace/tile", run="bert", session="pytorch", host="bert_small", level=level, index=0)
    assert again.get_data() == res.get_data() and again.headers["ETag"] == res.headers["ETag"]
    query = f"run=bert&session=pytorch&host=bert_small&level={level}&index=0"
    zipped = client.get(f"{BASE}/trace/tile?{query}", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(zipped.get_data()) == res.get_data()
    assert int(zipped.headers["Content-Length"]) < len(res.get_data())

    # A launch found by search: details name the linked kernel with its time.
    search = get(
        client, "trace/search", run="bert", session="pytorch", host="bert_small", q="cudaLaunchKernel"
    )
    body = search.get_json()
    assert body["total"] > 0 and body["matches"]
    starts = [m["start_ns"] for m in body["matches"]]
    assert starts == sorted(starts)
    launch = body["matches"][0]
    ev = get(
        client, "trace/event", run="bert", session="pytorch", host="bert_small", id=launch["id"]
    ).get_json()
    assert ev["name"] == "cudaLaunchKernel" and ev["start_ns"] == launch["start_ns"]
    assert ev["dur_ns"] >= ev["self_ns"] >= 0
    assert isinstance(ev["args"], dict) and ev["args"]
    assert ev["flows_out"], "Kineto links each launch to its kernel"
    # The same launches by a regular expression over names, and narrowed by an argument's value.
    by_regex = get(
        client,
        "trace/search",
        run="bert",
        session="pytorch",
        host="bert_small",
        q="^cudaLaunchKernel$",
        regex=1,
    ).get_json()
    assert 0 < by_regex["total"] <= body["total"]
    assert {m["name"] for m in by_regex["matches"]} == {"cudaLaunchKernel"}
    correlation = ev["args"]["correlation"]
    one = get(
        client,
        "trace/search",
        run="bert",
        session="pytorch",
        host="bert_small",
        q="cudaLaunchKernel",
        arg=f"correlation:{correlation}",
    ).get_json()
    assert [m["id"] for m in one["matches"]] == [launch["id"]]
    assert one["matches"][0]["depth"] == ev["depth"]
    kernel = ev["flows_out"][0]
    assert kernel["start_ns"] >= ev["start_ns"]
    back = get(client, "trace/event", run="bert", session="pytorch", host="bert_small", id=kernel["id"])
    assert back.get_json()["flows_in"][0]["id"] == ev["id"]

    # Summary of the whole span equals the event count; ids summary counts exactly those events.
    end = meta["span_ns"][1]
    summ = get(client, "trace/summary", run="bert", session="pytorch", host="bert_small", start=0, end=end)
    rows = summ.get_json()["rows"]
    assert sum(r["count"] for r in rows) == meta["num_events"] == summ.get_json()["num_events"]
    by_ids = get(
        client,
        "trace/summary",
        run="bert",
        session="pytorch",
        host="bert_small",
        ids=f"{launch['id']},{ev['id']}",
    ).get_json()
    assert by_ids["num_events"] == 1 and by_ids["rows"][0]["name"] == "cudaLaunchKernel"

    # The logdir is never written; the cache went to the flag's directory.
    assert snapshot(logdir) == before
    assert any((tmp_path / "cache").rglob("meta.json"))


def test_small_file_opens_in_one_request(plugin_client, logdir, monkeypatch):
    monkeypatch.setattr(trace_routes, "META_WAIT_S", 60.0)
    _, client = plugin_client(logdir)
    res = get(client, "trace/meta", run="jax", session="session1", host="tw003")
    assert res.status_code == 200, "trace/meta waits for a short ingest instead of answering 202"


def test_two_ranks_merge_on_one_clock(plugin_client, logdir):
    _, client = plugin_client(logdir)
    meta, _ = ready_meta(client, "ranks", "pytorch", "rank-0,rank-1")
    hosts = meta["hosts"]
    assert [h["name"] for h in hosts] == ["rank-0", "rank-1"]
    assert meta["num_events"] == hosts[0]["num_events"] + hosts[1]["num_events"]
    # Both ranks carry absolute timestamps: offsets differ by their clock origins, not 0/0.
    assert hosts[0]["offset_ns"] != hosts[1]["offset_ns"]
    assert not meta["warnings"]
    track_hosts = {t["host"] for t in meta["tracks"]}
    assert track_hosts == {0, 1}
    ids = [t["id"] for t in meta["tracks"]]
    assert ids == list(range(len(ids)))
    res = get(
        client,
        "trace/tile",
        run="ranks",
        session="pytorch",
        host="rank-0,rank-1",
        level=meta["tile"]["max_level"],
        index=0,
    )
    tile = tiles.decode(res.get_data())
    assert len(set(tile.events["track"].tolist()) | set(tile.summaries["track"].tolist())) > 2
    search = get(
        client, "trace/search", run="ranks", session="pytorch", host="rank-0,rank-1", q="nccl", limit=5
    )
    body = search.get_json()
    assert body["total"] >= len(body["matches"]) and len(body["matches"]) <= 5
    hosts_hit = {
        m["id"] >> 32
        for m in get(
            client,
            "trace/search",
            run="ranks",
            session="pytorch",
            host="rank-0,rank-1",
            q="nccl",
            limit=10000,
        ).get_json()["matches"]
    }
    assert hosts_hit == {0, 1}
    # Paging: the second page of 5 goes on where the first stopped.
    pages = [
        get(
            client,
            "trace/search",
            run="ranks",
            session="pytorch",
            host="rank-0,rank-1",
            q="nccl",
            limit=5,
            offset=offset,
        ).get_json()
        for offset in (0, 5)
    ]
    both = get(
        client, "trace/search", run="ranks", session="pytorch", host="rank-0,rank-1", q="nccl", limit=10
    ).get_json()
    assert pages[1]["offset"] == 5
    assert [m["id"] for p in pages for m in p["matches"]] == [m["id"] for m in both["matches"]]


def test_xplane_trace(plugin_client, logdir):
    _, client = plugin_client(logdir)
    meta, _ = ready_meta(client, "jax", "session1", "tw003")
    assert meta["num_events"] > 1000
    assert {s["kind"] for s in meta["sections"]} >= {"cpu", "gpu"}
    res = get(
        client,
        "trace/tile",
        run="jax",
        session="session1",
        host="tw003",
        level=meta["tile"]["max_level"],
        index=0,
    )
    assert res.status_code == 200


def test_errors_are_clear(plugin_client, logdir):
    _, client = plugin_client(logdir)
    ready_meta(client, "bert", "pytorch", "bert_small")
    cases = [
        (
            dict(run="bert", session="pytorch", host="bert_small", level=99, index=0),
            "trace/tile",
            400,
            "level 99",
        ),
        (
            dict(run="bert", session="pytorch", host="bert_small", level="x", index=0),
            "trace/tile",
            400,
            "'level'",
        ),
        (
            dict(run="bert", session="pytorch", host="bert_small", index=0),
            "trace/tile",
            400,
            "missing query parameter 'level'",
        ),
        (
            dict(run="bert", session="pytorch", host="bert_small", level=1, index=-1),
            "trace/tile",
            400,
            "index",
        ),
        (dict(run="bert", session="pytorch", host="bert_small", id=10**9), "trace/event", 404, "no event"),
        (dict(run="bert", session="pytorch", host="bert_small", q=""), "trace/search", 400, "empty search"),
        (
            dict(run="bert", session="pytorch", host="bert_small", q="(", regex=1),
            "trace/search",
            400,
            "invalid regular expression",
        ),
        (
            dict(run="bert", session="pytorch", host="bert_small", arg="stream"),
            "trace/search",
            400,
            "not key:value",
        ),
        (
            dict(run="bert", session="pytorch", host="bert_small", q="aten", offset=-1),
            "trace/search",
            400,
            "offset",
        ),
        (
            dict(run="bert", session="pytorch", host="bert_small", tracks="a,b"),
            "trace/summary",
            400,
            "'tracks'",
        ),
        (
            dict(run="bert", session="pytorch", host="bert_small", start="soon"),
            "trace/summary",
            400,
            "'start' must be a number",
        ),
        (
            dict(run="bert", session="pytorch", host="bert_small", end="inf"),
            "trace/summary",
            400,
            "'end' must be finite",
        ),
        (
            dict(run="bert", session="pytorch", host="bert_small", tracks="9999"),
            "trace/summary",
            404,
            "track",
        ),
        (dict(run="bert", session="pytorch", host="nope"), "trace/meta", 404, "no host 'nope'"),
        (dict(run="nope", session="pytorch", host="bert_small"), "trace/meta", 404, "run 'nope'"),
    ]
    for params, route, code, text in cases:
        res = get(client, route, **params)
        assert res.status_code == code, (route, params, res.get_data(as_text=True))
        assert text in res.get_data(as_text=True), (route, params, res.get_data(as_text=True))


def wait_not_202(client, **params):
    deadline = time.monotonic() + 60
    while True:
        res = get(client, "trace/meta", **params)
        if res.status_code != 202:
            return res
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_unreadable_file_names_the_file(plugin_client, logdir):
    # Looks like a Kineto trace to discovery, but the reader finds no event in it: the child's
    # UnreadableProfile comes back as a 422 naming the file.
    (logdir / "cut").mkdir()
    (logdir / "cut" / "w.pt.trace.json").write_bytes(b'{"schemaVersion": 1, "traceEvents": [{"ph": "X", ')
    # Not even a gzip stream: discovery already reports it, and the route says so.
    (logdir / "bert" / "bert_small.pt.trace.json.gz").write_bytes(b'{"traceEvents": [')
    _, client = plugin_client(logdir)
    res = wait_not_202(client, run="cut", session="pytorch", host="w")
    text = res.get_data(as_text=True)
    assert res.status_code == 422, text
    assert "w.pt.trace.json" in text and "no readable events" in text
    # Asked again: the failure is remembered, not retried in a loop.
    again = get(client, "trace/meta", run="cut", session="pytorch", host="w")
    assert again.status_code == 422
    res = wait_not_202(client, run="bert", session="pytorch", host="bert_small")
    assert res.status_code == 422 and "bert_small.pt.trace.json.gz" in res.get_data(as_text=True)


def test_changed_file_is_ingested_again(plugin_client, logdir, monkeypatch):
    monkeypatch.setattr(service, "RECHECK_S", 0.0)
    monkeypatch.setattr(trace_routes, "META_WAIT_S", 0.0)
    plugin, client = plugin_client(logdir)
    meta, _ = ready_meta(client, "ranks", "pytorch", "rank-0")
    src = logdir / "ranks" / "rank-0.pt.trace.json.gz"
    other = logdir / "ranks" / "rank-1.pt.trace.json.gz"
    shutil.copyfile(other, src)
    os.utime(src, (time.time() + 10, time.time() + 10))
    # Discovery re-scans on its own schedule; ask it now.
    plugin.logdir.listing(max_age_s=0)
    meta2, seen_202 = ready_meta(client, "ranks", "pytorch", "rank-0")
    assert seen_202
    assert meta2["num_events"] != meta["num_events"]


def test_meta_json_is_plain(plugin_client, logdir):
    _, client = plugin_client(logdir)
    meta, _ = ready_meta(client, "jax", "session1", "tw003")
    json.dumps(meta, allow_nan=False)
