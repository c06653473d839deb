"""The older-stack pass of tests/run_all.sh runs the tests that face TensorBoard
(`tests/support/stack_facing.py`): the plugin's own tests and the route tests are among them, the
analysis tests that never reach TensorBoard are not, and run_all.sh asks for that selection."""

from __future__ import annotations

import importlib
import re
import sys

from tests.support import REPO, stack_facing


def _faces(module_name: str, fixtures: tuple[str, ...] = ()) -> bool:
    module = importlib.import_module(module_name)
    return stack_facing.faces_tensorboard(fixtures, module, dict(sys.modules))


def test_the_plugin_and_routes_face_tensorboard() -> None:
    assert _faces("tests.test_plugin")
    assert _faces("tests.tools.trace.test_redact_traces")  # the export raises TensorBoard's errors
    assert _faces("tests.analysis.test_steps", ("plugin_client",))


def test_analysis_and_model_tests_do_not() -> None:
    assert not _faces("tests.analysis.test_steps")
    assert not _faces("tests.model.test_arrays")


def test_run_all_selects_the_facing_tests_on_the_older_stack() -> None:
    run_all = (REPO / "tests" / "run_all.sh").read_text(encoding="utf-8")
    older = re.search(
        r"^PROFSCOPE_TENSORBOARD_FACING=1 \.venv-pb4/bin/python -m pytest (\"\$\{PARALLEL\[@\]\}\" )?tests ",
        run_all,
        re.MULTILINE,
    )
    assert older is not None, "run_all.sh's older-stack pass no longer selects the tests facing TensorBoard"
