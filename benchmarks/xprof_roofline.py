"""XProf's own roofline_model answer for one XPlane: the anchor profscope's roofline is checked against.

Usage (run it with the Python of a venv that has `pip install xprof`; nothing of profscope is needed):
    python -m venv XPROF_VENV && XPROF_VENV/bin/pip install xprof   # once, any folder
    XPROF_VENV/bin/python benchmarks/xprof_roofline.py FILE.xplane.pb -o out.json
        [--raw] [--native-log]

The answers for the XPlanes of tests/data/xplane are saved in tests/data/xprof/ (its README.md says
with which xprof and how); the tests and `benchmarks/roofline_vs_xprof.py` read them from there.

XProf writes caches (`ALL_HOSTS.op_stats_v2.pb`, HLO protos) beside the XPlane it reads, so the file is
copied into a fresh temporary logdir (`<tmp>/plugins/profile/run/`) that is deleted afterwards; the
input is never touched. The tool is called the way XProf's TensorBoard plugin calls it for
`/data/plugin/profile/data?tag=roofline_model`: through the plugin's native converter with only
`use_saved_result=False` (the tool takes no other option).

The answer is XProf's DataTable JSON, a list of two tables: the roofline table (`cols`, `rows`, and
`p` with the device peaks and ridge points) and a diagnostics table (severity, message). The
roofline table always holds every row twice, once with `include_infeed_outfeed` true and once false;
XProf's UI filters on that column, there is no request option for it. `-o` writes the answer as XProf
gave it; stdout gets a summary (peaks, the program-level rows, op-row count, diagnostics), or with
`--raw` the answer itself. The converter's own log lines go to a file in the temporary logdir and are
shown only on failure or with `--native-log`.

The helpers `table_records`, `program_rows` and `summarize` need only the standard library, so a
comparison against profscope's numbers can import them from any venv and read a saved answer.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import shutil
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

TOOL = "roofline_model"
# Program-level columns worth comparing; the rest of a row is time bookkeeping or UI text.
PROGRAM_FIELDS = (
    "step",
    "include_infeed_outfeed",
    "total_time",
    "total_time_per_core",
    "measured_flop_rate",
    "model_flop_rate",
    "measured_memory_bw",
    "hbm_bw",
    "vmem_read_bw",
    "vmem_write_bw",
    "cmem_read_bw",
    "cmem_write_bw",
    "operational_intensity",
    "hbm_operational_intensity",
    "bottleneck_operational_intensity",
    "bound_by",
    "optimal_flop_rate",
    "roofline_efficiency",
    "compute_efficiency",
    "max_mem_bw_utilization",
)


# XProf's saved answers (`<name>.roofline.json`) for the XPlanes of tests/data/xplane.
ANCHORS = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "xprof"
PYTHON_ENV = "XPROF_PYTHON"


def xprof_python(given: str | None = None) -> str:
    """The Python that runs XProf: `given` (a command-line flag), else $XPROF_PYTHON; exits saying
    how to get one when neither is set."""
    python = given or os.environ.get(PYTHON_ENV)
    if not python:
        raise SystemExit(
            f"no Python with XProf: pass --xprof-python or set ${PYTHON_ENV} to the python of a venv "
            "that has `pip install xprof` (python -m venv DIR && DIR/bin/pip install xprof)"
        )
    return python


class XprofRooflineError(RuntimeError):
    """XProf refused the file; the message is XProf's own, plus its native log when there is one."""


@contextlib.contextmanager
def _native_stderr_to(path: pathlib.Path) -> Iterator[None]:
    """Send file descriptor 2 (where XProf's C++ logging writes) to `path` for the duration."""
    sys.stderr.flush()
    saved = os.dup(2)
    with path.open("wb") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def run_xprof_roofline(xplane: pathlib.Path, show_native_log: bool = False) -> str:
    """XProf's roofline_model answer (JSON text) for a copy of `xplane` in a throwaway logdir."""
    try:
        from xprof.convert import _pywrap_profiler_plugin as xprof_native
    except ImportError as exc:
        raise XprofRooflineError(
            f"xprof is not importable from {sys.executable} ({exc}); run this script with the "
            "python of a venv that has `pip install xprof` (python -m venv DIR && DIR/bin/pip install xprof)"
        ) from exc

    name = xplane.name if xplane.name.endswith(".xplane.pb") else f"{xplane.stem}.xplane.pb"
    with tempfile.TemporaryDirectory(prefix="xprof_roofline_") as logdir:
        run_dir = pathlib.Path(logdir, "plugins", "profile", "run")
        run_dir.mkdir(parents=True)
        copy = run_dir / name
        shutil.copyfile(xplane, copy)
        native_log = pathlib.Path(logdir, "native.log")
        with _native_stderr_to(native_log):
            answer, ok = xprof_native.xspace_to_tools_data([str(copy)], TOOL, {"use_saved_result": False})
        log_text = native_log.read_text(errors="replace")
        if show_native_log:
            sys.stderr.write(log_text)
        text = answer.decode(errors="replace") if isinstance(answer, bytes) else str(answer)
        if not ok:
            raise XprofRooflineError(f"XProf refused {xplane}: {text}\n--- XProf log ---\n{log_text}")
        return text


def table_records(table: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of one XProf DataTable as {column id: value} dicts."""
    ids = [column["id"] for column in table.get("cols", [])]
    return [
        dict(zip(ids, (cell.get("v") if cell else None for cell in row.get("c", []))))
        for row in table.get("rows", [])
    ]


def program_rows(answer: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The program-level rows (category "Program": Total, Average, per step), both infeed settings."""
    return [row for row in table_records(answer[0]) if row.get("category") == "Program"]


def summarize(answer: list[dict[str, Any]]) -> dict[str, Any]:
    """Device peaks, program-level figures, op-row count and diagnostics of one roofline answer."""
    rows = table_records(answer[0])
    return {
        "device": answer[0].get("p", {}),
        "program_rows": [
            {field: row[field] for field in PROGRAM_FIELDS if field in row} for row in program_rows(answer)
        ],
        "op_rows": sum(1 for row in rows if row.get("category") != "Program"),
        "diagnostics": table_records(answer[1]) if len(answer) > 1 else [],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("xplane", type=pathlib.Path, help="an .xplane.pb file (only a copy is read)")
    parser.add_argument("-o", "--out", type=pathlib.Path, help="write XProf's answer, unchanged, here")
    parser.add_argument("--raw", action="store_true", help="print the answer instead of the summary")
    parser.add_argument("--native-log", action="store_true", help="show XProf's C++ log lines on stderr")
    args = parser.parse_args(argv)

    try:
        text = run_xprof_roofline(args.xplane, show_native_log=args.native_log)
    except (OSError, XprofRooflineError) as exc:
        print(exc, file=sys.stderr)
        return 1
    if args.out:
        args.out.write_text(text)
    if args.raw:
        print(text)
    else:
        print(json.dumps(summarize(json.loads(text)), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
