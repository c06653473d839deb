"""Routes through TensorBoard's own WSGI app: listing, /runs, the bundle, static files, helpers, loader."""

from __future__ import annotations

import argparse
import importlib.metadata
import pathlib
import time

import msgspec
import pytest
from tensorboard import errors as tb_errors
from tensorboard.plugins import base_plugin
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Request

from profscope import logdir as logdir_lib
from profscope import plugin as plugin_lib
from profscope import runs
from profscope.engine import store
from profscope.engine.ingest import manager as ingest_manager
from profscope.errors import UnreadableProfile
from tests.support import REPO

LAYOUTS_LOGDIR = REPO / "tests" / "data" / "layouts" / "logdir"
PREFIX = "/data/plugin/profscope"
MODULE = b"export async function render() { document.body.textContent = 'profscope'; }\n"


@pytest.fixture
def static_dir(tmp_path: pathlib.Path) -> pathlib.Path:
    """A stand-in for the built frontend: the real bundle is not needed to test the routes."""
    root = tmp_path / "static"
    (root / "chunks").mkdir(parents=True)
    (root / "index.js").write_bytes(MODULE)
    (root / "index.css").write_text("body { margin: 0 }\n")
    (root / "index.js.map").write_text('{"version": 3}')
    (root / "chunks" / "graph.wasm").write_bytes(b"\x00asm\x01\x00\x00\x00")
    (tmp_path / "secret.txt").write_text("SECRET")
    (root / "escape.js").symlink_to(tmp_path / "secret.txt")
    return root


def test_plugins_listing_enables_profscope(plugin_client) -> None:
    _, client = plugin_client(LAYOUTS_LOGDIR)
    response = client.get("/data/plugins_listing")
    assert response.status_code == 200
    entry = response.get_json()["profscope"]
    assert entry["enabled"] is True
    assert entry["tab_name"] == "profscope"
    assert entry["loading_mechanism"] == {"type": "IFRAME", "module_path": f"{PREFIX}/index.js"}


def test_plugins_listing_inactive_for_empty_logdir(plugin_client, tmp_path: pathlib.Path) -> None:
    _, client = plugin_client(tmp_path)
    assert client.get("/data/plugins_listing").get_json()["profscope"]["enabled"] is False


def test_runs_route(plugin_client) -> None:
    plugin, client = plugin_client(LAYOUTS_LOGDIR)
    response = client.get(f"{PREFIX}/runs")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    body = response.get_json()
    assert body == msgspec.to_builtins(runs.answer(logdir_lib.discover(str(LAYOUTS_LOGDIR))))
    assert [r["name"] for r in body["runs"]] == [
        "kineto/cpu_only",
        "kineto/mi250_minitoy",
        "kineto/multi_rank_sampled",
        "kineto/v100_resnet50",
        "xla/pytorch_xla_cpu_recompile",
        "xplane/mi300_jax_conv",
    ]


def test_runs_route_empty_logdir_message(plugin_client, tmp_path: pathlib.Path) -> None:
    _, client = plugin_client(tmp_path)
    body = client.get(f"{PREFIX}/runs").get_json()
    assert body["runs"] == []
    for layout in logdir_lib.RECOGNISED_LAYOUTS:
        assert layout in body["empty_message"]


def test_runs_route_without_logdir(plugin_client) -> None:
    plugin, client = plugin_client("")
    assert plugin.is_active() is False
    body = client.get(f"{PREFIX}/runs").get_json()
    assert body["runs"] == []
    assert "without --logdir" in body["errors"][0]


