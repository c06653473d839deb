"""Shared fixtures: the real-layout logdir, an in-memory fsspec tree, the plugin behind
TensorBoard's own WSGI app (so routes are tested with TensorBoard's routing, error handling and
security checks, exactly as a browser would reach them), and a real S3 API server on loopback."""

from __future__ import annotations

import argparse
import importlib.abc
import os
import pathlib
import shutil
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from tests.support import REPO, stack_facing

if TYPE_CHECKING:
    from werkzeug.test import Client

    from profscope.plugin import ProfscopePlugin

LAYOUTS_LOGDIR = REPO / "tests" / "data" / "layouts" / "logdir"
TRACE_LOGDIR = REPO / "tests" / "data" / "trace" / "logdir"


@pytest.fixture(scope="session")
def repo_root() -> pathlib.Path:
    return REPO


@pytest.fixture
def layouts_logdir(tmp_path: pathlib.Path) -> pathlib.Path:
    """A private copy of `tests/data/layouts/logdir` (one run per real layout) that a test may modify."""
    target = tmp_path / "logdir"
    shutil.copytree(LAYOUTS_LOGDIR, target)
    return target


@pytest.fixture
def bert_logdir(tmp_path: pathlib.Path) -> pathlib.Path:
    """A logdir holding only the real H100 BERT Kineto trace, as run `bert`, session `pytorch`."""
    target = tmp_path / "logdir"
    (target / "bert").mkdir(parents=True)
    shutil.copy(TRACE_LOGDIR / "bert" / "bert_small.pt.trace.json.gz", target / "bert")
    return target


@pytest.fixture
def memory_fs() -> Iterator[MemoryFileSystem]:
    """fsspec's process-wide `memory://` filesystem, emptied before and after the test."""
    fs = fsspec.filesystem("memory")
    fs.store.clear()
    fs.pseudo_dirs.clear()
    fs.pseudo_dirs.append("")
    yield fs
    fs.store.clear()
    fs.pseudo_dirs.clear()
    fs.pseudo_dirs.append("")


def _copy_to_fs(source: pathlib.Path, fs: fsspec.AbstractFileSystem, root: str) -> None:
    for path in sorted(source.rglob("*")):
        if path.is_file():
            fs.pipe_file(f"{root}/{path.relative_to(source).as_posix()}", path.read_bytes())


@pytest.fixture
def copy_to_fs() -> Callable[[pathlib.Path, fsspec.AbstractFileSystem, str], None]:
    """`copy_to_fs(local_folder, fs, root)` copies a local tree into any fsspec filesystem."""
    return _copy_to_fs


PluginFactory = Callable[..., "tuple[ProfscopePlugin, Client]"]


@pytest.fixture
def plugin_client(tmp_path: pathlib.Path) -> PluginFactory:
    """Factory: `plugin_client(logdir, static_dir=None, **flags)` → (plugin, werkzeug Client over
    `application.TensorBoardWSGI([plugin])`). Flags default to a cache dir inside tmp_path."""

    def make(
        logdir: str | pathlib.Path, static_dir: str | pathlib.Path | None = None, **flags: object
    ) -> tuple[ProfscopePlugin, Client]:
        from tensorboard.backend import application
        from tensorboard.plugins import base_plugin
        from werkzeug.test import Client

        from profscope.plugin import ProfscopePlugin

        flags.setdefault("profscope_cache_dir", str(tmp_path / "cache"))
        context = base_plugin.TBContext(logdir=str(logdir), flags=argparse.Namespace(**flags))
        plugin = ProfscopePlugin(context, static_dir=static_dir)
        return plugin, Client(application.TensorBoardWSGI([plugin]))

    return make


