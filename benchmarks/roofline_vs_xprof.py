"""profscope's roofline next to XProf's roofline_model on the same XPlanes, with relative differences.

Usage:
    .venv/bin/python benchmarks/roofline_vs_xprof.py [FILE.xplane.pb ...] [--ops N] [--anchors DIR]
        [--run-xprof [--xprof-python XPROF_VENV/bin/python]]

profscope runs in this process (the reader and `profscope.tools.roofline.analysis`, no server). XProf's
answer is the saved anchor `<name>.roofline.json` in `--anchors` (default tests/data/xprof, made by
`benchmarks/xprof_roofline.py`, see its README.md; `<name>` is the file's name without
`.xplane.pb`, or the run's name for `<run>/plugins/profile/<session>/<host>.xplane.pb`), or with
`--run-xprof` (or when there is no anchor) a fresh run of that script under `--xprof-python`
(default: $XPROF_PYTHON), the python of a venv that has `pip install xprof`. Default files: the
TPU v6e and MI300 XPlanes of tests/data/xplane.

XProf's units are converted to profscope's before comparing: GFLOP/s × 10⁹ → FLOP/s, GiB/s × 2³⁰ → B/s,
µs × 10³ → ns, fractions stay fractions. Each line prints both values, the relative difference
(profscope − XProf) / |XProf|, and "ok" within 1 %, else the reason the two differ on purpose
(docs/ROOFLINE.md, "Differences from XProf"). A figure profscope does not observe prints "n/o".

On a GPU XPlane XProf's op and program figures are also shown corrected for the quirks where XProf
is wrong, computed from XProf's own rows: Q6, the cost of one execution charged per kernel launch
(its totals × profscope's executions ÷ XProf's occurrences); Q3 for custom calls, whose HBM bytes
count the operands only (their Memory BW, which holds all of `bytes_accessed`, instead); Q5, the
halved AMD HBM peak (utilization, efficiency and bound-by against profscope's peaks). The relative
difference is then to the corrected figure, and the verdict names the corrections.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import pathlib
import subprocess
import tempfile
from typing import Any

import fsspec

from profscope.formats.xplane import reader as xplane
from profscope.tools.roofline import analysis

REPO = pathlib.Path(__file__).resolve().parent.parent

ANCHORS = REPO / "tests" / "data" / "xprof"  # XProf's saved answers (tests/data/xprof/README.md)


def _sibling(name: str) -> Any:
    """A script of this folder as a module (its helpers need only the standard library)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


xprof_roofline = _sibling("xprof_roofline")
DEFAULT_FILES = [
    REPO / "tests/data/xplane/tpu_v6e_inference.xplane.pb",
    REPO / "tests/data/xplane/mi300_jax_conv.xplane.pb",
]
GIGA, GIB = 1e9, float(2**30)
TOLERANCE = 0.01
# Why a figure differs on purpose, by the quirk it comes from (docs/ROOFLINE.md).
WHY = {
    "space": "Q3: no breakdown → no level (XProf: all bytes HBM)",
    "occurrences": "Q6: executions, not kernel launches",
    "efficiency": "Q1: above the roof → left out",
    "per_device": "Q4: ÷ active devices, not all planes",
    "not_observed": "not observed",
    "bound": "bytes not in a level → not HBM-bound",
    "hbm_peak": "Q5: datasheet HBM replaces the collector's halved figure",
    "no_vendor": "Q7: no vendor stat; XProf draws 0, profscope the parts table's figure",
    "cpu_only": "CPU-only: not observed, with the reason (XProf: an empty table of zeros)",
}


def xprof_answer(
    path: pathlib.Path, run: bool, anchors: pathlib.Path = ANCHORS, python: str | None = None
) -> list[dict[str, Any]]:
    """XProf's answer for `path`: the saved anchor in `anchors`, else (or with `run`) XProf run now
    under `python` (default $XPROF_PYTHON)."""
    names = [path.name.removesuffix(".xplane.pb")]
    if path.parent.parent.name == "profile" and path.parent.parent.parent.name == "plugins":
        names.append(path.parents[3].name)  # <run>/plugins/profile/<session>/<host>.xplane.pb
    for name in names:
        anchor = anchors / f"{name}.roofline.json"
        if not run and anchor.is_file():
            return json.loads(anchor.read_text())
    python = xprof_roofline.xprof_python(python)  # exits saying what to set when there is none
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "answer.json"
        script = REPO / "benchmarks/xprof_roofline.py"
        subprocess.run([python, str(script), str(path), "-o", str(out)], check=True, capture_output=True)
        return json.loads(out.read_text())


