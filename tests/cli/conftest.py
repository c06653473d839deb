"""One logdir of real profiles for the CLI tests, read once per session into one cache (shared, as
TensorBoard's is, by the commands and the plugin the tests check them against)."""

from __future__ import annotations

import argparse
import pathlib
import shutil

import pytest
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from profscope.plugin import ProfscopePlugin
from tests.support import DATA_DIR

# run → the profile it holds (tests/data/jobs/FACTS.md, tests/data/kineto/PROVENANCE.md).
RUNS = {
    "input_bound": DATA_DIR / "jobs/torch_input_bound_zh/worker0.1796612206510119793.pt.trace.json.gz",
    "prefetched": DATA_DIR / "jobs/torch_input_prefetched_zh/worker0.1796612209866544264.pt.trace.json.gz",
    "bert_h100": DATA_DIR / "kineto/bert_small.pt.trace.json.gz",
}
XLA_JOB = DATA_DIR / "jobs/xla_dynamic_shapes"


@pytest.fixture(scope="session")
def cli_logdir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    root = tmp_path_factory.mktemp("cli") / "logdir"
    for run, source in RUNS.items():
        (root / run).mkdir(parents=True)
        shutil.copy(source, root / run / source.name)
    shutil.copytree(XLA_JOB, root / "xla_job")
    return root


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return tmp_path_factory.mktemp("cli_cache")


@pytest.fixture(scope="session")
def tab(cli_logdir: pathlib.Path, cache_dir: pathlib.Path) -> Client:
    """The plugin as TensorBoard serves it over the same logdir and cache: what the tab gets."""
    flags = argparse.Namespace(profscope_cache_dir=str(cache_dir))
    plugin = ProfscopePlugin(base_plugin.TBContext(logdir=str(cli_logdir), flags=flags))
    return Client(application.TensorBoardWSGI([plugin]))
