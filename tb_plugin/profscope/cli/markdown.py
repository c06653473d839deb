"""The routes' answers written as Markdown: readable in a terminal, rendered in a CI job summary.

Only writing: every figure is a field of the answer the tab shows (`OverviewAnswer`,
`RooflineAnswer`, `MemoryAnswer`, `XlaReport`, `CompareAnswer`), with the tab's units
(`profscope.units`); a figure the answer leaves out reads "not observed", never 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from profscope.answers import UNSET
from profscope.units import NOT_OBSERVED, format_bytes, format_count, format_duration

# Longest name kept in a table cell (kernel and op names can run to hundreds of characters).
CELL_CHARS = 80


def cell(value: Any) -> str:
    """One table cell: pipes escaped, one line, long names cut."""
    text = NOT_OBSERVED if value is UNSET or value is None else str(value)
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def duration(ns: Any) -> str:
    return format_duration(None if ns is UNSET else ns)


def size(n: Any) -> str:
    return format_bytes(None if n is UNSET else n)


def share(fraction: Any) -> str:
    return NOT_OBSERVED if fraction is UNSET or fraction is None else f"{100 * fraction:.1f} %"


def signed_share(fraction: Any) -> str:
    if fraction is UNSET or fraction is None:
        return NOT_OBSERVED
    return f"{100 * fraction:+.1f} %".replace("-", "−")


def signed_duration(ns: Any) -> str:
    if ns is UNSET or ns is None:
        return NOT_OBSERVED
    return ("+" if ns >= 0 else "−") + format_duration(abs(ns))


def rate(value: Any, unit: str) -> str:
    """FLOP/s or B/s with an SI prefix (the roofline's units)."""
    if value is UNSET or value is None:
        return NOT_OBSERVED
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _host_heading(lines: list[str], host: str, several: bool) -> None:
    if several:
        lines += ["", f"### {host}"]


# -- overview ---------------------------------------------------------------------------------------


def steps(overview: Any) -> list[str]:
    lines = ["## Steps", ""]
    rows = []
    for host in overview.per_host:
        s = host.steps
        rows.append(
            [
                host.host,
                len(s.rows),
                s.source if s.message is UNSET else s.message,
                getattr(s.stats, "count", 0),
                *(
                    duration(getattr(s.stats, f, UNSET))
                    for f in ("median_ns", "p10_ns", "p90_ns", "min_ns", "max_ns")
                ),
            ]
        )
    lines += table(["host", "steps", "found by", "steady", "median", "p10", "p90", "min", "max"], rows)
    for host in overview.per_host:
        if host.steps.split is not UNSET:
            lines += ["", f"- {host.host}: {host.steps.split.verdict}"]
        if host.steps.stats is not UNSET and host.steps.stats.note is not UNSET:
            lines += [f"- {host.host}: {host.steps.stats.note}"]
    return lines


def breakdown(overview: Any) -> list[str]:
    lines = ["## Breakdown"]
    several = len(overview.per_host) > 1
    for host in overview.per_host:
        _host_heading(lines, host.host, several)
        window = host.steady if host.steady is not UNSET else host.capture
        per_step = window.per_step_median if window.per_step_median is not UNSET else {}
        lines += ["", f"{window.label}: {duration(window.wall_ns)} over {window.steps} step(s)", ""]
        observed = [c for c in overview.categories if c.observed]
        lines += table(
            ["category", "median per step", "total", "share of wall"],
            (
                [
                    c.label,
                    duration(per_step.get(c.id, UNSET)) if per_step else "",
                    duration(window.parts.get(c.id, UNSET)),
                    share(window.fractions.get(c.id, UNSET)),
                ]
                for c in observed
            ),
        )
    unobserved: dict[str, list[str]] = {}
    for c in overview.categories:
        if not c.observed:
            unobserved.setdefault(c.reason if c.reason is not UNSET else NOT_OBSERVED, []).append(c.label)
    lines += [""] * bool(unobserved) + [
        f"- Not shown ({reason}): {', '.join(labels)}" for reason, labels in unobserved.items()
    ]
    return lines


def phases(overview: Any) -> list[str]:
    lines = ["## Phases"]
    several = len(overview.per_host) > 1
    for host in overview.per_host:
        if host.phases is UNSET:
            continue
        _host_heading(lines, host.host, several)
        p = host.phases
        lines += ["", f"{p.source}; {p.scope}", ""]
        if not p.phases:
            continue
        lines += table(
            ["phase", "median", "p10", "p90", "share of step", "device busy"],
            (
                [
                    ph.name,
                    duration(ph.median_ns),
                    duration(ph.p10_ns),
                    duration(ph.p90_ns),
                    share(ph.share),
                    share(ph.device_busy_fraction),
                ]
                for ph in p.phases
            ),
        )
    return lines


def has_phases(overview: Any) -> bool:
    return any(h.phases is not UNSET and h.phases.phases for h in overview.per_host)


def findings(overview: Any) -> list[str]:
    lines = ["## Findings", ""]
    if not overview.findings:
        return lines + ["No finding: no rule fired on this profile."]
    lines += table(
        ["#", "finding", "host", "cost per step", "share of step"],
        (
            [i, f.title, f.host, duration(f.cost_ns), share(f.cost_share)]
            for i, f in enumerate(overview.findings, 1)
        ),
    )
    for i, f in enumerate(overview.findings, 1):
        lines += [
            "",
            f"{i}. **{f.title}** ({f.host}). {f.observation}",
            f"   - Hypothesis: {f.hypothesis}",
            f"   - Next check: {f.next_check}",
            f"   - Rule: {f.rule}",
        ]
    return lines


def ops(overview: Any, top: int) -> list[str]:
    t = overview.tables
    lines = ["## Top ops", "", f"Scope: {t.scope}."]
    if t.host_ops:
        lines += ["", f"Host ops ({top} of {format_count(t.host_ops_total)}, by total time):", ""]
        lines += table(
            ["op", "calls", "total", "self", "self share"],
            (
                [
                    r.name,
                    format_count(r.calls),
                    duration(r.total_ns),
                    duration(r.self_ns),
                    share(r.self_fraction),
                ]
                for r in t.host_ops[:top]
            ),
        )
    if t.kernels:
        lines += ["", f"Device kernels ({top} of {format_count(t.kernels_total)}, by total time):", ""]
        lines += table(
            ["kernel", "kind", "calls", "total", "share", "launched by"],
            (
                [
                    r.name,
                    r.kind,
                    format_count(r.calls),
                    duration(r.total_ns),
                    share(r.fraction),
                    r.framework_op,
                ]
                for r in t.kernels[:top]
            ),
        )
    elif t.kernels_reason is not UNSET:
        lines += ["", f"Device kernels: {t.kernels_reason}"]
    if t.hlo_ops:
        lines += ["", f"XLA ops ({top} of {format_count(t.hlo_ops_total)}, by total time):", ""]
        lines += table(
            ["op", "category", "calls", "self", "share"],
            (
                [r.name, r.category, format_count(r.calls), duration(r.self_ns), share(r.fraction)]
                for r in t.hlo_ops[:top]
            ),
        )
    return lines


# -- roofline, memory, XLA ----------------------------------------------------------------------------


def roofline(answer: Any, top: int) -> list[str]:
    lines = ["## Roofline", ""]
    device = answer.device
    if device is not UNSET:
        peaks = ", ".join(f"{name} {rate(p.value, p.unit)}" for name, p in device.flops.items())
        lines += [f"Device: {device.name} × {device.devices}; compute roofs: {peaks or NOT_OBSERVED}.", ""]
    lines += table(
        ["row", "time per device", "FLOP/s", "bound by", "roofline efficiency", "costs observed"],
        (
            [
                row.step,
                duration(row.time_per_device_ns),
                rate(row.figures.flop_rate, "FLOP/s"),
                row.figures.bound_by,
                share(row.figures.roofline_efficiency)
                if row.figures.anomaly is UNSET
                else row.figures.anomaly,
                share(row.coverage),
            ]
            for row in answer.program
        ),
    )
    if answer.ops:
        lines += [
            "",
            f"Ops ({min(top, len(answer.ops))} of {format_count(answer.ops_total)}, by self time):",
            "",
        ]
        lines += table(
            ["op", "category", "self time", "share", "FLOP/s", "bound by", "efficiency"],
            (
                [
                    op.name,
                    op.category,
                    duration(op.self_time_ns),
                    share(op.time_fraction),
                    rate(op.figures.flop_rate, "FLOP/s"),
                    op.figures.bound_by,
                    share(op.figures.roofline_efficiency),
                ]
                for op in answer.ops[:top]
            ),
        )
    return lines + [f"- {w}" for w in answer.warnings]


def memory(answer: Any) -> list[str]:
    lines = ["## Memory", ""]
    lines += table(
        ["device", "peak allocated", "reserved at peak", "at step", "allocating op", "never freed"],
        (
            [
                d.label,
                size(d.peak.allocated_bytes),
                size(d.peak.reserved_bytes),
                d.peak.step,
                d.peak.op,
                f"{size(d.never_freed_bytes)} in {format_count(d.never_freed_count)} blocks",
            ]
            for d in answer.devices
        ),
    )
    return lines + [f"- {w}" for w in answer.warnings]


def xla(report: Any) -> list[str]:
    lines = ["## XLA", ""]
    summary = report.summary
    if summary is not None:
        lines += [
            f"Compilations: {format_count(summary.compilations)} ({duration(summary.compile_time_ns)}), "
            f"executions: {format_count(summary.executions)} ({duration(summary.execute_time_ns)}), "
            f"CPU fallbacks: {format_count(summary.cpu_fallback_calls)}.",
            "",
        ]
    if not report.findings:
        lines += ["No XLA finding."]
    else:
        lines += table(
            ["severity", "finding", "summary"], ([f.severity, f.title, f.summary] for f in report.findings)
        )
        lines += [""] + [f"- **{f.title}**: {f.fix}" for f in report.findings]
    return lines + [f"- {e.path}: {e.error}" for e in report.errors]
