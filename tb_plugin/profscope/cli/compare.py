"""`profscope compare`: the Compare tab's answer for two runs in a terminal, and a CI gate on it.

The answer is the `compare` route's (one host per side: each run's first host when it has several,
said in the output). The gate (`--max-slowdown`) trusts only what the answer can show: it fails
when the run is slower than its base beyond the threshold *with confidence* — the lower bound of the
Hodges–Lehmann interval of the step-time shift, ÷ the base's median step, is above it — and says
the comparison is not valid when a caution says the two do not compare like with like (other
devices, step markers or format, too few steady steps) or the steps are too few for an interval.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from profscope import answers
from profscope.answers import UNSET
from profscope.cli import markdown
from profscope.cli.workspace import (
    EXIT_FAILED,
    EXIT_NOT_VALID,
    EXIT_OK,
    CliError,
    Workspace,
    add_logdir_arguments,
)
from profscope.units import format_count

# The cautions (tools/compare/cautions.py kinds) under which a step-time difference means nothing.
INVALID_CAUTIONS = ("device", "markers", "labels", "no_steps", "few_steps", "format")
BASE_PREFIX = "base_"
DEFAULT_TOP = 10


def slowdown(text: str) -> float:
    """`5%` or `5` (percent) → 0.05."""
    try:
        value = float(text.strip().removesuffix("%")) / 100
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r} (write 5%)") from None
    if not 0 <= value < 10:
        raise argparse.ArgumentTypeError(f"--max-slowdown must be between 0% and 1000%, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_logdir_arguments(parser)
    parser.add_argument("base_run", metavar="BASE_RUN", help="the run compared against (its latest session)")
    parser.add_argument("run", metavar="RUN", help="the run under test (its latest session)")
    parser.add_argument(
        "--max-slowdown",
        type=slowdown,
        metavar="PCT",
        help="gate: exit 1 when RUN's step time is slower than BASE_RUN's by more than PCT with confidence",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the compare route's answer (and the gate) as JSON"
    )
    parser.add_argument(
        "--top", type=int, default=DEFAULT_TOP, metavar="N", help="rows of each op-delta table"
    )


def subjects(workspace: Workspace, base_run: str, run: str) -> tuple[dict[str, str], list[str]]:
    """The compare route's query: each run's latest session and its first host the Compare tab
    applies to; the notes say which host was picked when a run has several."""
    query: dict[str, str] = {}
    notes: list[str] = []
    for name, prefix in ((run, ""), (base_run, BASE_PREFIX)):
        side = workspace.subject(name, prefix=prefix)
        hosts = workspace.hosts_of(side, "compare", prefix) or side[f"{prefix}host"].split(",")
        if len(hosts) > 1:
            notes.append(
                f"run {name!r} has {len(hosts)} hosts ({', '.join(hosts)}): comparing its first, {hosts[0]!r}"
            )
        query.update(side)
        query[f"{prefix}host"] = hosts[0]
    return query, notes


def gate(answer: Any, max_slowdown: float) -> tuple[int, str]:
    """The exit status and its reason: 2 when the comparison is not valid, 1 when the run is slower
    than its base by more than `max_slowdown` with confidence, else 0."""
    blocking = [c for c in answer.cautions if c.kind in INVALID_CAUTIONS]
    if blocking:
        return EXIT_NOT_VALID, "not valid: " + "; ".join(c.text for c in blocking)
    shift = answer.shift
    if shift is UNSET or shift.low_ns is UNSET or answer.base.stats is UNSET:
        reason = answer.shift_reason if shift is UNSET else shift.note
        return EXIT_NOT_VALID, f"not valid: no interval for the step-time shift ({markdown.cell(reason)})"
    base_median = answer.base.stats.median_ns
    low, high = shift.low_ns / base_median, shift.high_ns / base_median
    interval = (
        f"shift {markdown.signed_share(shift.shift_ns / base_median)} of the base median step, "
        f"{shift.coverage:.1%} interval {markdown.signed_share(low)} to {markdown.signed_share(high)}"
    )
    if low > max_slowdown:
        return (
            EXIT_FAILED,
            f"failed: slower than the base by more than {max_slowdown:.1%} with confidence ({interval})",
        )
    if high < 0:
        return EXIT_OK, f"passed: faster than the base ({interval})"
    return (
        EXIT_OK,
        f"passed: not slower than the base by more than {max_slowdown:.1%} with confidence ({interval})",
    )


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Exit status: 0 (no gate, or the gate passed), 1 (the gate failed; or no run found), 2 (the
    comparison is not valid, with a gate), 3 (an unknown run, an unreadable file)."""
    workspace = Workspace(args.logdir, args.cache_dir, args.follow_symlinks, sys.stderr)
    try:
        query, notes = subjects(workspace, args.base_run, args.run)
        answer = workspace.call("/compare", query)
    except CliError as e:
        out.write(f"error: {e}\n")
        return e.code
    finally:
        workspace.close()
    code, verdict = gate(answer, args.max_slowdown) if args.max_slowdown is not None else (EXIT_OK, "")
    if args.json:
        gated = {"exit": code, "verdict": verdict, "max_slowdown": args.max_slowdown} if verdict else None
        out.write(answers.encode({"notes": notes, "compare": answer, "gate": gated}).decode() + "\n")
    else:
        lines = render(answer, notes, args.top)
        if verdict:
            lines += ["", f"**Gate (--max-slowdown {args.max_slowdown:.1%})**: {verdict}"]
        out.write("\n".join(lines) + "\n")
    return code


