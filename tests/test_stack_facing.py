"""The older-stack pass of tests/run_all.sh runs the tests that face TensorBoard
(`tests/support/stack_facing.py`): the plugin's own tests and the route tests are among them, the
analysis tests that never reach TensorBoard are not, and run_all.sh asks for that selection."""

from __future__ import annotations

import importlib
import re
import sys
import textwrap
import types

from tests.support import REPO, stack_facing


def _faces(module_name: str, test_name: str = "", fixtures: tuple[str, ...] = ()) -> bool:
    module = importlib.import_module(module_name)
    functions = [getattr(module, test_name)] if test_name else []
    return stack_facing.faces_tensorboard(fixtures, functions, module, dict(sys.modules))


def test_the_plugin_and_routes_face_tensorboard() -> None:
    assert _faces("tests.test_plugin", "test_loader_flag_and_default_cache_dir")
    assert _faces("tests.test_hardening_params", "test_every_route_with_every_hostile_value")
    assert _faces("tests.analysis.test_steps", fixtures=("plugin_client",))


def test_raising_tensorboards_errors_or_using_werkzeug_is_not_facing_it() -> None:
    """The redacted export's test calls the export, which raises TensorBoard's error classes (plain
    Python on either version), and werkzeug is the same package in both passes."""
    assert not _faces(
        "tests.tools.trace.test_redact_traces",
        "test_a_redacted_export_keeps_no_host_user_path_or_address_of_its_source",
    )
    module = types.ModuleType("tests.synthetic_werkzeug_only")
    exec("from werkzeug.test import Client\n\ndef test_a_client():\n    return Client\n", module.__dict__)
    assert not stack_facing.faces_tensorboard((), [module.test_a_client], module, dict(sys.modules))


def test_analysis_and_model_tests_do_not() -> None:
    assert not _faces("tests.analysis.test_steps", "test_profiler_steps_match_the_raw_markers")
    assert not _faces("tests.model.test_arrays")


def test_the_judgement_is_per_test_not_per_module() -> None:
    """test_spill imports TensorBoard for one test that builds the plugin; its other tests stay on
    the model and run once."""
    assert _faces("tests.model.test_spill", "test_the_memory_flag_reaches_the_child")
    assert not _faces("tests.model.test_spill", "test_below_the_budget_nothing_is_spilled")


def test_the_module_functions_a_test_calls_count() -> None:
    """A test whose module helper (or that helper's helper) builds the client faces TensorBoard."""
    module = types.ModuleType("tests.synthetic_stack_facing")
    source = """
        from tensorboard.backend import application

        def make_client():
            return application.TensorBoardWSGI

        def ask():
            return make_client()

        def test_through_two_helpers():
            return ask()

        def test_on_its_own():
            return len("no stack here")
    """
    exec(textwrap.dedent(source), module.__dict__)
    facing = [module.test_through_two_helpers]
    alone = [module.test_on_its_own]
    assert stack_facing.faces_tensorboard((), facing, module, dict(sys.modules))
    assert not stack_facing.faces_tensorboard((), alone, module, dict(sys.modules))


def test_run_all_selects_the_facing_tests_on_the_older_stack() -> None:
    run_all = (REPO / "tests" / "run_all.sh").read_text(encoding="utf-8")
    older = re.search(
        r"^\s*PROFSCOPE_TENSORBOARD_FACING=1 (exec )?\.venv-pb4/bin/python -m pytest .*\btests ",
        run_all,
        re.MULTILINE,
    )
    assert older is not None, "run_all.sh's older-stack pass no longer selects the tests facing TensorBoard"
