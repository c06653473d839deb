"""The derived lines XProf shows on device planes, rebuilt from the events' stats.

GPU sections get, per stream, "XLA Modules", "XLA Ops" (one nesting level per `::`-separated
hlo_op part), "Framework Name Scope" and "Framework Ops" (from tf_op) and "Source code" (from the
`source` stat), built from the stream's kernels (events with `kernel_details`); consecutive kernels
of the same op and group (step) are merged into one box, and a new box on a parent line (module,
outer name scope) starts new boxes below it. Each GPU also gets "Steps" (from group_id) and
"Launch Stats" (host launches per step, linked by correlation id). TPU TensorCore sections get
Framework Name Scope, Framework Ops and Source code from the ops' tf_op / source stats, merged
within one XLA module execution (XProf merges across executions, which makes boxes span idle
time and other programs). Lines the producer already wrote (e.g. "Steps" or "TensorFlow Ops" in
older profiles) are not derived again. All of it is vectorized per stream: the cost is numpy work
per kernel, Python work per line.

Each plane is derived on its own once the reader has read its last line (`events`), from
the rows it kept of that plane; "Launch Stats" need the host's launches from anywhere in the file
and are added at the end of the read (`flows.FlowRecords.launch_totals`). Box names are
interned in the order boxes first show them, so the string table depends only on the file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

import msgspec
import numpy as np

from profscope.formats.xplane.decode import RawPlane
from profscope.formats.xplane.events import PlaneEvents
from profscope.formats.xplane.stats import StatNames
from profscope.formats.xplane.tracks import (
    PER_STREAM_LINES,
    TPU_CORE_PLANE,
    line_sort_index,
    plane_kind,
    stream_sort_index,
)
from profscope.model import arrays

# Lines older producers wrote under another name count as already present.
_ALIASES = {"Framework Name Scope": "TensorFlow Name Scope", "Framework Ops": "TensorFlow Ops"}
_TF_TYPE = re.compile(r"[A-Z_][a-zA-Z0-9_]*")
_TF_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_./>\\-]*")
_JAX_TYPE = re.compile(r"[a-z_][a-z0-9_]*(\[.*\])?")


def parse_tf_op(full: str) -> tuple[str, list[str], str]:
    """(category, name scopes, display name) of a framework op name.

    TensorFlow writes "scope/name:Type", JAX "jit(f)/scope/op_type" (optionally ":op_type");
    the display name is the op type so all ops of a type look alike, as in XProf.
    """
    name, sep, op_type = full.partition(":")
    if sep and name == "Iterator":
        return "tf.data", [], "Iterator::" + full.rsplit("::", 1)[-1]
    if sep and _TF_TYPE.fullmatch(op_type) and _TF_NAME.fullmatch(name):
        return "tensorflow", name.split("/")[:-1], op_type
    derived = op_type or name.rsplit("/", 1)[-1]
    if _JAX_TYPE.fullmatch(derived):
        return "jax", name.split("/")[:-1], derived.split("[", 1)[0]
    if sep and not op_type:
        return "tensorflow", name.split("/")[:-1], derived
    return "other", [], full.strip()


def _runs(keys: list[np.ndarray], valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, stop) of each maximal run of consecutive valid items with equal keys."""
    n = valid.shape[0]
    change = np.ones(n, dtype=bool)
    if n > 1:
        same = valid[1:] & valid[:-1]
        for key in keys:
            same &= key[1:] == key[:-1]
        change[1:] = ~same
    first = np.flatnonzero(change & valid)
    boundary = np.append(np.flatnonzero(change | ~valid), n)
    stop = boundary[np.searchsorted(boundary, first, side="right")]
    return first, stop


class _Runs:
    """Boxes of one derived line over a time-sorted item sequence.

    Only `member` items belong to the line; the others neither extend nor interrupt its boxes
    (as in XProf, a memcpy between two kernels of one op does not split the op). Among members,
    a run of equal `keys` is one box; a member with `valid` false ends the current run and starts
    none (a kernel whose op has fewer nesting levels closes the deeper ones).
    """

    def __init__(
        self,
        start: np.ndarray,
        end: np.ndarray,
        member: np.ndarray,
        keys: list[np.ndarray],
        valid: np.ndarray,
    ) -> None:
        self.n = start.shape[0]
        self.items = np.flatnonzero(member)
        first, stop = _runs([k[self.items] for k in keys], valid[self.items])
        self.first_item = self.items[first]
        self.count = stop - first
        self.start = start[self.first_item]
        if first.shape[0]:
            bounds = np.empty(first.shape[0] * 2, dtype=np.int64)
            bounds[0::2], bounds[1::2] = first, stop
            self.end = np.maximum.reduceat(np.append(end[self.items], 0), bounds)[0::2]
        else:
            self.end = np.zeros(0, dtype=np.int64)

    def sequence(self) -> np.ndarray:
        """Per item, the index of the box it is in or that was opened last before it (-1: none)."""
        marks = np.zeros(self.n, dtype=np.int64)
        marks[self.first_item] = 1
        return np.cumsum(marks) - 1


