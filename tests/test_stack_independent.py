"""The test modules marked `stack_independent` load neither TensorBoard nor protobuf.

The second pass of tests/run_all.sh runs the tests again on TensorBoard 2.20 with protobuf 4.25, to
catch what differs between those stacks. A module that loads neither, nor makes any reader load them,
runs the same code on the same libraries in both passes, so that pass leaves it out (`-m "not
stack_independent"`): the readers', the model's and the engine's tests, about half of a pass. Two
checks keep the mark honest: this test imports every marked module and every reader in a fresh
interpreter and looks at what got loaded; and tests/run_all.sh runs the marked tests in a pytest of
their own with PROFSCOPE_STACK_FREE=1, where tests/conftest.py fails the run if any test, fixture or
collection imports either while they run."""

from __future__ import annotations

import ast
import os
import pathlib
import re
import subprocess
import sys

from profscope.formats import registry
from tests.support import REPO

TESTS = REPO / "tests"
STACK_MODULES = ("tensorboard", "google.protobuf")


def _marked(path: pathlib.Path) -> bool:
    return any(
        isinstance(node, ast.Assign)
        and any(getattr(t, "id", None) == "pytestmark" for t in node.targets)
        and "stack_independent" in ast.unparse(node.value)
        for node in ast.parse(path.read_text(encoding="utf-8")).body
    )


def test_marked_modules_and_every_reader_load_neither_tensorboard_nor_protobuf() -> None:
    marked = sorted(
        ".".join(p.relative_to(REPO).with_suffix("").parts) for p in TESTS.rglob("test_*.py") if _marked(p)
    )
    assert (
        "tests.formats.test_fuzz_readers" in marked and "tests.formats.chrome.test_chrome_json" in marked
    ), marked
    readers = sorted({fmt.reader for fmt in registry.BY_ID.values()})
    script = "\n".join(
        [
            "import importlib, sys",
            f"sys.path.insert(0, {str(REPO)!r})",
            f"for name in {marked!r}: importlib.import_module(name)",
            "from profscope.formats import registry",
            f"for spec in {readers!r}: registry.import_reader(spec)",
            f"print(sorted(m for m in {STACK_MODULES!r} if m in sys.modules))",
        ]
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"{marked} with the readers {readers} load {done.stdout.strip()}"


def test_run_all_finds_every_marked_module() -> None:
    """tests/run_all.sh collects the marked modules by a line pattern (collecting every module would
    import TensorBoard first); a mark written another way would leave its module out of that run."""
    run_all = (TESTS / "run_all.sh").read_text(encoding="utf-8")
    pattern = re.search(r"grep -rlE '([^']+)'", run_all)
    assert pattern is not None, "run_all.sh no longer finds the marked modules with grep -rlE"
    line = re.compile(pattern.group(1), re.MULTILINE)
    marked = {p for p in TESTS.rglob("test_*.py") if _marked(p)}
    found = {p for p in TESTS.rglob("test_*.py") if line.search(p.read_text(encoding="utf-8"))}
    assert marked and found == marked, sorted(str(p) for p in marked ^ found)


def test_the_watch_fails_a_marked_test_that_loads_tensorboard(tmp_path: pathlib.Path) -> None:
    """The run-time check itself, as run_all.sh runs it (PROFSCOPE_STACK_FREE=1, pytest-xdist's
    workers): a marked test that imports TensorBoard fails the run and names that test."""
    (tmp_path / "test_loads_stack.py").write_text(
        "import pytest\n"
        "pytestmark = pytest.mark.stack_independent\n"
        "def test_clean():\n    pass\n"
        "def test_loads():\n    import tensorboard  # noqa: F401\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider", "-n", "1",
         "-c", "/dev/null", "--rootdir", str(tmp_path), str(tmp_path / "test_loads_stack.py")],
        capture_output=True, text=True, cwd=REPO, check=False, env={**os.environ, "PROFSCOPE_STACK_FREE": "1"},
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert "tensorboard was imported by" in done.stdout and "test_loads" in done.stdout, done.stdout[-3000:]
