"""Shared fixtures: the real-layout logdir, an in-memory fsspec tree, and the plugin behind
TensorBoard's own WSGI app (so routes are tested with TensorBoard's routing, error handling and
security checks, exactly as a browser would reach them)."""

from __future__ import annotations

import argparse
import pathlib
import shutil
from collections.abc import Callable, Iterator

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from profscope.plugin import ProfscopePlugin

REPO = pathlib.Path(__file__).resolve().parent.parent
LAYOUTS_LOGDIR = REPO / "tests" / "data" / "layouts" / "logdir"


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


PluginFactory = Callable[..., tuple[ProfscopePlugin, Client]]


@pytest.fixture
def plugin_client(tmp_path: pathlib.Path) -> PluginFactory:
    """Factory: `plugin_client(logdir, static_dir=None, **flags)` → (plugin, werkzeug Client over
    `application.TensorBoardWSGI([plugin])`). Flags default to a cache dir inside tmp_path."""

    def make(
        logdir: str | pathlib.Path, static_dir: str | pathlib.Path | None = None, **flags: object
    ) -> tuple[ProfscopePlugin, Client]:
        flags.setdefault("profscope_cache_dir", str(tmp_path / "cache"))
        context = base_plugin.TBContext(logdir=str(logdir), flags=argparse.Namespace(**flags))
        plugin = ProfscopePlugin(context, static_dir=static_dir)
        return plugin, Client(application.TensorBoardWSGI([plugin]))

    return make