class BoxSink(Protocol):
    """Where derived boxes go: a TraceBuilder, or the reader's recorder of builder calls."""

    def intern(self, text: str) -> int: ...

    def track(
        self, section: int, name: str, kind: str = "thread", sort_index: int = 0, key: Any = None
    ) -> int: ...

    def add_events(
        self, track: int, start_ps: np.ndarray, dur_ps: np.ndarray, name: np.ndarray, *, args: list[bytes]
    ) -> int: ...


def _interned(b: BoxSink, ids: np.ndarray, text: Callable[[int], str]) -> np.ndarray:
    """Builder string id of `text(id)` for each box, interned in the order the boxes first show
    each one, so the string table never depends on how stat text ids happen to be numbered."""
    uniq, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    out = np.zeros(uniq.shape[0], dtype=np.int32)
    for k in np.argsort(first, kind="stable").tolist():
        out[k] = b.intern(text(int(uniq[k])))
    return out[inverse.ravel()]


def _add_boxes(
    builder: BoxSink,
    track: int,
    start: np.ndarray,
    dur: np.ndarray,
    names: np.ndarray,
    args: list[bytes],
) -> None:
    """Add one track's derived boxes in one builder call (none when there are none)."""
    if start.shape[0]:
        builder.add_events(track, start, dur, names, args=args)


def add_derived_lines(events: PlaneEvents, builder: BoxSink) -> None:
    """Add the derived lines of one GPU or TPU core plane to `builder` (see module docstring)."""
    plane, sid = events.plane, events.section
    have = {ln.name for ln in plane.lines if ln.num_events}
    group, has_group = events.group, events.has_group
    if plane_kind(plane.name)[0] == "gpu":
        kernel = events.kernel
        program, has_program = events.program, events.has_program
        values = {"module": events.module, "op": events.op}
        values["tf_op"], values["source"] = _framework_of_kernels(
            events, kernel, events.op, program, has_program, events.tf_op, events.source
        )
        # Kernels grouped by stream track, each group in time order.
        kernels = np.flatnonzero(kernel)
        kernels = kernels[np.lexsort((events.start_ps[kernels], events.track[kernels]))]
        kernel_track = events.track[kernels]
        wanted = {line for line in PER_STREAM_LINES if line not in have and _ALIASES.get(line) not in have}
        for number, track in sorted(events.streams):
            lo, hi = np.searchsorted(kernel_track, [track, track + 1])
            if hi > lo:
                lines = _LineSet(events, builder, sid, wanted, number)
                _stream_lines(lines, kernels[lo:hi], values, program, has_program, group, has_group)
        if "Steps" not in have:
            _steps(events, builder, sid, np.ones(events.num_events, dtype=bool), group, has_group)
    elif TPU_CORE_PLANE.match(plane.name):
        tf_op, source = events.tf_op, events.source
        ev = np.flatnonzero(~events.is_async & ((tf_op >= 0) | (source >= 0)))
        ev = ev[np.argsort(events.start_ps[ev], kind="stable")]
        wanted = {
            line
            for line in ("Framework Name Scope", "Framework Ops", "Source code")
            if line not in have and _ALIASES.get(line) not in have
        }
        lines = _LineSet(events, builder, sid, wanted, None)
        module = _enclosing_module(events, ev)
        _framework_lines(lines, ev, tf_op, module, group, has_group)
        _simple_line(lines, "Source code", ev, source, group, has_group, module)


def wants_launch_stats(plane: RawPlane) -> bool:
    """A GPU plane gets "Launch Stats" unless its producer already wrote that line."""
    return plane_kind(plane.name)[0] == "gpu" and not any(
        ln.name == "Launch Stats" and ln.num_events for ln in plane.lines
    )


