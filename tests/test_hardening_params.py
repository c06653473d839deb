"""Every route of the merged route table, probed with hostile query values: never a 5xx, never a
traceback, never a giant echo.

The parameters of each route are not listed here: they are found by serving each route once with a
recording `Params` (every read is noted with its kind, and an absent parameter gets a harmless value
so the handler goes on to read the next one). A tool that adds a route or a parameter is covered
without a change to this file. Runs on a logdir of real data: the Kineto, XPlane and multi-rank
traces of tests/data/trace and the PyTorch/XLA logs of tests/data/layouts.
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from profscope import plugin as plugin_lib
from profscope import tools
from profscope.params import Params
from tests.support import DATA_DIR

DATA = DATA_DIR
BASE = "/data/plugin/profscope"
SUBJECT = ("run", "session", "host")

# A value every handler accepts for a parameter it may require, by the kind it is read as; the
# parameters not under test get these, or stay absent when their kind is optional.
HARMLESS = {"text": "x", "required": "x", "names": "x", "int": "0"}

# What a careful attacker and a clumsy user send; each goes into every parameter of every route.
HOSTILE: tuple[str, ...] = (
    "9" * 5000,
    "9" * 19,
    str(2**63),
    str(2**64),
    "-1",
    "-0",
    "+1",
    "1.5",
    "1e308",
    "-1e308",
    "1e999999",
    "-1e999999",
    "4.7e15",
    "1e-320",
    "nan",
    "inf",
    "-Infinity",
    "0x1f",
    "1_000",
    " 7",
    "７",  # fullwidth digit: str.isdigit() says yes
    "٣",  # Arabic-Indic digit
    "\x00",
    "a\x00b",
    "\n\r\t",
    "a" * 100_000,
    "1," * 200_000,
    "," * 50,
    "0," * 5 + "-1",
    "../../../../etc/passwd",
    "/etc/passwd",
    "..",
    ".",
    "%2e%2e%2f",
    "💥" * 1000,
    "' OR 1=1 --",
    "<script>alert(1)</script>",
    "%s%n%x",
    "{}",
    "[]",
    "null",
    "true",
)


class RecordingParams(Params):
    """A `Params` that notes every parameter a handler reads (with the method, i.e. its kind) and
    answers an absent one with a harmless value, so that the handler reads the next one too."""

    recorded: list[dict[str, str]] = []

    def __init__(self, args: Any, *rest: Any) -> None:
        super().__init__(args, *rest)
        self.asked: dict[str, str] = {}
        RecordingParams.recorded.append(self.asked)

    def _read(self, kind: str, name: str, *rest: Any) -> Any:
        self.asked.setdefault(name, kind)
        source = self if self._args.get(name) or kind not in HARMLESS else Params({name: HARMLESS[kind]})
        return getattr(Params, kind)(source, name, *rest)

    def text(self, name: str, *rest: Any) -> Any:
        return self._read("text", name, *rest)

    def required(self, name: str) -> Any:
        return self._read("required", name)

    def names(self, name: str) -> Any:
        return self._read("names", name)

    def int(self, name: str, *rest: Any) -> Any:
        return self._read("int", name, *rest)

    def optional_int(self, name: str) -> Any:
        return self._read("optional_int", name)

    def float(self, name: str, *rest: Any) -> Any:
        return self._read("float", name, *rest)

    def int_list(self, name: str) -> Any:
        return self._read("int_list", name)


def _logdir(root: pathlib.Path) -> pathlib.Path:
    logdir = root / "logdir"
    shutil.copytree(DATA / "trace" / "logdir", logdir)
    shutil.copytree(DATA / "layouts" / "logdir" / "xla", logdir / "xla")
    return logdir


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Client, list[dict[str, Any]]]]:
    """A TensorBoard WSGI app over the real-data logdir, every trace already ingested; and the
    subjects (run, session, host and the tools that apply) that /runs lists."""
    root = tmp_path_factory.mktemp("hostile")
    flags = argparse.Namespace(profscope_cache_dir=str(root / "cache"))
    plugin = plugin_lib.ProfscopePlugin(base_plugin.TBContext(logdir=str(_logdir(root)), flags=flags))
    client = Client(application.TensorBoardWSGI([plugin]))
    subjects = [
        {"run": run["name"], "session": session["name"], "host": host["name"], "tools": host["tools"]}
        for run in client.get(f"{BASE}/runs").get_json()["runs"]
        for session in run["sessions"]
        for host in session["hosts"]
    ]
    for subject in subjects:
        if "trace" in subject["tools"]:
            _ready(client, subject)
    yield client, subjects
    plugin.trace_service().manager.close()


def _query(subject: dict[str, Any], **params: str) -> dict[str, str]:
    return {**{k: subject[k] for k in SUBJECT}, **params}


def _second_subject(parameters: dict[str, str], subject: dict[str, Any]) -> dict[str, str]:
    """Parameters naming a second subject (`base_run`, `base_session`, `base_host`): the same one."""
    return {
        name: subject[key]
        for name in parameters
        for key in SUBJECT
        if name != key and name.endswith(f"_{key}") and name.count("_") == 1
    }


def _ready(client: Client, subject: dict[str, Any]) -> None:
    deadline = time.monotonic() + 120
    while True:
        res = client.get(f"{BASE}/trace/meta", query_string=_query(subject))
        if res.status_code != 202 and not (res.status_code == 200 and res.get_json()["pending_hosts"]):
            return
        assert time.monotonic() < deadline, subject
        time.sleep(0.05)


def _route_parameters(
    client: Client, monkeypatch: pytest.MonkeyPatch, subject: dict[str, Any], path: str
) -> dict[str, str]:
    """Serve `path` once with a recording Params: the parameters it reads, with their kinds."""
    monkeypatch.setattr(plugin_lib, "Params", RecordingParams)
    RecordingParams.recorded.clear()
    try:
        client.get(f"{BASE}{path}", query_string=_query(subject))
    finally:
        monkeypatch.setattr(plugin_lib, "Params", Params)
    asked: dict[str, str] = {}
    for one in RecordingParams.recorded:
        asked.update(one)
    return asked


def _harmless(parameters: dict[str, str]) -> dict[str, str]:
    return {
        name: HARMLESS[kind] for name, kind in parameters.items() if name not in SUBJECT and kind in HARMLESS
    }


def _check(response: Any, what: str) -> None:
    body = response.get_data()
    assert response.status_code < 500, (what, response.status_code, body[:500])
    assert b"Traceback" not in body and b'File "' not in body, (what, body[:500])
    if response.status_code >= 400:
        assert len(body) < 20_000, (what, len(body))


def _subject_for(tool_id: str, subjects: list[dict[str, Any]]) -> dict[str, Any]:
    return next(s for s in subjects if tool_id in s["tools"])


def test_every_route_reads_its_parameters_through_params(served, monkeypatch) -> None:
    """The discovery the hostile walk relies on: every route is found, with the parameters the
    docs name for it (a check that the recording sees reads, not a list the walk uses)."""
    client, subjects = served
    found = {}
    for path, (tool, _) in tools.routes().items():
        subject = _subject_for(tool.id, subjects)
        found[path] = _route_parameters(client, monkeypatch, subject, path)
        # Optional strings may be choices ("x" is none of them) or required in effect (a search
        # query): the route answers 200 with them absent, with them "x", or with one of them absent. An optional
        # integer may stand for required ones (`hlo?event=` instead of `program_id` and `op`).
        harmless = _harmless(found[path])
        without_text = {k: v for k, v in harmless.items() if found[path][k] != "text"}
        optional_ints = {k: "0" for k, kind in found[path].items() if kind == "optional_int"}
        same = _second_subject(found[path], subject)
        # A text parameter may also be a filter with a syntax of its own ("x" is no `key:value`):
        # the route answers 200 with every other text parameter "x" and that one absent.
        one_text_absent = [
            {**{k: v for k, v in harmless.items() if k != name}, **same}
            for name, kind in found[path].items()
            if kind == "text" and name in harmless
        ]
        queries = (
            {**without_text, **same},
            {**harmless, **same},
            {**without_text, **optional_ints, **same},
            *one_text_absent,
        )
        answers = [client.get(f"{BASE}{path}", query_string=_query(subject, **q)) for q in queries]
        assert 200 in [a.status_code for a in answers], (
            path,
            [a.get_data(as_text=True)[:300] for a in answers],
        )
    assert set(SUBJECT) <= set(found["/trace/meta"])
    assert {"level": "int", "index": "int"}.items() <= found["/trace/tile"].items()
    assert {"start": "float", "end": "float", "tracks": "int_list", "ids": "int_list"}.items() <= found[
        "/trace/summary"
    ].items()
    assert {"q", "limit", "offset"} <= set(found["/trace/search"])
    assert {"index", "ordinal"} <= set(found["/xla/graph"])
    assert {"a", "b", "ordinal"} <= set(found["/xla/diff"])


def test_every_route_with_every_hostile_value(served, monkeypatch) -> None:
    """Each hostile value in each parameter of each route (the others harmless), then in all of
    them at once: 4xx with a message or 200, nothing else."""
    client, subjects = served
    checked = 0
    for path, (tool, _) in tools.routes().items():
        subject = _subject_for(tool.id, subjects)
        parameters = _route_parameters(client, monkeypatch, subject, path)
        harmless = _harmless(parameters)
        assert set(SUBJECT) <= set(parameters), path
        for value in HOSTILE:
            for name in parameters:
                query = _query(subject, **harmless)
                query[name] = value
                _check(client.get(f"{BASE}{path}", query_string=query), f"{path} {name}={value[:30]!r}")
                checked += 1
            everything = dict.fromkeys(parameters, value)
            _check(client.get(f"{BASE}{path}", query_string=everything), f"{path} all={value[:30]!r}")
    assert checked > 1000


def test_every_route_on_every_host(served, monkeypatch) -> None:
    """Routes asked about hosts their tool does not apply to (an XLA route on a trace, a trace
    route on XLA logs): a 4xx that says so, never a 5xx."""
    client, subjects = served
    for path, (tool, _) in tools.routes().items():
        parameters = _route_parameters(client, monkeypatch, _subject_for(tool.id, subjects), path)
        harmless = _harmless(parameters)
        for subject in subjects:
            response = client.get(f"{BASE}{path}", query_string=_query(subject, **harmless))
            _check(response, f"{path} on {subject['run']}/{subject['host']}")
            if tool.id not in subject["tools"]:
                assert 400 <= response.status_code < 500, (path, subject)


@pytest.mark.parametrize("path", ["/runs", "/index.js", "/static/index.js"])
def test_shared_routes_ignore_or_refuse_hostile_parameters(served, path: str) -> None:
    client, _ = served
    for value in HOSTILE:
        query = {"run": value, "session": value, "host": value, value[:200]: value}
        _check(client.get(f"{BASE}{path}", query_string=query), f"{path} {value[:30]!r}")


@pytest.mark.parametrize(
    "name",
    [
        "a" * 5000,  # ENAMETOOLONG from the filesystem until lengths were checked first
        "a" * 256,
        "/".join(["a"] * 600),
        "a" * 255 + "/" + "b" * 255,
        "index.js" + "/" * 3000,
        "💥" * 300,
        "%2e" * 2000,
        ".." + "/.." * 2000,
        "index.js%00",
    ],
)
def test_static_names_of_any_length_are_refused_not_500(served, name: str) -> None:
    client, _ = served
    response = client.get(f"{BASE}/static/{name}")
    assert response.status_code in (400, 404), response.status_code
    _check(response, name[:30])


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"end": "1e308"}, "'end' must be within"),
        ({"start": "-1e308"}, "'start' must be within"),
        ({"start": "4.7e15"}, "'start' must be within"),
        ({"end": "1e999999"}, "'end' must be finite"),
        ({"start": "nan"}, "'start' must be finite"),
        ({"start": "0x10"}, "'start' must be a number"),
        ({"start": "1_000"}, "'start' must be a number"),
        ({"tracks": "1," * 200_000}, "'tracks' lists more than 100000 items"),
        ({"ids": "9" * 5000}, "'ids' must be comma-separated non-negative integers"),
    ],
)
def test_summary_numbers_and_lists_out_of_range_are_400(served, params, message) -> None:
    """`trace/summary?end=1e308` answered 500 (OverflowError turning ns into int64 ps)."""
    client, subjects = served
    response = client.get(
        f"{BASE}/trace/summary", query_string=_query(_subject_for("trace", subjects), **params)
    )
    assert response.status_code == 400
    assert message in response.get_data(as_text=True)


@pytest.mark.parametrize(
    ("route", "params", "message"),
    [
        (
            "/xla/report",
            {"ordinal": "9" * 5000},
            "'ordinal' must be a non-negative integer of at most 18 digits",
        ),
        ("/xla/graph", {"index": "9" * 5000}, "'index' must be a non-negative integer of at most 18 digits"),
        ("/xla/graph", {"index": "７"}, "'index' must be a non-negative integer"),
        ("/trace/search", {"q": "a" * 5000}, "'q' is 5000 characters long; at most 4096"),
        ("/trace/search", {"q": "a\x00"}, "'q' holds a control character"),
    ],
)
def test_long_integers_and_strings_are_400_with_a_short_message(served, route, params, message) -> None:
    client, subjects = served
    tool = tools.routes()[route][0].id
    response = client.get(f"{BASE}{route}", query_string=_query(_subject_for(tool, subjects), **params))
    assert response.status_code == 400
    text = response.get_data(as_text=True)
    assert message in text and len(text) < 300, text


def test_subject_names_are_checked_before_they_are_looked_up(served) -> None:
    client, subjects = served
    subject = _subject_for("trace", subjects)
    for name, value, message in [
        ("run", "r" * 5000, "'run' is 5000 characters long"),
        ("session", "s\x01", "'session' holds a control character"),
        ("host", ",".join(["h"] * 100_001), "'host' lists more than 100000 items"),
        ("host", "h" * 4097, "'host' is 4097 characters long"),
    ]:
        response = client.get(f"{BASE}/trace/meta", query_string={**_query(subject), name: value})
        assert response.status_code == 400, name
        assert message in response.get_data(as_text=True)
