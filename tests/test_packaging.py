"""Packaging as a user gets it: the wheel's dependencies, entry points and bundled frontend, and the
README commands that CI runs."""

from __future__ import annotations

import email.parser
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.support import REPO

pytestmark = pytest.mark.stack_independent

RUNTIME_DEPS = {"tensorboard", "protobuf", "numpy", "werkzeug", "fsspec", "msgspec"}


def _readme_commands() -> list[str]:
    quick_start = (
        (REPO / "README.md").read_text(encoding="utf-8").split("## Quick start", 1)[1].split("\n## ", 1)[0]
    )
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", quick_start, re.S)]


def test_readme_has_two_commands_and_ci_runs_the_test_one() -> None:
    install_and_serve, run_tests = _readme_commands()
    assert "pip install ." in install_and_serve
    assert install_and_serve.endswith("tensorboard --logdir demo/logdir")
    assert (REPO / "demo" / "logdir").is_dir()
    ci_commands = [
        line.strip()
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert ci_commands[-1] == run_tests
    assert (REPO / run_tests.split()[-1]).is_file()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """Build the wheel the way `pip install .` does, from a copy of the sources (the checkout stays clean)."""
    src = tmp_path_factory.mktemp("src")
    shutil.copy(REPO / "setup.py", src)
    shutil.copy(REPO / "README.md", src)
    shutil.copytree(
        REPO / "tb_plugin", src / "tb_plugin", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__")
    )
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "--disable-pip-version-check",
            "-w",
            str(out),
            ".",
        ],
        cwd=src,
        check=True,
    )
    (path,) = out.glob("profscope-*.whl")
    return zipfile.ZipFile(path)


def _metadata(wheel: zipfile.ZipFile) -> email.message.Message:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    return email.parser.Parser().parsestr(wheel.read(name).decode())


def test_wheel_dependencies(wheel: zipfile.ZipFile) -> None:
    requires = _metadata(wheel).get_all("Requires-Dist")
    unconditional = {
        re.split(r"[<>=!~ ;\[]", r, maxsplit=1)[0].lower() for r in requires if "extra ==" not in r
    }
    assert unconditional == RUNTIME_DEPS
    tensorflow = [r for r in requires if r.lower().startswith("tensorflow")]
    assert tensorflow and all('extra == "tensorflow"' in r for r in tensorflow)


def test_wheel_entry_points(wheel: zipfile.ZipFile) -> None:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    text = wheel.read(name).decode()
    assert "[tensorboard_plugins]\nprofscope = profscope.plugin:ProfscopeLoader" in text
    assert "[console_scripts]\nprofscope = profscope.cli:main" in text


def test_wheel_ships_the_built_frontend(wheel: zipfile.ZipFile) -> None:
    """`pip install .` needs no Node.js: every committed file of static/ is package data."""
    names = set(wheel.namelist())
    static = REPO / "tb_plugin" / "profscope" / "static"
    shipped = {p.relative_to(REPO / "tb_plugin").as_posix() for p in static.rglob("*") if p.is_file()}
    assert shipped <= names
    assert {"profscope/plugin.py", "profscope/logdir.py", "profscope/formats/detect.py"} <= names


def test_package_imports_no_generated_protobuf_code() -> None:
    """Generated `_pb2` modules break across protobuf majors (CI runs protobuf 4 and 7), so profscope
    decodes protobuf wire data itself and never imports one, its own or TensorBoard's."""
    offenders = [
        f"{path.relative_to(REPO)}: {line.strip()}"
        for path in sorted((REPO / "tb_plugin" / "profscope").rglob("*.py"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.match(r"\s*(from\s+\S+\s+)?import\s+.*_pb2\b", line)
    ]
    assert offenders == []