def add_launch_stats(
    b: BoxSink,
    sid: int,
    group: np.ndarray,
    span: tuple[np.ndarray, np.ndarray],
    count: np.ndarray,
    max_dur: np.ndarray,
    sum_dur: np.ndarray,
) -> None:
    """Per step (group id, ascending), the host's kernel launches for one GPU: span, count, max
    and mean time (`flows.launch_totals` sums them up over the file)."""
    if not group.shape[0]:
        return
    track = b.track(
        sid, "Launch Stats", "derived", line_sort_index("Launch Stats"), key=("derived", sid, "Launch Stats")
    )
    max_us = max_dur / 1e6
    avg_us = sum_dur / count / 1e6
    names = np.array([b.intern(f"Launch Stats for {x}") for x in group.tolist()], dtype=np.int32)
    args = [
        b'{"group_id":%d,"num_launches":%d,"max_launch_time_us":%r,"avg_launch_time_us":%r}' % (x, n, mx, av)
        for x, n, mx, av in zip(group.tolist(), count.tolist(), max_us.tolist(), avg_us.tolist(), strict=True)
    ]
    _add_boxes(b, track, span[0], span[1] - span[0], names, args)


def _enclosing_module(events: PlaneEvents, ev: np.ndarray) -> np.ndarray:
    """Per TPU op, which "XLA Modules" event (module execution) it starts in, -1 for none.

    XProf merges equal framework ops across module executions on TPUs, so one box can span
    seconds of idle time and other programs; keying the merge on the execution keeps each box
    inside the program run that produced it.
    """
    modules = np.flatnonzero(events.module_line)
    if not modules.shape[0]:
        return np.full(ev.shape[0], -1, dtype=np.int64)
    modules = modules[np.argsort(events.start_ps[modules], kind="stable")]
    starts = events.start_ps[modules]
    ends = starts + events.duration_ps[modules]
    at = np.searchsorted(starts, events.start_ps[ev], side="right") - 1
    inside = (at >= 0) & (events.start_ps[ev] < ends[np.maximum(at, 0)])
    return np.where(inside, at, -1)


