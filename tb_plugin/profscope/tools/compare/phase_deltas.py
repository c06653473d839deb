"""Phase deltas between two sides: the overview's phases of each side's steps (analysis/phases.py),
matched by name and order (names are already told apart by order within a step: `unknown`,
`unknown (2)`), median time per steady step and share of the step, run − base and ÷ base. The rows
follow the run's phase order, a phase only the base has placed where it first appears there, and
"(outside your phases)" last. A phase one side lacks has no value there (never 0).
"""

from __future__ import annotations

from profscope.analysis.answers import OverviewPhase
from profscope.analysis.phases import OUTSIDE, first_appearance
from profscope.answers import UNSET
from profscope.tools.compare.answers import ComparePhaseDelta, ComparePhases
from profscope.tools.compare.sides import Side


def _rows_of(side: Side) -> tuple[str, dict[str, OverviewPhase]]:
    phases = side.result.answer.phases
    if phases is UNSET:
        return side.result.steps.source if len(side.result.steps) else "no steps", {}
    return phases.source, {p.name: p for p in phases.phases}


def phase_deltas(base: Side, run: Side) -> ComparePhases | None:
    """The phase deltas, or None when neither side's steps have phases."""
    base_source, base_rows = _rows_of(base)
    run_source, run_rows = _rows_of(run)
    named = [[n for n in rows if n != OUTSIDE] for rows in (run_rows, base_rows)]
    if not any(named):
        return None
    out = ComparePhases(run_source=run_source, base_source=base_source, rows=[])
    for name in [*first_appearance(named), OUTSIDE]:
        b, r = base_rows.get(name), run_rows.get(name)
        row = ComparePhaseDelta(name=name, outside=name == OUTSIDE)
        if b is not None:
            row.base_ns, row.base_share = b.median_ns, b.share
        if r is not None:
            row.run_ns, row.run_share = r.median_ns, r.share
        if b is not None and r is not None:
            row.delta_ns = r.median_ns - b.median_ns
            if b.median_ns > 0:
                row.relative = row.delta_ns / b.median_ns
        out.rows.append(row)
    return out