class S3Server:
    """A real S3 API server (moto's, as `moto_server` runs it) on a free loopback port, with a log
    of every request it answered: method, path, Range header and body bytes sent. `slow_keys`
    delays each GET of those object keys (so a test can watch an ingest that is still reading)."""

    def __init__(self) -> None:
        from moto.server import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import WSGIRequestHandler, make_server

        class QuietHandler(WSGIRequestHandler):
            def log_request(self, *args: object, **kwargs: object) -> None:
                pass

        self.requests: list[dict[str, object]] = []
        self.slow_keys: dict[str, float] = {}
        self._app = DomainDispatcherApplication(create_backend_app)
        self._server = make_server(
            "127.0.0.1", 0, self._counting, threaded=True, request_handler=QuietHandler
        )
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="moto-s3", daemon=True)
        self._thread.start()

    def _counting(self, environ: dict[str, object], start_response: Callable[..., object]) -> Iterator[bytes]:
        record: dict[str, object] = {
            "method": environ["REQUEST_METHOD"],
            "path": environ.get("PATH_INFO", ""),
            "range": environ.get("HTTP_RANGE"),
            "bytes": 0,
        }
        self.requests.append(record)  # at once: a test's mark after a call it made is past it
        delay = self.slow_keys.get(str(record["path"]))
        if delay and record["method"] == "GET":
            time.sleep(delay)
        for chunk in self._app(environ, start_response):
            record["bytes"] = int(record["bytes"]) + len(chunk)  # type: ignore[call-overload]
            yield chunk

    def client(self, service: str = "s3") -> object:
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.url,
            aws_access_key_id="admin",
            aws_secret_access_key="admin",
            region_name="us-east-1",
        )

    def require_auth(self, required: bool) -> None:
        """From now on, check every request's credentials against the server's IAM users (or not)."""
        import urllib.request

        count = b"0" if required else b"inf"
        request = urllib.request.Request(
            f"{self.url}/moto-api/reset-auth",
            data=count,
            headers={"Content-Type": "application/octet-stream"},
        )
        urllib.request.urlopen(request).read()

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(10)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """One S3 API server on 127.0.0.1 for the test session, stopped at the end (needs the test
    extras: moto[server], s3fs, boto3)."""
    pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
    pytest.importorskip("boto3")
    server = S3Server()
    yield server
    server.stop()


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    """Credentials and endpoint of `s3_server` in the environment (`AWS_ENDPOINT_URL`, read by
    botocore here and in the ingest children), fresh s3fs instances, no other AWS configuration."""
    import s3fs

    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "admin")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "admin")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    s3fs.S3FileSystem.clear_instance_cache()
    yield s3_server
    s3_server.require_auth(False)
    s3_server.slow_keys.clear()
    s3fs.S3FileSystem.clear_instance_cache()


STACK_MODULES = ("tensorboard", "google.protobuf")


class _StackImportWatch(importlib.abc.MetaPathFinder):
    """Notes the test that first imports TensorBoard or protobuf (or "collection"), finding nothing
    itself, so the import proceeds as usual."""

    def __init__(self) -> None:
        self.first: dict[str, str] = {}

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        for name in STACK_MODULES:
            if (fullname == name or fullname.startswith(name + ".")) and name not in self.first:
                self.first[name] = os.environ.get("PYTEST_CURRENT_TEST", "collection or a fixture")


def pytest_configure(config: pytest.Config) -> None:
    """With PROFSCOPE_STACK_FREE=1 (tests/run_all.sh's run of the tests marked stack_independent),
    watch for TensorBoard or protobuf being imported: the second pass leaves those tests out on the
    promise that they never load either, and this makes the promise checked at run time."""
    if os.environ.get("PROFSCOPE_STACK_FREE") != "1":
        return
    watch = _StackImportWatch()
    for name in STACK_MODULES:
        if name in sys.modules:
            watch.first[name] = "before the tests started"
    sys.meta_path.insert(0, watch)
    config.stash[_WATCH_KEY] = watch


_WATCH_KEY = pytest.StashKey[_StackImportWatch]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With PROFSCOPE_TENSORBOARD_FACING=1 (tests/run_all.sh's older-stack pass), only the tests that
    face TensorBoard run (`tests/support/stack_facing.py` says which and why); the rest are deselected."""
    if os.environ.get("PROFSCOPE_TENSORBOARD_FACING") != "1":
        return
    loaded = dict(sys.modules)
    kept, dropped = [], []
    for item in items:
        module = getattr(item, "module", None)
        facing = module is not None and stack_facing.faces_tensorboard(
            item.fixturenames, _own_code(item, module), module, loaded
        )
        (kept if facing else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _own_code(item: pytest.Item, module: types.ModuleType) -> list[Callable[..., object]]:
    """The test function and the fixtures it uses that are defined in its own module."""
    test_function = getattr(item, "function", None)
    functions: list[Callable[..., object]] = [test_function] if test_function is not None else []
    fixture_info = getattr(item, "_fixtureinfo", None)
    for definitions in fixture_info.name2fixturedefs.values() if fixture_info else ():
        for definition in definitions:
            if getattr(definition.func, "__module__", None) == module.__name__:
                functions.append(definition.func)
    return functions


@pytest.fixture(autouse=True)
def _stack_free_check(request: pytest.FixtureRequest) -> Iterator[None]:
    """Under the watch, fail the test after which TensorBoard or protobuf is found loaded (by it, or
    by collection or a fixture before it): a failed test reaches the run's result whether the tests
    run in this process or in pytest-xdist's workers (a worker's own exit status does not)."""
    yield
    watch = request.config.stash.get(_WATCH_KEY, None)
    if watch is None or not watch.first or request.config.stash.get(_REPORTED_KEY, False):
        return
    request.config.stash[_REPORTED_KEY] = True
    lines = [f"{name} was imported by {where}" for name, where in watch.first.items()]
    pytest.fail(
        "tests marked stack_independent must load neither TensorBoard nor protobuf:\n  " + "\n  ".join(lines)
    )


_REPORTED_KEY = pytest.StashKey[bool]()