def test_corrupt_file_reported_and_others_served(plugin_client, layouts_logdir: pathlib.Path) -> None:
    session = layouts_logdir / "xplane" / "mi300_jax_conv" / "plugins" / "profile" / "session1"
    (session / "broken.xplane.pb").write_bytes(b"\xff\xfe garbage")
    _, client = plugin_client(layouts_logdir)
    body = client.get(f"{PREFIX}/runs").get_json()
    hosts = {h["name"]: h for r in body["runs"] for s in r["sessions"] for h in s["hosts"]}
    assert hosts["broken"]["tools"] == []
    assert hosts["broken"]["files"][0]["error"].startswith("does not start like an XPlane")
    assert hosts["tw003"]["tools"] == ["overview", "trace", "roofline", "compare", "memory"]
    assert "error" not in hosts["tw003"]["files"][0]
    assert len(body["runs"]) == 6


def test_index_js(plugin_client, static_dir: pathlib.Path) -> None:
    _, client = plugin_client(LAYOUTS_LOGDIR, static_dir=static_dir)
    response = client.get(f"{PREFIX}/index.js")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/javascript")
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.get_data() == MODULE


def test_index_js_missing_bundle_says_how_to_build(plugin_client, tmp_path: pathlib.Path) -> None:
    _, client = plugin_client(LAYOUTS_LOGDIR, static_dir=tmp_path / "nothing")
    response = client.get(f"{PREFIX}/index.js")
    assert response.status_code == 404
    assert b"npm --prefix frontend run build" in response.get_data()


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("index.js", "text/javascript"),
        ("index.css", "text/css"),
        ("index.js.map", "application/json"),
        ("chunks/graph.wasm", "application/wasm"),
    ],
)
def test_static_files(plugin_client, static_dir: pathlib.Path, name: str, content_type: str) -> None:
    _, client = plugin_client(LAYOUTS_LOGDIR, static_dir=static_dir)
    response = client.get(f"{PREFIX}/static/{name}")
    assert response.status_code == 200
    assert response.headers["Content-Type"].split(";")[0] == content_type
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.get_data() == (static_dir / name).read_bytes()


@pytest.mark.parametrize(
    "tail",
    [
        "../secret.txt",
        "chunks/../../secret.txt",
        "%2e%2e/secret.txt",
        "%2E%2E/secret.txt",
        "..%2fsecret.txt",
        "chunks%2f..%2f..%2fsecret.txt",
        "..%5csecret.txt",
        "..\\secret.txt",
        "/" + "/".join([".."] * 12) + "/etc/passwd",
        "%2fetc%2fpasswd",
        "//etc/passwd",
        "escape.js",
        ".hidden",
        "",
        "chunks/",
        "%252e%252e/secret.txt",
        "index.js%00.png",
    ],
)
def test_static_traversal_rejected(plugin_client, static_dir: pathlib.Path, tail: str) -> None:
    (static_dir / ".hidden").write_text("HIDDEN-CONTENT")
    _, client = plugin_client(LAYOUTS_LOGDIR, static_dir=static_dir)
    response = client.get(f"{PREFIX}/static/{tail}")
    assert response.status_code in (400, 404)
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    body = response.get_data()
    assert b"SECRET" not in body and b"root:" not in body and b"HIDDEN-CONTENT" not in body


def _request(query: str) -> Request:
    return Request(EnvironBuilder(path=f"{PREFIX}/trace/meta", query_string=query).get_environ())


def test_subject_resolves_hosts(plugin_client) -> None:
    plugin, _ = plugin_client(LAYOUTS_LOGDIR)
    subject = plugin.subject(_request("run=kineto/multi_rank_sampled&session=pytorch&host=rank-1,rank-0"))
    assert subject.run.name == "kineto/multi_rank_sampled"
    assert subject.session.name == "pytorch"
    assert [h.name for h in subject.hosts] == ["rank-1", "rank-0"]
    assert subject.hosts[0].trace_file.url == str(
        LAYOUTS_LOGDIR / "kineto/multi_rank_sampled/rank-1.pt.trace.json.gz"
    )