def profscope_answer(path: pathlib.Path) -> Any:
    trace = xplane.read(str(path), fsspec.filesystem("file"))
    host = analysis.host_devices(path.name, trace)
    return analysis.answer(path.name, [host], analysis.Options(), None)


class Table:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str, str, str, str, str]] = []

    def add(
        self, figure: str, ours: Any, theirs: Any, why: str = "", corrected: Any = None, corrections: str = ""
    ) -> None:
        """One line; with `corrected` (XProf's figure after `corrections`) the difference and the
        verdict are to the corrected figure."""
        shown = "" if corrected is None else _fmt(corrected)
        if corrected is not None and _agree(ours, theirs):
            corrected = None
        reference = theirs if corrected is None else corrected
        agree = "ok" if corrected is None or not corrections else f"ok (XProf corrected: {corrections})"
        if ours is None:
            verdict = WHY.get(why, why) or ("not observed (XProf: 0)" if theirs == 0 else "not observed")
            self.lines.append((figure, "n/o", _fmt(theirs), shown, "", verdict))
            return
        if isinstance(ours, str) or isinstance(reference, str):
            same = str(ours).lower() == str(reference).lower()
            verdict = agree if same else WHY.get(why, why) or "DIFFERS"
            self.lines.append((figure, str(ours), str(theirs), shown, "", verdict))
            return
        diff = (ours - reference) / abs(reference) if reference else (0.0 if ours == 0 else float("inf"))
        verdict = agree if abs(diff) <= TOLERANCE else (WHY.get(why, why) or "DIFFERS")
        self.lines.append((figure, _fmt(ours), _fmt(theirs), shown, f"{diff:+.2e}", verdict))

    def print(self, title: str) -> None:
        print(f"\n### {title}\n")
        print("| figure | profscope | XProf | XProf corrected | rel. diff | verdict |")
        print("|---|---|---|---|---|---|")
        for line in self.lines:
            print("| " + " | ".join(line) + " |")


class Corrected:
    """XProf's figures of one row (an op, or the program as the sum of its op rows) corrected for
    Q6, Q3 (custom calls) and Q5; `labels` names the corrections that changed a figure."""

    def __init__(self, flops: float, hbm: float, seconds: float, flop_peak: float, hbm_peak: float) -> None:
        self.flop_rate = flops / seconds
        self.hbm_bw = hbm / seconds
        self.intensity = flops / hbm if hbm else None
        flop_util = self.flop_rate / flop_peak if flop_peak else 0.0
        hbm_util = self.hbm_bw / hbm_peak if hbm_peak else 0.0
        self.flop_utilization = flop_util
        self.bound_by = "compute" if flop_util >= hbm_util else "hbm"
        self.efficiency = max(flop_util, hbm_util)


def _launch_ratio(xo: dict[str, Any], executions: int | None) -> float:
    """profscope's executions ÷ XProf's occurrences (kernel launches) of one op row (Q6)."""
    return executions / xo["occurrences"] if executions is not None and xo["occurrences"] else 1.0


def _op_totals(xo: dict[str, Any], executions: int | None) -> tuple[float, float]:
    """(FLOPs, HBM bytes) of an XProf op row, corrected for Q6 and, for a custom call, Q3."""
    ratio = _launch_ratio(xo, executions)
    seconds = xo["total_time"] * 1e-6
    hbm_rate = xo["measured_memory_bw"] if xo["category"] == "custom-call" else xo["hbm_bw"]
    return xo["measured_flop_rate"] * GIGA * seconds * ratio, hbm_rate * GIB * seconds * ratio


