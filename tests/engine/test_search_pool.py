"""The search pool: how many searches scan at once, who waits or is refused, who is cancelled; and,
through TensorBoard's WSGI app on a real trace, that tiles and event details never wait behind a
search and that a search whose client went away stops."""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import threading
import time
from collections.abc import Callable

import pytest
from werkzeug.serving import WSGIRequestHandler, make_server
from werkzeug.test import Client

from profscope.engine import query
from profscope.engine.search_pool import SearchBusy, SearchCancelled, SearchPool
from profscope.tools.trace import routes as trace_routes
from tests.support import DATA_DIR

BASE = "/data/plugin/profscope"
SUBJECT = "run=bert&session=pytorch&host=bert_small"
# Generous: a thread that should get going within milliseconds, on a machine that may be loaded.
WAIT_S = 60.0


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.005)


class Blocking:
    """A search that holds its slot until released, counting how many such searches run at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.finished = 0

    def __call__(self) -> str:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        self.release.wait(WAIT_S)
        with self.lock:
            self.now -= 1
            self.finished += 1
        return "done"


def in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """Run `fn` in a thread; the list gets its result or the exception it raised."""
    outcome: list[object] = []

    def target() -> None:
        try:
            outcome.append(fn())
        except Exception as e:  # the test looks at what was raised
            outcome.append(e)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome


@pytest.mark.parametrize("max_running", [1, 2])
def test_one_search_more_than_the_pool_holds_waits_for_a_slot(max_running: int) -> None:
    pool = SearchPool(max_running=max_running, max_waiting=4)
    search = Blocking()
    started = [in_thread(lambda: pool.run(search)) for _ in range(max_running + 1)]
    wait_until(lambda: pool.counts() == (max_running, 1), f"{max_running} run and one waits")
    assert search.now == max_running
    search.release.set()
    for thread, outcome in started:
        thread.join(WAIT_S)
        assert outcome == ["done"]
    assert search.most == max_running and search.finished == max_running + 1
    assert pool.counts() == (0, 0)


def test_searches_past_the_queue_are_refused_with_a_time_to_retry() -> None:
    pool = SearchPool(max_running=1, max_waiting=1, retry_after_s=3)
    search = Blocking()
    running = in_thread(lambda: pool.run(search))
    wait_until(lambda: pool.counts() == (1, 0), "one runs")
    waiting = in_thread(lambda: pool.run(search))
    wait_until(lambda: pool.counts() == (1, 1), "one waits")
    with pytest.raises(SearchBusy) as refused:
        pool.run(search)
    assert refused.value.retry_after_s == 3
    search.release.set()
    for thread, outcome in (running, waiting):
        thread.join(WAIT_S)
        assert outcome == ["done"]


def test_a_newer_search_of_the_same_client_cancels_the_waiting_one_only() -> None:
    pool = SearchPool(max_running=1, max_waiting=4)
    search = Blocking()
    other_client = in_thread(lambda: pool.run(search, client="b"))
    wait_until(lambda: pool.counts() == (1, 0), "client b's search runs")
    older = in_thread(lambda: pool.run(search, client="a"))
    wait_until(lambda: pool.counts() == (1, 1), "client a's search waits")
    newer = in_thread(lambda: pool.run(lambda: "newer", client="a"))
    older[0].join(WAIT_S)
    assert len(older[1]) == 1 and isinstance(older[1][0], SearchCancelled)
    search.release.set()
    for thread, outcome, expected in ((*other_client, "done"), (*newer, "newer")):
        thread.join(WAIT_S)
        assert outcome == [expected]


@pytest.fixture
def bert_client(plugin_client, tmp_path, monkeypatch) -> Client:
    """A client of TensorBoard's WSGI app over the real bert_small Kineto trace, ingested, with a
    search pool of one slot and no queue."""
    logdir = tmp_path / "logdir"
    shutil.copytree(DATA_DIR / "trace" / "logdir" / "bert", logdir / "bert")
    monkeypatch.setattr(trace_routes, "META_WAIT_S", 60.0)
    monkeypatch.setattr(trace_routes, "SEARCHES", SearchPool(max_running=1, max_waiting=0))
    _, client = plugin_client(logdir)
    response = client.get(f"{BASE}/trace/meta?{SUBJECT}")
    assert response.status_code == 200, response.get_data(as_text=True)
    return client


def test_tiles_and_events_are_answered_while_a_search_scans(bert_client: Client, monkeypatch) -> None:
    """A search held in the middle of its scan keeps its slot; tiles and event details go on, a
    second search is refused with 503 and Retry-After, a newer search of the same client cancels it."""
    meta = bert_client.get(f"{BASE}/trace/meta?{SUBJECT}").get_json()
    in_scan, resume = threading.Event(), threading.Event()
    windows = query._windows

    def held_windows(trace, step):  # type: ignore[no-untyped-def]
        for window in windows(trace, step):
            if threading.current_thread().name == "held search":
                in_scan.set()
                resume.wait(WAIT_S)
            yield window

    monkeypatch.setattr(query, "_windows", held_windows)
    monkeypatch.setattr(query, "SCAN_CHUNK", 4096)
    held_outcome: list[int] = []
    held = threading.Thread(
        target=lambda: held_outcome.append(
            Client(bert_client.application)
            .get(f"{BASE}/trace/search?{SUBJECT}&q=a&client=viewer1")
            .status_code
        ),
        name="held search",
        daemon=True,
    )
    held.start()
    assert in_scan.wait(WAIT_S), "the search reached its scan"

    level = meta["tile"]["max_level"]
    for _ in range(3):
        tile = bert_client.get(f"{BASE}/trace/tile?{SUBJECT}&level={level}&index=0")
        assert tile.status_code == 200
        event = bert_client.get(f"{BASE}/trace/event?{SUBJECT}&id=0")
        assert event.status_code == 200
    assert held.is_alive(), "the tiles and events were answered while the search still held its slot"

    busy = bert_client.get(f"{BASE}/trace/search?{SUBJECT}&q=conv&client=viewer2")
    assert busy.status_code == 503 and int(busy.headers["Retry-After"]) >= 1

    newer: list[int] = []
    newer_thread = threading.Thread(
        target=lambda: newer.append(
            Client(bert_client.application)
            .get(f"{BASE}/trace/search?{SUBJECT}&q=conv&client=viewer1")
            .status_code
        ),
        daemon=True,
    )
    newer_thread.start()
    wait_until(lambda: trace_routes.SEARCHES.counts() == (1, 1), "the newer search waits for the slot")
    resume.set()
    for thread in (held, newer_thread):
        thread.join(WAIT_S)
    assert held_outcome == [409], "the newer search of viewer1 cancelled the held one"
    assert newer == [200]


def test_a_waiting_search_whose_client_went_away_leaves_the_queue() -> None:
    pool = SearchPool(max_running=1, max_waiting=4)
    search = Blocking()
    running = in_thread(lambda: pool.run(search))
    wait_until(lambda: pool.counts() == (1, 0), "one runs")
    client_gone = threading.Event()
    waiting = in_thread(lambda: pool.run(lambda: "scanned", client="a", gone=client_gone.is_set))
    wait_until(lambda: pool.counts() == (1, 1), "one waits")
    client_gone.set()
    waiting[0].join(WAIT_S)
    assert len(waiting[1]) == 1 and isinstance(waiting[1][0], SearchCancelled)
    assert "went away" in str(waiting[1][0]) and pool.counts() == (1, 0)
    search.release.set()
    running[0].join(WAIT_S)
    assert running[1] == ["done"]


class QuietHandler(WSGIRequestHandler):
    def log_request(self, *args: object, **kwargs: object) -> None:
        pass


def test_a_search_stops_scanning_soon_after_its_client_closes_the_connection(
    bert_client: Client, monkeypatch
) -> None:
    """TensorBoard's app served by werkzeug's server on loopback (as `tensorboard` serves it): a
    search of a client that waits is answered; a raw client that asks for a slow search (one short
    window of the args blob every `window_s`) and closes stops it within a few windows."""
    server = make_server("127.0.0.1", 0, bert_client.application, threaded=True, request_handler=QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    search = f"{BASE}/trace/search?{SUBJECT}&q=zzz&client=viewer1"
    try:
        waiting = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=WAIT_S)
        waiting.request("GET", search)
        answer = waiting.getresponse()
        assert answer.status == 200 and json.loads(answer.read())["total"] == 0
        waiting.close()

        windows, scanned, window_s = query._windows, [0], 0.03

        def slow_windows(trace, step):  # type: ignore[no-untyped-def]
            for window in windows(trace, step):
                scanned[0] += 1
                time.sleep(window_s)
                yield window

        monkeypatch.setattr(query, "_windows", slow_windows)
        monkeypatch.setattr(query, "SCAN_CHUNK", 1024)
        with socket.create_connection(("127.0.0.1", server.server_port), timeout=WAIT_S) as sock:
            sock.sendall(f"GET {search} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            wait_until(lambda: scanned[0] >= 3, "the search scans")
        at_close = scanned[0]
        time.sleep(1.5)
        after_close = scanned[0] - at_close
        assert after_close <= 0.25 / window_s, f"{after_close} windows scanned after the client closed"
        assert trace_routes.SEARCHES.counts() == (0, 0)
        time.sleep(0.5)
        assert scanned[0] - at_close == after_close, "the scan went on"
    finally:
        server.shutdown()
        server.server_close()