def _framework_of_kernels(
    events: PlaneEvents,
    kernel: np.ndarray,
    op: np.ndarray,
    program: np.ndarray,
    has_program: np.ndarray,
    tf_op: np.ndarray,
    source: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Framework op and source line of each kernel, as text ids.

    As in XProf, a kernel of an XLA op gets them from its HLO instruction's metadata (looked up by
    program id and op name in the HloProtos the file carries); other kernels, and XLA kernels
    whose instruction is not found, use their tf_op / source stats, except a tf_op that only
    names XLA's module annotation ("XlaModule:…").
    """
    st = events.names
    tf_op = tf_op.copy()
    annotation = [nid for text, nid in st.name_ids.items() if text.startswith("XlaModule:")]
    tf_op[np.isin(tf_op, annotation) & (op >= 0)] = -1
    xla = np.flatnonzero(kernel & (op >= 0))
    hlo = events.hlo
    if not xla.shape[0] or not hlo.protos:
        return tf_op, source
    pid = np.where(has_program[xla], program[xla], np.int64(-(1 << 63)))
    programs, pid_index = np.unique(pid, return_inverse=True)
    width = int(op[xla].max()) + 1
    combos, inverse = np.unique(pid_index.ravel() * width + op[xla], return_inverse=True)
    last = {int(u): st.names[u].rsplit("::", 1)[-1] for u in arrays.unique(op[xla]).tolist()}
    keys = [(int(programs[c // width]), int(c % width)) for c in combos.tolist()]
    found = hlo.resolve({(p, last[o]) for p, o in keys})
    resolved_op = np.full(len(keys), -1, dtype=np.int32)
    resolved_source = np.full(len(keys), -1, dtype=np.int32)
    for i, (p, o) in enumerate(keys):
        framework, src = found.get((p, last[o]), ("", ""))
        if framework:
            resolved_op[i] = st.name_id(framework)
        if src:
            resolved_source[i] = st.name_id(src)
    inverse = inverse.ravel()
    tf_op[xla] = np.where(resolved_op[inverse] >= 0, resolved_op[inverse], tf_op[xla])
    source = source.copy()
    source[xla] = np.where(resolved_source[inverse] >= 0, resolved_source[inverse], source[xla])
    return tf_op, source


class _LineSet:
    """The derived tracks of one GPU stream or TPU core, created when their first box arrives."""

    def __init__(
        self, events: PlaneEvents, builder: BoxSink, sid: int, wanted: set[str], number: int | None
    ) -> None:
        self.events, self.builder, self.sid, self.wanted, self.number = events, builder, sid, wanted, number
        self.tracks: dict[str, int] = {}
        # What a box counts: the kernels of a GPU stream, the ops of a TPU core.
        self.unit = b"kernels" if number is not None else b"ops"

    def add(self, line: str, runs: _Runs, names: np.ndarray, args: list[bytes]) -> None:
        if line not in self.wanted or not runs.start.shape[0]:
            return
        if line not in self.tracks:
            if self.number is None:
                label, sort, key = line, line_sort_index(line), ("derived", self.sid, line)
            else:
                label = f"{line} (Stream #{self.number})"
                sort, key = stream_sort_index(self.number, line), ("derived", self.sid, self.number, line)
            self.tracks[line] = self.builder.track(self.sid, label, "derived", sort, key=key)
        _add_boxes(self.builder, self.tracks[line], runs.start, runs.end - runs.start, names, args)


def _stream_lines(
    lines: _LineSet,
    ev: np.ndarray,
    values: dict[str, np.ndarray],
    program: np.ndarray,
    has_program: np.ndarray,
    group: np.ndarray,
    has_group: np.ndarray,
) -> None:
    """XLA Modules, XLA Ops, Framework Name Scope / Ops and Source code of one stream's kernels."""
    events, b, st = lines.events, lines.builder, lines.events.names
    start = events.start_ps[ev]
    end = start + events.duration_ps[ev]
    g = np.where(has_group[ev], group[ev], -1)
    module = values["module"][ev]
    prog = np.where(has_program[ev], program[ev], -1)
    modules = _Runs(start, end, module >= 0, [module, prog, g], module >= 0)
    module_seq = modules.sequence()
    labels: dict[tuple[int, int], int] = {}
    for m, p in zip(module[modules.first_item].tolist(), prog[modules.first_item].tolist(), strict=True):
        if (m, p) not in labels:
            labels[(m, p)] = b.intern(st.names[m] if p < 0 else f"{st.names[m]}({p})")
    names = np.array(
        [
            labels[(m, p)]
            for m, p in zip(
                module[modules.first_item].tolist(), prog[modules.first_item].tolist(), strict=True
            )
        ],
        dtype=np.int32,
    )
    lines.add("XLA Modules", modules, names, _count_args(lines.unit, modules.count, g[modules.first_item]))
    op = values["op"][ev]
    _nested(lines, "XLA Ops", start, end, op, _levels(st, op, lambda s: s.split("::")), [module_seq, g], g)
    _framework_lines(lines, ev, values["tf_op"], module_seq, group, has_group)
    _simple_line(lines, "Source code", ev, values["source"], group, has_group)


