"""The graph list of the XLA view: every graph the runtime built, grouped by graph hash.

Each group says how often the graph ran, at which steps, which Python (or Swift) frames triggered it,
and — from the PT_XLA_DEBUG log, matched on the same graph hash — why it was compiled and how big it
is. `graph()` returns one graph's text plus a DOT rendering (the dump itself for `dot`, built from
the nodes for the IR text, HLO and StableHLO formats), `diff()` compares any two graphs.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter as Tally

import msgspec
from tensorboard import errors as tb_errors

from profscope.formats.xla.debug import Analysis
from profscope.formats.xla.graph_text import Node, parse_nodes
from profscope.formats.xla.graphs import GraphRecord, GraphsFile
from profscope.formats.xla.text import Frame
from profscope.tools.xla import graph_diff, provenance
from profscope.tools.xla.answers import (
    XlaAnalysis,
    XlaDiff,
    XlaFrameCount,
    XlaGraph,
    XlaGraphChange,
    XlaGraphGroup,
    XlaGraphList,
    XlaGraphRecord,
    XlaOpCount,
    XlaPostCompilation,
    stack_frame,
    stack_frames,
)
from profscope.xla_logs import Loaded

# Graphviz in the browser lays out a few thousand nodes in seconds; beyond this the view shows text.
MAX_DOT_NODES = 2000
_LIBRARY_MARKERS = ("/site-packages/", "/dist-packages/", "/lib/python", "<frozen ", "/torch_xla/", "/torch/")


@dataclasses.dataclass(frozen=True)
class Entry:
    """One record with the file it came from; `index` is its position across the view's graph files."""

    index: int
    file: GraphsFile
    record: GraphRecord
    label: str  # the file as the UI names it (relative to the logdir)

    def nodes(self) -> list[Node]:
        return _nodes(self.file, self.record.digest, self.record.format)


@functools.lru_cache(maxsize=256)
def _cached_nodes(body: str, fmt: str) -> tuple[Node, ...]:
    return tuple(parse_nodes(fmt, body))


def _nodes(file: GraphsFile, digest: str, fmt: str) -> list[Node]:
    for record in file.records:
        if record.digest == digest:
            return list(_cached_nodes(file.body(record), fmt))
    return []


def entries(loaded: Loaded) -> list[Entry]:
    """All graph records of the view, files in listing order, records in file order."""
    out: list[Entry] = []
    for file, parsed in loaded.graphs:
        for record in parsed.records:
            out.append(Entry(len(out), parsed, record, file.label))
    return out


def user_frame(frames: list[Frame]) -> Frame | None:
    """The first frame in user code: skips torch, torch_xla and other installed packages."""
    for frame in frames:
        file = frame.file or ""
        if file and not any(marker in file for marker in _LIBRARY_MARKERS):
            return frame
    for frame in frames:
        if frame.file is None and frame.function not in ("(unknown)", ""):
            return frame
    return frames[0] if frames else None


def compile_info(loaded: Loaded) -> dict[str, Analysis]:
    """The PT_XLA_DEBUG compilation analysis of each graph hash (first compilation wins)."""
    out: dict[str, Analysis] = {}
    for _, parsed in loaded.debug:
        for analysis in parsed.analyses:
            if analysis.kind == "compilation" and analysis.graph_hash and analysis.graph_hash not in out:
                out[analysis.graph_hash] = analysis
    return out


def analysis_info(analysis: Analysis) -> XlaAnalysis:
    post = analysis.post
    return XlaAnalysis(
        kind=analysis.kind,
        cause=analysis.cause,
        step=analysis.step,
        line=analysis.line,
        graph_hash=analysis.graph_hash,
        graph_name=analysis.graph_name,
        num_inputs=analysis.num_inputs,
        num_outputs=analysis.num_outputs,
        frames=stack_frames(analysis.frames),
        user_frame=stack_frame(user_frame(analysis.frames)),
        post=None
        if post is None
        else XlaPostCompilation(
            computation_hash=post.computation_hash,
            input_bytes=post.input_bytes,
            output_bytes=post.output_bytes,
            aliased_input_bytes=post.aliased_input_bytes,
            intermediate_bytes=post.intermediate_bytes,
            program_bytes=post.program_bytes,
        ),
    )


def record_info(entry: Entry) -> XlaGraphRecord:
    r = entry.record
    return XlaGraphRecord(
        index=entry.index,
        file=entry.label,
        line=r.line,
        step=r.step,
        key=r.key,
        graph_hash=r.graph_hash,
        header=r.header,
        format=r.format,
        num_nodes=r.num_nodes,
        complete=r.complete,
        ends_step=r.ends_step,
        user_frame=stack_frame(user_frame(r.frames)),
    )


def _change_info(record: GraphRecord, index: int | None = None) -> XlaGraphChange | None:
    """X10's change note of `record`; `index` given for the group's list of changes."""
    change = record.change
    if change is None:
        return None
    return XlaGraphChange(
        index=msgspec.UNSET if index is None else index,
        kind=change.kind,
        line=change.line,
        current_shape=change.current_shape,
        previous_shape=change.previous_shape,
        node=change.node,
        current_trace=stack_frames(change.current_trace),
        previous_trace=stack_frames(change.previous_trace),
    )


