"""Program and op rows from `OpCost` records and `DevicePeaks`: the roofline formulas, once for
every trace kind. t is the row's time (an op's total time; the program's device time).

    flop_rate              = FLOPs ÷ t                    (model_flop_rate likewise)
    bandwidth[level]       = bytes[level] ÷ t
    intensity[level]       = FLOPs ÷ bytes[level]         (levels with bytes only)
    flop_utilization       = flop_rate ÷ the row's compute roof
                           = Σ_r (FLOPs_r ÷ peak_r) ÷ t for a program row whose ops run at
                             several roofs r (the share of t their FLOPs need at their peaks)
    bandwidth_utilization  = bandwidth[level] ÷ roof[level] (levels with bytes and a roof)
    bound_by               = the resource with the highest utilization; ties go to compute, then
                             to the levels in `model.LEVELS` order (as XProf orders its tests)
    roofline_efficiency    = max(flop_utilization, bandwidth utilizations)

The compute roof of an op is the peak of the unit and number format it computes in (`OpCost.roof`,
resolved by `DevicePeaks.compute_roof`: Kineto ops by their dtype, `kineto_formulas.roof_of`;
XPlane ops the device's compute roof, as XProf); `figures.roof` names it. A program row's roof is
each of its ops' (`flops_by_roof`, FLOPs per roof, most first, joined by " + " in `roof`); FLOPs
at a roof whose peak is not known are left out of its flop_utilization (the `roof` names them).

A utilization above 1 is not physical: the op's time does not cover its work (an asynchronous
start/done op moves its bytes while other ops run) or the roof is too low (e.g. the halved AMD HBM
figure). Then the efficiency is left out and `anomaly` says which figure exceeds its roof.

Program rows sum the FLOPs and bytes of the ops counted in the program (`OpCost.in_program`) over
the device time (see RooflineProgramRow); infeed/outfeed (`transfer`) ops are left out, their time
included, when infeed is excluded. Op rows are sorted by self time (ties by name) and limited to
`MAX_OPS`; time_fraction = self time ÷ the program's device time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from profscope.answers import UNSET
from profscope.tools.roofline.answers import RooflineFigures, RooflineOpRow, RooflineProgramRow
from profscope.tools.roofline.model import COST_FROM_PROFILE, LEVELS, DevicePeaks, OpCost

MAX_OPS = 1000
COMPUTE = "compute"
_PS = 1e-12
_ASYNC_CATEGORIES = ("copy-start", "copy-done", "async", "send", "recv", "-start", "-done")


def figures(
    flops: float | None,
    model_flops: float | None,
    bytes_by_level: dict[str, float] | None,
    time_ps: float,
    peaks: DevicePeaks | None,
    category: str = "",
    flops_by_roof: dict[str, float] | None = None,
) -> RooflineFigures:
    """A row's rates, intensities and utilizations (see the module docstring); `flops_by_roof`
    splits the FLOPs by the roof they run at (None: all at the device's compute roof)."""
    seconds = time_ps * _PS
    out = RooflineFigures(bandwidth={}, intensity={}, bandwidth_utilization={})
    if seconds <= 0:
        return out
    levels = bytes_by_level or {}
    if flops is not None:
        out.flop_rate = flops / seconds
        out.model_flop_rate = (model_flops if model_flops is not None else flops) / seconds
    for level in LEVELS:
        if level in levels:
            out.bandwidth[level] = levels[level] / seconds
            if flops is not None and levels[level] > 0:
                out.intensity[level] = flops / levels[level]
    if peaks is None:
        return out
    candidates: list[tuple[str, float]] = []
    if flops is not None:
        _compute_utilization(out, flops_by_roof or {"": flops}, seconds, peaks)
        if out.flop_utilization is not UNSET:
            candidates.append((COMPUTE, float(out.flop_utilization)))
    for level, rate in out.bandwidth.items():
        peak = peaks.bandwidth.get(level)
        if peak is not None and peak.value > 0 and levels[level] > 0:
            out.bandwidth_utilization[level] = rate / peak.value
            candidates.append((level, out.bandwidth_utilization[level]))
    best_name, best = "", 0.0
    for name, utilization in candidates:
        if utilization > best:
            best_name, best = name, utilization
    if best_name:
        out.bound_by = best_name
        if best <= 1:
            out.roofline_efficiency = best
        else:
            out.anomaly = _anomaly(best_name, best, category)
    return out


def _compute_utilization(
    out: RooflineFigures, flops_by_roof: dict[str, float], seconds: float, peaks: DevicePeaks
) -> None:
    """Set `out.roof` and `out.flop_utilization` from the FLOPs at each roof (module docstring);
    one roof: flop_rate ÷ its peak, as XProf divides. Roofs without FLOPs are left out."""
    flops_by_roof = {r: f for r, f in flops_by_roof.items() if f > 0} or flops_by_roof
    resolved = {r: peaks.compute_roof(r) for r in flops_by_roof}
    names = [hit[0] if hit else r for r, hit in resolved.items()]
    order = sorted(set(names), key=lambda n: -sum(f for m, f in zip(names, flops_by_roof.values()) if m == n))
    if all(order):  # "": the device's compute roof, and it has none
        out.roof = " + ".join(order)
    known = [(flops_by_roof[r], hit[1].value) for r, hit in resolved.items() if hit is not None]
    if len(resolved) == 1 and known:
        out.flop_utilization = float(out.flop_rate) / known[0][1]
    elif known:
        out.flop_utilization = sum(f / peak for f, peak in known) / seconds


def flops_per_roof(
    costs: Sequence[OpCost], peaks: DevicePeaks | None, divide_by: int = 1
) -> dict[str, float]:
    """FLOPs of `costs` per roof they run at (the roof's precision where the device has its peak,
    else the roof asked for), most first; roofs without FLOPs are left out."""
    out: dict[str, float] = {}
    for c in costs:
        if not c.flops:
            continue
        hit = peaks.compute_roof(c.roof) if peaks is not None else None
        key = hit[0] if hit else (c.roof or "compute")
        out[key] = out.get(key, 0.0) + c.flops / divide_by
    return dict(sorted(out.items(), key=lambda item: -item[1]))


def program_row(
    step: str,
    costs: Sequence[OpCost],
    device_time_ps: float,
    devices: int,
    peaks: DevicePeaks | None,
    wall_time_ps: float | None = None,
    divide_by: int = 1,
) -> RooflineProgramRow:
    """The program row of the counted ops in `costs` over `device_time_ps`. `divide_by` > 1 makes
    an average step: time, FLOPs and bytes ÷ the step count (the rates are unchanged)."""
    counted = [c for c in costs if c.in_program]
    with_flops = [c for c in counted if c.flops is not None]
    with_bytes = [c for c in counted if c.bytes_by_level is not None]
    observed_time = sum(
        c.total_time_ps for c in counted if c.flops is not None or c.bytes_by_level is not None
    )
    counted_time = sum(c.total_time_ps for c in counted)
    flops = sum(c.flops for c in with_flops) / divide_by if with_flops else None  # type: ignore[misc]
    model = (
        sum(c.model_flops if c.model_flops is not None else c.flops for c in with_flops) / divide_by  # type: ignore[misc]
        if with_flops
        else None
    )
    levels: dict[str, float] | None = None
    if with_bytes:
        levels = {}
        for c in with_bytes:
            for level, value in (c.bytes_by_level or {}).items():
                levels[level] = levels.get(level, 0.0) + value / divide_by
    time_ps = device_time_ps / divide_by
    if with_flops or with_bytes:
        source = (
            COST_FROM_PROFILE
            if all(c.source == COST_FROM_PROFILE for c in with_flops + with_bytes)
            else (Counter(c.source for c in with_flops + with_bytes).most_common(1)[0][0])
        )
    else:
        reasons = Counter(c.source for c in counted)
        source = reasons.most_common(1)[0][0] if reasons else "no device ops in this range"
    by_roof = {c.roof: 0.0 for c in with_flops}
    for c in with_flops:
        by_roof[c.roof] += c.flops / divide_by  # type: ignore[operator]
    row = RooflineProgramRow(
        step=step,
        device_time_ns=time_ps / 1e3,
        time_per_device_ns=time_ps / 1e3 / max(devices, 1),
        devices=devices,
        bytes_by_level=levels or {},
        coverage=observed_time / counted_time if counted_time else 0.0,
        figures=figures(flops, model, levels, time_ps, peaks, flops_by_roof=by_roof or None),
        flops_by_roof=flops_per_roof(with_flops, peaks, divide_by),
        source=source,
    )
    if wall_time_ps is not None:
        row.wall_time_ns = wall_time_ps / divide_by / 1e3
    if flops is not None:
        row.flops = flops
        row.model_flops = model
    return row


def op_rows(
    costs: Sequence[OpCost], program_time_ps: float, peaks: DevicePeaks | None, limit: int = MAX_OPS
) -> list[RooflineOpRow]:
    """The `limit` ops with the most self time, ranked."""
    listed = sorted((c for c in costs if c.occurrences > 0), key=lambda c: (-c.self_time_ps, c.name))[:limit]
    rows: list[RooflineOpRow] = []
    cumulative = 0.0
    for rank, cost in enumerate(listed, start=1):
        fraction = cost.self_time_ps / program_time_ps if program_time_ps > 0 else 0.0
        cumulative += fraction
        row = RooflineOpRow(
            rank=rank,
            name=cost.name,
            category=cost.category,
            program=cost.program,
            occurrences=int(cost.occurrences),
            total_time_ns=cost.total_time_ps / 1e3,
            avg_time_ns=cost.total_time_ps / 1e3 / cost.occurrences,
            self_time_ns=cost.self_time_ps / 1e3,
            avg_self_time_ns=cost.self_time_ps / 1e3 / cost.occurrences,
            time_fraction=fraction,
            cumulative_time_fraction=cumulative,
            bytes_by_level={k: float(v) for k, v in (cost.bytes_by_level or {}).items()},
            figures=figures(
                cost.flops,
                cost.model_flops,
                cost.bytes_by_level,
                cost.total_time_ps,
                peaks,
                cost.category,
                {cost.roof: cost.flops} if cost.flops is not None else None,
            ),
            source=cost.source,
            search=cost.search,
            in_program=bool(cost.in_program),
            transfer=bool(cost.transfer),
        )
        if cost.flops is not None:
            row.flops = float(cost.flops)
        if cost.bytes_accessed is not None:
            row.bytes_accessed = float(cost.bytes_accessed)
        if cost.note:
            row.note = cost.note
        if cost.event_ids:
            row.event_ids = list(cost.event_ids)
        rows.append(row)
    return rows


def _anomaly(resource: str, utilization: float, category: str) -> str:
    label = "FLOP rate" if resource == COMPUTE else f"{LEVELS.get(resource, resource)} bandwidth"
    if any(word in category for word in _ASYNC_CATEGORIES):
        why = "an asynchronous op's bytes move while other ops run, so they are not its own rate"
    else:
        why = "its time does not cover its work, or the roof is too low"
    return f"measured {label} is {utilization:.3g}× the roof: {why}"