def _levels(
    st: StatNames, ids: np.ndarray, split: Callable[[str], list[str]]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per nesting level: (path id per item or -1, display name id per item) from text ids."""
    uniq = arrays.unique(ids[ids >= 0])
    parts = {int(u): split(st.names[u]) for u in uniq.tolist()}
    depth = max((len(p) for p in parts.values()), default=0)
    out = []
    for level in range(depth):
        path_of = np.full(int(uniq.max()) + 1 if uniq.shape[0] else 1, -1, dtype=np.int64)
        name_of = np.full(path_of.shape[0], -1, dtype=np.int64)
        for u, p in parts.items():
            if len(p) > level:
                path_of[u] = st.name_id("\x1f".join(p[: level + 1]))
                name_of[u] = st.name_id(p[level])
        safe = np.maximum(ids, 0)
        out.append((np.where(ids >= 0, path_of[safe], -1), np.where(ids >= 0, name_of[safe], -1)))
    return out


def _nested(
    lines: _LineSet,
    line: str,
    start: np.ndarray,
    end: np.ndarray,
    member_ids: np.ndarray,
    levels: list[tuple[np.ndarray, np.ndarray]],
    parent_keys: list[np.ndarray],
    g: np.ndarray,
) -> np.ndarray:
    """Boxes of every nesting level of one line; returns the level-0 box sequence per item.

    The path id at level L includes every shallower part, so a new box at any shallower level
    also starts a new one at L.
    """
    b, st = lines.builder, lines.events.names
    member = member_ids >= 0
    if levels:
        member &= levels[0][0] >= 0
    seq0 = np.full(start.shape[0], -1, dtype=np.int64)
    for level, (path, name) in enumerate(levels):
        runs = _Runs(start, end, member, [*parent_keys, path], path >= 0)
        if level == 0:
            seq0 = runs.sequence()
        names = _interned(b, name[runs.first_item], lambda u: st.names[u])
        lines.add(line, runs, names, _count_args(lines.unit, runs.count, g[runs.first_item]))
    return seq0


def _framework_lines(
    lines: _LineSet,
    ev: np.ndarray,
    tf_op: np.ndarray,
    module_seq: np.ndarray,
    group: np.ndarray,
    has_group: np.ndarray,
) -> None:
    """Framework Name Scope (one level per scope) and Framework Ops boxes from the items' tf_op.

    A new outer scope box also starts new op boxes, as in XProf.
    """
    events, b, st = lines.events, lines.builder, lines.events.names
    ops = tf_op[ev]
    if not ev.shape[0] or not (ops >= 0).any():
        return
    start = events.start_ps[ev]
    end = start + events.duration_ps[ev]
    g = np.where(has_group[ev], group[ev], -1)
    parsed = {int(u): parse_tf_op(st.names[u]) for u in arrays.unique(ops[ops >= 0]).tolist()}

    def scopes(text: str) -> list[str]:
        category, names, _ = parsed[st.name_ids[text]]
        return names if category in ("tensorflow", "jax") else []

    scope_seq = _nested(
        lines, "Framework Name Scope", start, end, ops, _levels(st, ops, scopes), [module_seq, g], g
    )
    runs = _Runs(start, end, ops >= 0, [module_seq, scope_seq, g, ops], ops >= 0)
    encoded = {u: _json_str(st.names[u]) for u in parsed}
    names = _interned(b, ops[runs.first_item], lambda u: parsed[u][2])
    op_first = ops[runs.first_item].tolist()
    args = [
        b'{"long_name":%s,"%s":%d%s}' % (encoded[u], lines.unit, n, _group_member(gr))
        for u, n, gr in zip(op_first, runs.count.tolist(), g[runs.first_item].tolist(), strict=True)
    ]
    lines.add("Framework Ops", runs, names, args)


def _simple_line(
    lines: _LineSet,
    line: str,
    ev: np.ndarray,
    column: np.ndarray,
    group: np.ndarray,
    has_group: np.ndarray,
    parent: np.ndarray | None = None,
) -> None:
    """One level of boxes: runs of the same value (and group, and parent), e.g. Source code."""
    events, b, st = lines.events, lines.builder, lines.events.names
    values = column[ev]
    g = np.where(has_group[ev], group[ev], -1)
    start = events.start_ps[ev]
    keys = [values, g] if parent is None else [values, g, parent]
    runs = _Runs(start, start + events.duration_ps[ev], values >= 0, keys, values >= 0)
    names = _interned(b, values[runs.first_item], lambda u: st.names[u])
    lines.add(line, runs, names, _count_args(lines.unit, runs.count, g[runs.first_item]))


def _steps(
    events: PlaneEvents,
    b: BoxSink,
    sid: int,
    mask: np.ndarray,
    group: np.ndarray,
    has_group: np.ndarray,
) -> None:
    """Steps: runs of device events of the same group id (step), named by the group id."""
    ev = np.flatnonzero(mask & has_group)
    if not ev.shape[0]:
        return
    ev = ev[np.argsort(events.start_ps[ev], kind="stable")]
    g = group[ev]
    start = events.start_ps[ev]
    everything = np.ones(ev.shape[0], dtype=bool)
    runs = _Runs(start, start + events.duration_ps[ev], everything, [g], everything)
    steps = g[runs.first_item].tolist()
    names = np.array([b.intern(str(x)) for x in steps], dtype=np.int32)
    args = [b'{"group_id":%d,"events":%d}' % (x, n) for x, n in zip(steps, runs.count.tolist(), strict=True)]
    track = b.track(sid, "Steps", "derived", line_sort_index("Steps"), key=("derived", sid, "Steps"))
    _add_boxes(b, track, runs.start, runs.end - runs.start, names, args)


def _group_member(group: int) -> bytes:
    return b',"group_id":%d' % group if group >= 0 else b""


def _count_args(unit: bytes, counts: np.ndarray, groups: np.ndarray) -> list[bytes]:
    return [
        b'{"%s":%d%s}' % (unit, n, _group_member(g))
        for n, g in zip(counts.tolist(), groups.tolist(), strict=True)
    ]


def _json_str(value: str) -> bytes:
    return msgspec.json.encode(value)