def _labels(
    xo_rows: list[dict[str, Any]], executions: dict[str, int], hbm_peak_differs: bool
) -> dict[str, str]:
    """The corrections (by figure kind: rate, hbm, util) that change the given XProf op rows."""
    q6 = any(_launch_ratio(xo, executions.get(xo["operation"])) != 1 for xo in xo_rows)
    q3 = any(xo["category"] == "custom-call" and xo["measured_memory_bw"] != xo["hbm_bw"] for xo in xo_rows)
    rate = ["Q6"] if q6 else []
    hbm = rate + (["Q3 custom call"] if q3 else [])
    util = hbm + (["Q5"] if hbm_peak_differs else [])
    return {"rate": ", ".join(rate), "hbm": ", ".join(hbm), "util": ", ".join(util)}


def _agree(ours: Any, theirs: Any) -> bool:
    """Whether two figures are the same (names case-insensitively, numbers within TOLERANCE)."""
    if ours is None or theirs is None:
        return False
    if isinstance(ours, str) or isinstance(theirs, str):
        return str(ours).lower() == str(theirs).lower()
    return abs(ours - theirs) <= TOLERANCE * abs(theirs) if theirs else ours == 0


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def compare(
    path: pathlib.Path,
    run_xprof: bool,
    op_count: int,
    anchors: pathlib.Path = ANCHORS,
    xprof_python: str | None = None,
) -> None:
    theirs_answer = xprof_answer(path, run_xprof, anchors, xprof_python)
    records = xprof_roofline.table_records(theirs_answer[0])
    props = theirs_answer[0].get("p", {})
    ours = profscope_answer(path)
    table = Table()
    if not ours.observed:
        table.add("observed", "no", "empty roofline" if not records else "rows", "cpu_only")
        table.print(path.name)
        return
    device = ours.device
    roof = device.flops.get(device.roof_precision) if device.roof_precision else None
    xprof_flops = float(props.get("peak_flop_rate", 0)) * GIGA
    flop_why = "no_vendor" if roof and not xprof_flops else ""
    table.add("peak FLOP/s", roof.value if roof else None, xprof_flops, flop_why)
    hbm_peak = device.bandwidth.get("hbm")
    hbm_why = "hbm_peak" if hbm_peak and "parts table" in hbm_peak.source else ""
    xprof_hbm_peak = float(props.get("peak_hbm_bw", 0)) * GIB
    table.add("peak HBM B/s", hbm_peak.value if hbm_peak else None, xprof_hbm_peak, hbm_why)
    for level, prop in (("vmem_read", "peak_vmem_read_bw"), ("vmem_write", "peak_vmem_write_bw")):
        if float(props.get(prop, 0) or 0) > 0:
            mine = device.bandwidth.get(level) or device.bandwidth.get("shm_l1")
            table.add(f"peak {level} B/s", mine.value if mine else None, float(props[prop]) * GIB)
    if "hbm" in device.ridge_points:
        ridge = float(props.get("hbm_ridge_point", 0))
        table.add("HBM ridge FLOP/B", device.ridge_points["hbm"], ridge, hbm_why or flop_why)

    xp_ops = [r for r in records if r["category"] != "Program" and r["include_infeed_outfeed"]]
    xp_ops.sort(key=lambda r: r["rank"])
    mine = {(row.program, row.name): row for row in ours.ops}
    executions = {name: row.occurrences for (_, name), row in mine.items()}
    gpu = device.kind == "gpu"
    peaks = (roof.value if roof else 0.0, hbm_peak.value if hbm_peak else 0.0)
    labels = _labels(xp_ops, executions, bool(hbm_peak) and abs(peaks[1] - xprof_hbm_peak) > 1)

    program = ours.program[0]
    xp = next(
        r
        for r in records
        if r["category"] == "Program" and r["step"] == "Total" and r["include_infeed_outfeed"]
    )
    table.add("program device time ns", program.device_time_ns, xp["total_time"] * 1e3)
    table.add(
        "program time per device ns",
        program.time_per_device_ns,
        xp["total_time_per_core"] * 1e3,
        "per_device",
    )
    fixed = None
    if gpu and xp_ops:
        totals = [_op_totals(xo, executions.get(xo["operation"])) for xo in xp_ops]
        fixed = Corrected(
            sum(f for f, _ in totals), sum(b for _, b in totals), xp["total_time"] * 1e-6, *peaks
        )
    _figure_lines(table, "program", program, xp, fixed, labels)
    for xo in xp_ops[:op_count]:
        row = mine.get((str(xo.get("hlo_module_id") or ""), xo["operation"]))
        if row is None:
            table.add(f"{xo['operation']}", None, "row", "missing in profscope")
            continue
        name = xo["operation"]
        why_occ = "occurrences" if gpu else ""
        table.add(f"{name} occurrences", float(row.occurrences), float(xo["occurrences"]), why_occ)
        table.add(f"{name} total time ns", row.total_time_ns, xo["total_time"] * 1e3)
        table.add(f"{name} self time ns", row.self_time_ns, xo["total_self_time"] * 1e3)
        fixed = None
        if gpu:
            fixed = Corrected(*_op_totals(xo, row.occurrences), xo["total_time"] * 1e-6, *peaks)
        _figure_lines(table, name, row, xo, fixed, _labels([xo], executions, labels["util"].endswith("Q5")))
    table.print(path.name)