@dataclasses.dataclass
class _Group:
    """A graph hash's records while the list is built."""

    first: Entry
    compiled: Analysis | None
    indices: list[int] = dataclasses.field(default_factory=list)
    steps: list[int] = dataclasses.field(default_factory=list)
    headers: list[str] = dataclasses.field(default_factory=list)
    changes: list[XlaGraphChange] = dataclasses.field(default_factory=list)
    frames: Tally[tuple[str, ...]] = dataclasses.field(default_factory=Tally)

    def answer(self) -> XlaGraphGroup:
        r = self.first.record
        return XlaGraphGroup(
            key=r.key,
            graph_hash=r.graph_hash,
            first_index=self.first.index,
            indices=self.indices,
            steps=self.steps,
            format=r.format,
            num_nodes=r.num_nodes,
            headers=self.headers,
            compile=analysis_info(self.compiled) if self.compiled is not None else None,
            changes=self.changes,
            count=len(self.indices),
            frames=[XlaFrameCount(frames=list(labels), count=n) for labels, n in self.frames.most_common()],
            user_frame=stack_frame(user_frame(r.frames)),
        )


def graphs(loaded: Loaded) -> XlaGraphList:
    """The graph list: records in order and groups by graph hash with counts, steps and frames."""
    all_entries = entries(loaded)
    compiled = compile_info(loaded)
    groups: dict[str, _Group] = {}
    for entry in all_entries:
        r = entry.record
        group = groups.get(r.key)
        if group is None:
            group = groups[r.key] = _Group(entry, compiled.get(r.graph_hash or ""))
        group.indices.append(entry.index)
        if r.step is not None and r.step not in group.steps:
            group.steps.append(r.step)
        if r.header not in group.headers:
            group.headers.append(r.header)
        change = _change_info(r, entry.index)
        if change is not None:
            group.changes.append(change)
        group.frames[tuple(f.label() for f in r.frames)] += 1
    return XlaGraphList(
        ordinal=loaded.ordinal,
        ordinals=loaded.ordinals,
        records=[record_info(e) for e in all_entries],
        groups=[g.answer() for g in sorted(groups.values(), key=lambda g: g.first.index)],
        sources=provenance.sources(loaded),
        errors=provenance.errors(loaded),
    )


def _entry(loaded: Loaded, index: int) -> Entry:
    all_entries = entries(loaded)
    if not all_entries:
        raise tb_errors.NotFoundError("no XLA graph log (XLA_SAVE_TENSORS_FILE) for this host")
    if not 0 <= index < len(all_entries):
        raise tb_errors.InvalidArgumentError(
            f"graph index {index} out of range: this host has {len(all_entries)} graphs"
        )
    return all_entries[index]


def graph(loaded: Loaded, index: int) -> XlaGraph:
    """One graph: its record, the text as dumped and a DOT rendering when small enough."""
    entry = _entry(loaded, index)
    r = entry.record
    text = entry.file.body(r)
    nodes = entry.nodes()
    dot, dot_note = None, None
    if r.format == "dot":
        dot = text
    elif not nodes:
        dot_note = f"no graph drawing for the {r.format} format"
    elif len(nodes) > MAX_DOT_NODES:
        dot_note = (
            f"{len(nodes)} nodes: too many to draw in the browser (limit {MAX_DOT_NODES}); the text is below"
        )
    else:
        dot = to_dot(nodes)
    return XlaGraph(
        **msgspec.structs.asdict(record_info(entry)),
        frames=stack_frames(r.frames),
        frame_kind=r.frame_kind,
        root_hashes=r.root_hashes,
        change=_change_info(r),
        output_sharding=r.output_sharding,
        text=text,
        dot=dot,
        dot_note=dot_note,
        ops=[XlaOpCount(op=op, count=n) for op, n in Tally(n.op for n in nodes).most_common()],
    )


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def to_dot(nodes: list[Node]) -> str:
    """A Graphviz digraph of `nodes` (op, shape and source line in each box; edges operand → user)."""
    lines = ["digraph G {", '  node [shape=box, fontsize=10, fontname="sans-serif"];']
    for node in nodes:
        label = f"{_dot_escape(node.op)}\\n{_dot_escape(node.shape)}"
        if node.location is not None:
            label += f"\\n{_dot_escape(node.location.label())}"
        lines.append(f'  n{node.index} [label="{label}"];')
    for node in nodes:
        for position, operand in enumerate(node.operands):
            if operand >= 0:
                edge_label = f' [label="{position}"]' if len(node.operands) > 1 else ""
                lines.append(f"  n{operand} -> n{node.index}{edge_label};")
    lines.append("}")
    return "\n".join(lines)


def diff(loaded: Loaded, a: int, b: int) -> XlaDiff:
    """Compare graphs `a` and `b` node by node (see `graph_diff.compare`)."""
    entry_a, entry_b = _entry(loaded, a), _entry(loaded, b)
    nodes_a, nodes_b = entry_a.nodes(), entry_b.nodes()
    records = {"a": record_info(entry_a), "b": record_info(entry_b)}
    result = graph_diff.compare(nodes_a, nodes_b)
    if result is None:
        return XlaDiff(
            **records,
            aligned=False,
            reason=f"graphs larger than {graph_diff.MAX_ALIGN_NODES} nodes are not aligned",
            nodes_a=len(nodes_a),
            nodes_b=len(nodes_b),
        )
    answer = XlaDiff(**records, aligned=True, **msgspec.structs.asdict(result))
    if not nodes_a and not nodes_b:
        answer.reason = f"no nodes could be read from the {entry_a.record.format} format"
    return answer