@pytest.mark.parametrize(
    ("query", "error", "message"),
    [
        ("session=s&host=h", tb_errors.InvalidArgumentError, "missing query parameter 'run'"),
        ("run=xla/pytorch_xla_cpu_recompile&host=h", tb_errors.InvalidArgumentError, "'session'"),
        ("run=xla/pytorch_xla_cpu_recompile&session=xla", tb_errors.InvalidArgumentError, "'host'"),
        (
            "run=xla/pytorch_xla_cpu_recompile&session=xla&host=,",
            tb_errors.InvalidArgumentError,
            "names no host",
        ),
        (
            "run=kineto/multi_rank_sampled&session=pytorch&host=rank-0,rank-0",
            tb_errors.InvalidArgumentError,
            "repeats a host",
        ),
        ("run=nope&session=s&host=h", tb_errors.NotFoundError, "run 'nope' is not in logdir"),
        (
            "run=xla/pytorch_xla_cpu_recompile&session=s1&host=h",
            tb_errors.NotFoundError,
            "has no session 's1' (sessions: 'xla')",
        ),
        (
            "run=kineto/multi_rank_sampled&session=pytorch&host=rank-0,rank-7",
            tb_errors.NotFoundError,
            "has no host 'rank-7' (hosts: 'rank-0', 'rank-1')",
        ),
    ],
)
def test_subject_errors(plugin_client, query: str, error: type, message: str) -> None:
    plugin, _ = plugin_client(LAYOUTS_LOGDIR)
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        plugin.subject(_request(query))


def test_public_errors_become_http_answers(plugin_client) -> None:
    """A route that raises (e.g. a missing run) gets TensorBoard's 4xx answer with the message."""
    plugin, client = plugin_client(LAYOUTS_LOGDIR)
    response = client.get(f"{PREFIX}/static/nope.js")
    assert response.status_code == 404
    assert response.get_data(as_text=True) == "Not found: static file 'nope.js'"


def test_unreadable_profile_is_plain_picklable_and_a_422_at_the_route_layer() -> None:
    import pickle

    error = UnreadableProfile("gs://b/run/x.xplane.pb", "truncated after 12 bytes")
    assert not isinstance(error, tb_errors.PublicError)  # readers do not depend on TensorBoard
    assert str(error) == "cannot read profile gs://b/run/x.xplane.pb: truncated after 12 bytes"
    public = plugin_lib.UnprocessableProfileError(error)
    assert isinstance(public, tb_errors.PublicError) and public.http_code == 422
    assert str(public) == "cannot read profile x.xplane.pb: truncated after 12 bytes"  # no server path
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.path, copy.reason, str(copy)) == (error.path, error.reason, str(error))


def test_loader_flag_and_default_cache_dir(monkeypatch, tmp_path: pathlib.Path) -> None:
    parser = argparse.ArgumentParser()
    loader = plugin_lib.ProfscopeLoader()
    loader.define_flags(parser)
    assert parser.parse_args([]).profscope_cache_dir is None
    flags = parser.parse_args(["--profscope_cache_dir", str(tmp_path / "c")])
    plugin = loader.load(base_plugin.TBContext(logdir=str(LAYOUTS_LOGDIR), flags=flags))
    assert isinstance(plugin, plugin_lib.ProfscopePlugin)
    assert plugin.cache_dir == str(tmp_path / "c")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert store.default_cache_root() == str(tmp_path / "xdg" / "profscope")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert store.default_cache_root() == str(tmp_path / "home" / ".cache" / "profscope")
    defaulted = loader.load(base_plugin.TBContext(logdir="", flags=parser.parse_args([])))
    assert defaulted.cache_dir == str(tmp_path / "home" / ".cache" / "profscope")


def test_entry_points_installed() -> None:
    """TensorBoard finds the plugin via `tensorboard_plugins`; the console script is `profscope`."""
    from tensorboard import default

    plugins = [
        ep for ep in importlib.metadata.entry_points(group="tensorboard_plugins") if ep.name == "profscope"
    ]
    assert [ep.value for ep in plugins] == ["profscope.plugin:ProfscopeLoader"]
    assert plugin_lib.ProfscopeLoader in default.get_dynamic_plugins()
    scripts = [
        ep for ep in importlib.metadata.entry_points(group="console_scripts") if ep.name == "profscope"
    ]
    assert [ep.value for ep in scripts] == ["profscope.cli:main"]
    # XProf registers the plugin name "profile"; both must be installable side by side.
    assert plugin_lib.PLUGIN_NAME == "profscope" != "profile"