def _side(side: Any) -> str:
    return f"`{side.run}` (session `{side.session}`, host `{side.host}`, {', '.join(side.devices) or 'no device'})"


def render(answer: Any, notes: list[str], top: int) -> list[str]:
    """The Compare tab in Markdown: cautions first, the step-time shift with its spread, the
    breakdown, phase and op deltas (run − base), and the method's advice."""
    lines = ["# profscope compare", "", f"Base: {_side(answer.base)}", f"Run: {_side(answer.run)}"]
    lines += [f"- {n}" for n in notes]
    if answer.cautions:
        lines += ["", "## Cautions", ""] + [f"- {c.kind} ({c.subject}): {c.text}" for c in answer.cautions]
    lines += ["", "## Step time", ""]
    lines += markdown.table(
        ["side", "steady steps", "median", "p10", "p90", "found by"],
        (
            [
                name,
                s.stats.count if s.stats is not UNSET else 0,
                *(markdown.duration(getattr(s.stats, f, UNSET)) for f in ("median_ns", "p10_ns", "p90_ns")),
                s.step_source if s.step_message is UNSET else s.step_message,
            ]
            for name, s in (("base", answer.base), ("run", answer.run))
        ),
    )
    shift = answer.shift
    if shift is UNSET:
        lines += ["", f"No shift: {answer.shift_reason}"]
    else:
        spread = (
            f", {shift.coverage:.1%} interval {markdown.signed_duration(shift.low_ns)} to "
            f"{markdown.signed_duration(shift.high_ns)}"
            if shift.low_ns is not UNSET
            else f" ({shift.note})"
        )
        lines += [
            "",
            f"Shift (run − base, {shift.estimator}): {markdown.signed_duration(shift.shift_ns)}{spread}.",
            "",
            shift.verdict,
        ]
    lines += ["", f"## Breakdown ({answer.breakdown_scope})", ""]
    lines += markdown.table(
        ["category", "base", "run", "Δ", "relative"],
        (
            [
                c.label,
                markdown.duration(c.base_ns),
                markdown.duration(c.run_ns),
                markdown.signed_duration(c.delta_ns),
                markdown.signed_share(c.relative) if c.reason is UNSET else c.reason,
            ]
            for c in answer.categories
        ),
    )
    if answer.phases is not UNSET and answer.phases.rows:
        lines += ["", "## Phases", ""]
        lines += markdown.table(
            ["phase", "base", "run", "Δ", "relative"],
            (
                [
                    p.name,
                    markdown.duration(p.base_ns),
                    markdown.duration(p.run_ns),
                    markdown.signed_duration(p.delta_ns),
                    markdown.signed_share(p.relative),
                ]
                for p in answer.phases.rows
            ),
        )
    for title, ops in (
        ("Host ops", answer.host_ops),
        ("Kernels", answer.kernels),
        ("XLA ops", answer.hlo_ops),
    ):
        if not ops.rows:
            continue
        changes = ", ".join(f"{format_count(n)} {kind}" for kind, n in ops.changes.items() if n)
        lines += [
            "",
            f"## {title} ({min(top, len(ops.rows))} of {format_count(ops.total)}, largest |Δ| first; {changes})",
            "",
        ]
        lines += markdown.table(
            ["op", "change", "base per step", "run per step", "Δ", "relative"],
            (
                [
                    o.name,
                    o.change,
                    markdown.duration(o.base_self_ns),
                    markdown.duration(o.run_self_ns),
                    markdown.signed_duration(o.delta_self_ns),
                    markdown.signed_share(o.relative),
                ]
                for o in ops.rows[:top]
            ),
        )
    return lines + ["", answer.advice]
