"""Breakdown and op deltas between two sides, per step.

Breakdown: for each of the overview's categories, the median over the steady steps of the
category's part of each step, on each side, their difference and its ratio to the base's part.
A category one side's profile cannot show has no value there (never 0).

Ops: the overview's host-op, kernel and HLO-op tables of both sides (grouped by name), joined by
name. Each side's figures are divided by its number of windows (steady steps; 1 for a whole capture
without steps), since the two runs may hold different numbers of steps. An op is added when only
the run has calls, removed when only the base has, faster or slower when its self time per step
changed by at least `SAME_WITHIN` of the base's, else the same. The overview lists the
`op_tables.ROW_LIMIT` largest groups of each table; an op beyond that limit on one side is looked
up in that side's events, so "added" and "removed" are never an artefact of the limit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from profscope.analysis import events as ev
from profscope.analysis import op_tables
from profscope.analysis.device_idle import in_windows
from profscope.tools.compare.answers import CompareCategory, CompareOpDelta, CompareOpTable
from profscope.tools.compare.sides import Side

SAME_WITHIN = 0.05
ROW_LIMIT = op_tables.ROW_LIMIT
HOST_OPS, KERNELS, HLO_OPS = "host_ops", "kernels", "hlo_ops"
NO_HLO = "neither profile has an XLA Ops line (XPlane device planes): no HLO ops"


@dataclasses.dataclass(frozen=True)
class Figures:
    """One op on one side, over its scope: calls, self time (ns) and its kind."""

    calls: int
    self_ns: float
    kind: str


def categories(base: Side, run: Side) -> list[CompareCategory]:
    """Per category: the per-step medians of both sides, their difference and relative size."""
    base_parts, run_parts = base.per_step_parts, run.per_step_parts
    base_observed = {c.id: c for c in base.categories}
    run_observed = {c.id: c for c in run.categories}
    out = []
    for category in run.categories:
        row = CompareCategory(
            id=category.id, label=category.label, priority=category.priority, side=category.side
        )
        reasons: dict[str, list[str]] = {}
        for label, observed, parts, field in (
            ("base", base_observed[category.id], base_parts, "base_ns"),
            ("run", run_observed[category.id], run_parts, "run_ns"),
        ):
            if observed.observed and category.id in parts:
                setattr(row, field, parts[category.id])
            else:
                reasons.setdefault(observed.reason or "not observed", []).append(label)
        if reasons:
            row.reason = "; ".join(
                reason if len(labels) == 2 else f"{labels[0]}: {reason}" for reason, labels in reasons.items()
            )
        else:
            row.delta_ns = row.run_ns - row.base_ns
            if row.base_ns > 0:
                row.relative = row.delta_ns / row.base_ns
        out.append(row)
    return out


def _rows(side: Side, table: str) -> dict[str, Figures]:
    tables = side.tables
    if table == HOST_OPS:
        return {r.name: Figures(r.calls, r.self_ns, "host op") for r in tables.host_ops}
    if table == KERNELS:
        return {r.name: Figures(r.calls, r.total_ns, r.kind) for r in tables.kernels}
    return {r.name: Figures(r.calls, r.self_ns, r.category) for r in tables.hlo_ops}


def _total(side: Side, table: str) -> int:
    return {HOST_OPS: side.tables.host_ops_total, KERNELS: side.tables.kernels_total}.get(
        table, side.tables.hlo_ops_total
    )


def _table_events(side: Side, table: str) -> tuple[np.ndarray, np.ndarray]:
    """The events a table of the overview groups on this side, and their self times (ps)."""
    result = side.result
    events = result.events
    trace = events.trace
    scope = op_tables.Scope(events, result.scope_lo, result.scope_hi, result.excluded)
    if table == HOST_OPS:
        chosen = op_tables.host_op_events(scope)
        return chosen, events.self_ps[chosen]
    if table == KERNELS:
        chosen = events.of_roles(*ev.DEVICE_ROLES)
    else:
        lines = [t.id for t in trace.tracks if op_tables.XLA_OPS_LINE.match(t.name)]
        chosen = np.flatnonzero(np.isin(trace.ev_track, lines) & (trace.ev_dur_ps > 0))
    chosen = chosen[in_windows(trace.ev_start_ps[chosen], scope.lo, scope.hi)]
    return chosen, (trace.ev_dur_ps[chosen] if table == KERNELS else events.self_ps[chosen])


def _looked_up(side: Side, table: str, names: Iterable[str], kinds: dict[str, str]) -> dict[str, Figures]:
    """The figures of `names` on a side whose table stops before them (zero calls when absent)."""
    wanted = set(names)
    trace = side.result.events.trace
    ids = {s: i for i, s in enumerate(trace.strings) if s in wanted}
    chosen, self_ps = _table_events(side, table)
    found = {name: Figures(0, 0.0, kinds[name]) for name in wanted}
    if ids and chosen.shape[0]:
        names_of = trace.ev_name[chosen].astype(np.int64)
        for name, sid in ids.items():
            mine = names_of == sid
            calls = int(np.count_nonzero(mine))
            if calls:
                found[name] = Figures(calls, float(self_ps[mine].sum()) / 1e3, kinds[name])
    return found


def _change(base_calls: int, run_calls: int, base_self: float, delta: float) -> str:
    if not base_calls:
        return "added"
    if not run_calls:
        return "removed"
    if base_self > 0 and abs(delta) >= SAME_WITHIN * base_self:
        return "slower" if delta > 0 else "faster"
    if base_self <= 0 and delta > 0:
        return "slower"
    return "same"


def op_table(base: Side, run: Side, table: str, reason: str | None) -> CompareOpTable:
    """The deltas of one op table, largest |difference per step| first."""
    base_rows, run_rows = _rows(base, table), _rows(run, table)
    kinds = {name: f.kind for rows in (base_rows, run_rows) for name, f in rows.items()}
    for side, rows, other in ((base, base_rows, run_rows), (run, run_rows, base_rows)):
        missing = [name for name in other if name not in rows]
        if missing and _total(side, table) > len(rows):
            rows.update(_looked_up(side, table, missing, kinds))
    empty = Figures(0, 0.0, "")
    deltas = []
    for name in base_rows.keys() | run_rows.keys():
        b, r = base_rows.get(name, empty), run_rows.get(name, empty)
        base_self, run_self = b.self_ns / base.windows, r.self_ns / run.windows
        delta = run_self - base_self
        row = CompareOpDelta(
            name=name,
            kind=kinds[name],
            change=_change(b.calls, r.calls, base_self, delta),
            base_calls=b.calls,
            run_calls=r.calls,
            base_calls_per_step=b.calls / base.windows,
            run_calls_per_step=r.calls / run.windows,
            base_self_ns=base_self,
            run_self_ns=run_self,
            delta_self_ns=delta,
            search=name,
        )
        if b.calls and r.calls and base_self > 0:
            row.relative = delta / base_self
        deltas.append(row)
    deltas.sort(key=lambda d: (-abs(d.delta_self_ns), d.name))
    changes = {kind: 0 for kind in ("added", "removed", "faster", "slower", "same")}
    for d in deltas:
        changes[d.change] += 1
    out = CompareOpTable(rows=deltas[:ROW_LIMIT], total=len(deltas), changes=changes)
    if reason and not deltas:
        out.reason = reason
    return out


def op_tables_of(base: Side, run: Side) -> tuple[CompareOpTable, CompareOpTable, CompareOpTable]:
    """Host ops, device kernels and HLO ops."""
    no_device = None
    if not base.result.events.has_device() and not run.result.events.has_device():
        no_device = run.tables.kernels_reason or base.tables.kernels_reason or "no device activity"
    return (
        op_table(base, run, HOST_OPS, "no host ops in either scope"),
        op_table(base, run, KERNELS, no_device or "no device kernels in either scope"),
        op_table(base, run, HLO_OPS, NO_HLO),
    )