def _wait_not_202(client, query: str):
    deadline = time.monotonic() + 60
    while True:
        response = client.get(f"{PREFIX}/trace/meta?{query}")
        if response.status_code != 202:
            return response
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_unreadable_profile_in_the_ingest_is_a_422_naming_the_file_as_listed(plugin_client, tmp_path) -> None:
    """The ingest child's reader finds nothing readable: 422 (not 400: the request is fine), the
    file named by its logdir-relative path, without the server's absolute path."""
    logdir = tmp_path / "logdir"
    (logdir / "cut").mkdir(parents=True)
    (logdir / "cut" / "w.pt.trace.json").write_bytes(b'{"schemaVersion": 1, "traceEvents": [{"ph": "X", ')
    _, client = plugin_client(logdir)
    response = _wait_not_202(client, "run=cut&session=pytorch&host=w")
    text = response.get_data(as_text=True)
    assert response.status_code == 422, text
    assert "w.pt.trace.json" in text and "no readable events" in text
    assert str(tmp_path) not in text and "Invalid argument" not in text
    again = client.get(f"{PREFIX}/trace/meta?run=cut&session=pytorch&host=w")  # remembered, not retried
    assert again.status_code == 422


@pytest.mark.parametrize(
    ("failure", "status"),
    [
        (dict(message="ingest of w.pt.trace.json stopped (exit code -9)"), 503),
        (dict(message="cannot cache w.pt.trace.json: the cache directory is full", cache_problem=True), 503),
        (dict(message="no readable events", unreadable=True), 422),
    ],
)
def test_failed_ingest_answers_by_its_cause(plugin_client, monkeypatch, tmp_path, failure, status) -> None:
    """A killed or failed ingest is the server's trouble, not the request's: 503 with Retry-After
    (when the file is tried again); a file its reader cannot read is a 422."""
    logdir = tmp_path / "logdir"
    (logdir / "run").mkdir(parents=True)
    (logdir / "run" / "w.pt.trace.json").write_text('{"traceEvents": []}')

    def fail(self, source, wait_s=0.0):
        raise ingest_manager.IngestError(source.url, **failure)

    monkeypatch.setattr(ingest_manager.IngestManager, "ensure", fail)
    _, client = plugin_client(logdir)
    response = client.get(f"{PREFIX}/trace/meta?run=run&session=pytorch&host=w")
    text = response.get_data(as_text=True)
    assert response.status_code == status, text
    assert failure["message"] in text and "Invalid argument" not in text
    if status == 503:
        assert response.headers["Retry-After"] == str(int(ingest_manager.RETRY_FAILED_AFTER_S))
    else:
        assert "Retry-After" not in response.headers


def test_bad_parameters_stay_400(plugin_client, tmp_path) -> None:
    logdir = tmp_path / "logdir"
    (logdir / "run").mkdir(parents=True)
    (logdir / "run" / "w.pt.trace.json").write_text('{"traceEvents": []}')
    _, client = plugin_client(logdir)
    response = client.get(f"{PREFIX}/trace/meta?run=run&session=pytorch")
    assert response.status_code == 400


def test_ingest_errors_name_the_file_without_server_path_or_errno(tmp_path) -> None:
    manager = ingest_manager.IngestManager(str(tmp_path / "cache"), prewarm=False)
    try:
        gone = ingest_manager.SourceFile(str(tmp_path / "run" / "gone.pt.trace.json"), "chrome_trace")
        with pytest.raises(ingest_manager.IngestError) as caught:
            manager.ensure(gone)
    finally:
        manager.close()
    assert str(caught.value) == "cannot stat gone.pt.trace.json: No such file or directory"
