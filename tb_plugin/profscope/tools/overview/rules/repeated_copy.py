"""`repeated_copy`: the same host→device copy in every step.

Two sources, both over the steady steps (at least `MIN_STEPS` of them):
- device copies: host→device memcpys grouped by name and size (Kineto `bytes`, XPlane
  `memcpy_details` size);
- host copy ops, on a capture without device activity only (there they are the only trace of a
  copy; with a device most of them are device-side copies): the outermost of `COPY_OPS`
  (`aten::to`, `aten::_to_copy`, `aten::copy_`: what `.to()`, `.cuda()` and `copy_` run) grouped by
  name and input shapes.
A group fires when it occurs the same number of times in every steady step and its time (union)
reaches `MIN_COPY_SHARE` of the steady steps' wall time.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from profscope.analysis import op_tables
from profscope.analysis.events import ROLE_H2D, args_of
from profscope.analysis.findings import Rule
from profscope.tools.overview.answers import OverviewFinding
from profscope.tools.overview.rules.context import (
    Context,
    count,
    duration,
    in_scope,
    scope_link,
    scope_share,
    scope_words,
    share,
    steady_steps,
)

MIN_STEPS = 3
MIN_COPY_SHARE = 0.05
COPY_OPS = frozenset({"aten::to", "aten::_to_copy", "aten::copy_"})
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
        # Keys (sizes, shapes) are read from the args only where all copies together could reach the share.
        device = in_scope(host, events.of_roles(ROLE_H2D))
        copies = np.zeros(0, np.int64) if events.has_device() else _host_copies(host)
        for where, chosen in (("device", device), ("host", copies)):
            if not chosen.shape[0] or scope_share(host, chosen) < MIN_COPY_SHARE:
                continue
            names = [trace.strings[i] for i in trace.ev_name[chosen].tolist()]
            if where == "device":
                keys = [f"{n} ({_size(raw)})" for n, raw in zip(names, args_of(trace, chosen))]
            else:
                keys = [f"{n} {s}".strip() for n, s in zip(names, op_tables.shapes_of(events, chosen))]
            finding = _repeated(host, where, chosen, keys)
            if finding is not None:
                out.append(finding)
                break
    return out


def _host_copies(host) -> np.ndarray:
    events = host.events
    trace = events.trace
    is_copy = np.array([s in COPY_OPS for s in trace.strings], dtype=bool)
    chosen = np.flatnonzero(
        is_copy[trace.ev_name] & events.host_track[trace.ev_track] & (trace.ev_dur_ps > 0)
    )
    chosen = in_scope(host, chosen)
    parent = events.parent[chosen]
    outermost = (parent < 0) | ~is_copy[trace.ev_name[np.maximum(parent, 0)]]
    return chosen[outermost]


def _repeated(host, where: str, chosen: np.ndarray, keys: list[str]) -> OverviewFinding | None:
    if not chosen.shape[0]:
        return None
    trace = host.events.trace
    steady = np.flatnonzero(host.steady)
    lo = host.steps.start_ps[steady]
    step_of = np.searchsorted(lo, trace.ev_start_ps[chosen], side="right") - 1
    table, key_of = np.unique(np.array(keys, dtype=object), return_inverse=True)
    key_of = key_of.ravel()
    counts = np.zeros((table.shape[0], steady.shape[0]), np.int64)
    np.add.at(counts, (key_of, step_of), 1)
    best = None
    for k in range(table.shape[0]):
        per_step = counts[k]
        if per_step.min() == 0 or per_step.min() != per_step.max():
            continue
        members = chosen[key_of == k]
        copy_share = scope_share(host, members)
        if copy_share >= MIN_COPY_SHARE and (best is None or copy_share > best[1]):
            best = (k, copy_share, int(per_step[0]), members)
    if best is None:
        return None
    k, copy_share, each, members = best
    key = str(table[k])
    name = trace.strings[trace.ev_name[members[0]]]
    wall = host.scope_wall_ns
    where_text = "host→device memcpy" if where == "device" else "copy op"
    return OverviewFinding(
        kind="repeated_copy",
        host=host.events.name,
        title="The same copy runs in every step",
        observation=(
            f"The {where_text} {key} runs {each}× in each of the {steady.shape[0]} steady steps and takes "
            f"{copy_share * 100:.1f} % of the wall time of {scope_words(host)}."
        ),
        hypothesis=(
            "A tensor whose value does not change between steps (a constant, a mask, a lookup table) is built on "
            "the host and copied again in every step."
        ),
        next_check=(
            "Check in the code whether the copied tensor's value changes from one step to the next; if it does "
            "not, create it once on the device before the loop and profile again, comparing this copy's share "
            "(a changing batch copy would instead be a candidate for pinned memory and non_blocking=True)."
        ),
        rule=(
            f"same copy (name and {'size' if where == 'device' else 'input shapes'}) the same number of times in "
            f"each of ≥ {MIN_STEPS} steady steps, ≥ {MIN_COPY_SHARE:.0%} of their wall time"
        ),
        evidence=[
            count("copies per step", each),
            share("share of wall time", copy_share),
            duration("copy time per step", copy_share * wall / steady.shape[0]),
        ],
        link=scope_link(host, name),
    )


RULE = Rule("repeated_copy", check)
