"""`repeated_copy`: the step copies the same data again in every step.

A copy is the call the user's step code makes: the outermost of `COPY_OPS` (`.to()`, `.cuda()`,
`.clone()`, `copy_`) whose enclosing slices up to the step marker are all labels (the step marker,
`record_function` phases). A copy inside another framework op is that op's own work, not a copy of
the user's: the bias copy of `aten::addmm`, DDP's gradient buckets
(`torch.distributed.ddp.reducer::copy_bucket_to_grad`, the reducer's `aten::to`), an optimizer's
internals, a model's `forward`. With a device, the host→device memcpys launched from such a copy
count, keyed by name and size (Kineto `bytes`, XPlane `memcpy_details`); on a CPU-only capture the
copy ops themselves, keyed by name and input shapes (`record_shapes`).

Over at least `MIN_STEPS` steady steps, a key that occurs the same number of times in every step is
one copy repeated: the same source copied the same way, a constant rebuilt or re-copied each step.
Fires when such copies together take at least `MIN_COPY_SHARE` of the steady steps' wall time
(union). Cost: that time per step and its share. Kineto records no tensor identity: a batch copied
at the step's top level with the same shapes each step reads the same; the next check tells them
apart.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from profscope.analysis import op_tables
from profscope.analysis.events import ROLE_H2D, ROLE_PYTHON, args_of, string_table
from profscope.analysis.findings import Rule
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules.context import (
    Context,
    cost_words,
    costed,
    count,
    duration,
    in_scope,
    is_label,
    scope_link,
    scope_share,
    scope_words,
    share,
    steady_steps,
)

if TYPE_CHECKING:
    from profscope.analysis.results import HostResult

MIN_STEPS = 3
MIN_COPY_SHARE = 0.05
COPY_OPS = frozenset({"aten::to", "aten::_to_copy", "aten::copy_", "aten::clone"})
_SIZE = re.compile(r"size:(\d+)")


class _CopyArgs(msgspec.Struct):
    bytes: int | None = None
    memcpy_details: str | None = None


_decode = msgspec.json.Decoder(_CopyArgs, strict=False).decode


def _size(raw: bytes) -> str:
    if not raw:
        return ""
    try:
        args = _decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return ""
    if args.bytes is not None:
        return f"{args.bytes} B"
    match = _SIZE.search(args.memcpy_details or "")
    return f"{match.group(1)} B" if match else ""


def check(ctx: Context) -> list[OverviewFinding]:
    out = []
    for host in ctx.hosts:
        if steady_steps(host) < MIN_STEPS:
            continue
        events = host.events
        trace = events.trace
        copies = _user_copies(host)
        if events.has_device():
            memcpy = in_scope(host, events.of_roles(ROLE_H2D))
            chosen = memcpy[np.isin(_outermost_op(host, events.launch[memcpy]), copies)]
            keys = [
                f"{trace.strings[n]} ({_size(raw)})"
                for n, raw in zip(trace.ev_name[chosen], args_of(trace, chosen))
            ]
        else:
            chosen = copies
            shapes = op_tables.shapes_of(events, chosen)
            keys = [f"{trace.strings[n]} {s}".strip() for n, s in zip(trace.ev_name[chosen].tolist(), shapes)]
        if chosen.shape[0] and scope_share(host, chosen) >= MIN_COPY_SHARE:
            finding = _repeated(host, events.has_device(), chosen, keys)
            if finding is not None:
                out.append(finding)
    return out


def _user_copies(host: HostResult) -> np.ndarray:
    """The copy ops in scope that the step's own code calls (module docstring)."""
    events = host.events
    trace = events.trace
    is_copy = string_table(trace.strings, COPY_OPS.__contains__)
    chosen = in_scope(host, np.flatnonzero(is_copy[trace.ev_name] & events.host_track[trace.ev_track]))
    chosen = chosen[trace.ev_dur_ps[chosen] > 0]
    return chosen[_outermost_op(host, chosen) == chosen]


def _outermost_op(host: HostResult, of: np.ndarray) -> np.ndarray:
    """Per event of `of`: the outermost enclosing slice (itself included) that is not a label, a
    Python frame or a step marker (or what encloses one); -1 for an event of -1."""
    events = host.events
    trace = events.trace
    labels = is_label(trace)
    skip = events.mask(host.excluded) if host.excluded.shape[0] else np.zeros(trace.num_events, bool)
    out = np.where(of >= 0, of, -1)
    current = np.where(of >= 0, events.parent[np.maximum(of, 0)], -1)
    while (current >= 0).any():
        at = np.maximum(current, 0)
        op = (current >= 0) & ~skip[at] & ~labels[trace.ev_cat[at]] & (events.role[at] != ROLE_PYTHON)
        out = np.where(op, current, out)
        current = np.where(current >= 0, events.parent[at], -1)
    return out


def _repeated(host: HostResult, device: bool, chosen: np.ndarray, keys: list[str]) -> OverviewFinding | None:
    trace = host.events.trace
    steady = np.flatnonzero(host.steady)
    lo = host.steps.start_ps[steady]
    step_of = np.searchsorted(lo, trace.ev_start_ps[chosen], side="right") - 1
    table, key_of = np.unique(np.array(keys, dtype=object), return_inverse=True)
    key_of = key_of.ravel()
    counts = np.zeros((table.shape[0], steady.shape[0]), np.int64)
    np.add.at(counts, (key_of, step_of), 1)
    same = (counts.min(axis=1) > 0) & (counts.min(axis=1) == counts.max(axis=1))
    if not same.any():
        return None
    members = chosen[same[key_of]]
    copy_share = scope_share(host, members)
    if copy_share < MIN_COPY_SHARE:
        return None
    wall_ps = host.scope_wall_ns * 1e3
    cost_ps = copy_share * wall_ps
    repeated = [f"{table[k]} {counts[k, 0]}×" for k in np.flatnonzero(same)]
    where_text = "host→device memcpy" if device else "copy op"
    name = trace.strings[trace.ev_name[members[0]]]
    finding = OverviewFinding(
        kind="repeated_copy",
        host=host.events.name,
        title="The same copy runs in every step",
        observation=(
            f"The step's own code runs the same {where_text}{'s' if len(repeated) > 1 else ''} in each of the "
            f"{steady.shape[0]} steady steps ({', '.join(repeated[:4])}{'…' if len(repeated) > 4 else ''} per "
            f"step), taking {copy_share * 100:.1f} % of the wall time of {scope_words(host)}. It costs "
            f"{cost_words(host, cost_ps)}."
        ),
        hypothesis=(
            "A tensor whose value does not change between steps (a constant, a mask, a lookup table) is built or "
            "held on the host and copied again in every step."
        ),
        next_check=(
            "Check in the code whether the copied tensor's value changes from one step to the next; if it does "
            "not, create it once (on its device, in its dtype) before the loop and profile again, comparing this "
            "copy's share (a batch, which changes, would instead be a candidate for pinned memory and "
            "non_blocking=True)."
        ),
        rule=(
            f"the same copy (name and {'size' if device else 'input shapes'}), called by the step's code, the same "
            f"number of times in each of ≥ {MIN_STEPS} steady steps, ≥ {MIN_COPY_SHARE:.0%} of their wall time"
        ),
        evidence=[
            count("copies per step", int(counts[same, 0].sum())),
            share("share of wall time", copy_share),
            duration("copy time per step", cost_ps / 1e3 / steady.shape[0]),
        ],
        link=scope_link(host, name),
    )
    return costed(finding, host, cost_ps)


RULE = Rule("repeated_copy", check)