def _figure_lines(
    table: Table, name: str, row: Any, xo: dict[str, Any], fixed: Corrected | None, labels: dict[str, str]
) -> None:
    """The rate, bandwidth, intensity, bound-by and efficiency lines of one program or op row."""
    f = row.figures
    no_level = getattr(row, "note", analysis.UNSET) is not analysis.UNSET and "breakdown" in str(row.note)
    space = "space" if no_level else "not_observed"

    def add(label: str, ours: Any, theirs: Any, why: str, value: str, kind: str) -> None:
        corrected = getattr(fixed, value) if fixed is not None else None
        table.add(f"{name} {label}", ours, theirs, why, corrected, labels[kind] if fixed is not None else "")

    add("FLOP rate", _get(f.flop_rate), xo["measured_flop_rate"] * GIGA, "not_observed", "flop_rate", "rate")
    if name == "program":  # XProf's GPU model FLOPs are its FLOPs (no 8- or 4-bit operands here)
        add(
            "model FLOP rate",
            _get(f.model_flop_rate),
            xo["model_flop_rate"] * GIGA,
            "not_observed",
            "flop_rate",
            "rate",
        )
    add("HBM B/s", f.bandwidth.get("hbm"), xo["hbm_bw"] * GIB, space, "hbm_bw", "hbm")
    if name == "program" or xo["hbm_operational_intensity"] or f.intensity.get("hbm"):
        add(
            "HBM FLOP/B",
            f.intensity.get("hbm"),
            xo["hbm_operational_intensity"],
            "not_observed",
            "intensity",
            "hbm",
        )
    bound_why = "bound" if no_level else "not_observed"
    add("bound by", _get(f.bound_by, "unknown"), xo["bound_by"], bound_why, "bound_by", "util")
    eff_why = "efficiency" if xo["roofline_efficiency"] > 1 else space
    add(
        "roofline efficiency",
        _get(f.roofline_efficiency),
        xo["roofline_efficiency"],
        eff_why,
        "efficiency",
        "util",
    )
    if name == "program":
        add(
            "FLOP utilization",
            _get(f.flop_utilization),
            xo["compute_efficiency"],
            "not_observed",
            "flop_utilization",
            "util",
        )


def _get(value: Any, default: Any = None) -> Any:
    return default if value is analysis.UNSET else value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=pathlib.Path, default=DEFAULT_FILES)
    parser.add_argument("--run-xprof", action="store_true", help="run XProf now instead of the saved anchor")
    parser.add_argument("--ops", type=int, default=20, help="op rows to compare per file (XProf's order)")
    parser.add_argument(
        "--anchors", type=pathlib.Path, default=ANCHORS, help="folder of XProf's saved answers"
    )
    parser.add_argument(
        "--xprof-python", help="python of a venv with `pip install xprof` (default: $XPROF_PYTHON)"
    )
    args = parser.parse_args(argv)
    for path in args.files:
        compare(path, args.run_xprof, args.ops, args.anchors, args.xprof_python)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
