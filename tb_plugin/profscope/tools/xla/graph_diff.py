"""Compare two XLA graphs node by node: what changed shape, what was added or removed, and where.

The graph bodies are read into one node list whatever their format (`formats.xla.graph_text`).
Nodes are aligned on op + operand ops, which is stable when ids shift; aligned nodes whose shape
differs are shape changes, and the ones whose operands kept their shapes are the *origins*: the
places a new size entered the graph, usually the user code to fix (a batch that changes size, a
data-dependent shape).
"""

from __future__ import annotations

import difflib
import hashlib
from collections import Counter as Tally

import msgspec

from profscope.formats.xla.graph_text import Node
from profscope.tools.xla.answers import (
    XlaAttrChange,
    XlaDiffNode,
    XlaDiffRow,
    XlaDiffSide,
    XlaOriginCount,
    XlaShapeChange,
    stack_frame,
)

MAX_ALIGN_NODES = 200_000
_FOLD_CONTEXT = 3


class Comparison(msgspec.Struct, kw_only=True):
    """Two aligned node lists: shape changes (with their origins), attribute changes, additions,
    removals and the side-by-side rows; the fields of an aligned `XlaDiff`."""

    nodes_a: int
    nodes_b: int
    same_structure: bool
    shape_changes: list[XlaShapeChange]
    origins: list[XlaShapeChange]
    origin_locations: list[XlaOriginCount]
    attr_changes: list[XlaAttrChange]
    added: list[XlaDiffNode]
    removed: list[XlaDiffNode]
    rows: list[XlaDiffRow]


def _tokens(nodes: list[Node]) -> list[str]:
    return [f"{n.op}({','.join(nodes[o].op if o >= 0 else '?' for o in n.operands)})" for n in nodes]


def structure_key(nodes: list[Node]) -> str:
    """Digest of ops and wiring without shapes: equal keys = same graph up to tensor sizes."""
    digest = hashlib.sha1()
    for node in nodes:
        digest.update(f"{node.op}({','.join(map(str, node.operands))})\n".encode())
    return digest.hexdigest()


def diff_node(node: Node) -> XlaDiffNode:
    return XlaDiffNode(
        name=node.name, op=node.op, shape=node.shape, line=node.line, location=stack_frame(node.location)
    )


def compare(a: list[Node], b: list[Node]) -> Comparison | None:
    """Align two node lists; None when either has more than MAX_ALIGN_NODES (the alignment is
    quadratic in the worst case)."""
    if len(a) > MAX_ALIGN_NODES or len(b) > MAX_ALIGN_NODES:
        return None
    matcher = difflib.SequenceMatcher(None, _tokens(a), _tokens(b), autojunk=False)
    opcodes = matcher.get_opcodes()
    pairs: dict[int, int] = {}
    added: list[int] = []
    removed: list[int] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            pairs.update(zip(range(i1, i2), range(j1, j2)))
        else:
            removed.extend(range(i1, i2))
            added.extend(range(j1, j2))
    shape_changed = {i for i, j in pairs.items() if a[i].shape != b[j].shape}
    shape_changes = []
    for i in sorted(shape_changed):
        j = pairs[i]
        origin = not any(o in shape_changed for o in a[i].operands if o >= 0)
        shape_changes.append(
            XlaShapeChange(
                a=diff_node(a[i]),
                b=diff_node(b[j]),
                op=a[i].op,
                shape_a=a[i].shape,
                shape_b=b[j].shape,
                origin=origin,
                location=stack_frame(a[i].location or b[j].location),
            )
        )
    attr_changes = [
        XlaAttrChange(a=diff_node(a[i]), b=diff_node(b[j]), attrs_a=a[i].attrs, attrs_b=b[j].attrs)
        for i, j in sorted(pairs.items())
        if a[i].attrs != b[j].attrs and i not in shape_changed
    ]
    origins = [c for c in shape_changes if c.origin]
    origin_locations = Tally(c.location.label for c in origins if c.location is not None)
    return Comparison(
        nodes_a=len(a),
        nodes_b=len(b),
        same_structure=not added and not removed,
        shape_changes=shape_changes,
        origins=origins,
        origin_locations=[
            XlaOriginCount(label=label, count=n) for label, n in origin_locations.most_common()
        ],
        attr_changes=attr_changes,
        added=[diff_node(b[j]) for j in added],
        removed=[diff_node(a[i]) for i in removed],
        rows=_rows(a, b, opcodes),
    )


def _rows(a: list[Node], b: list[Node], opcodes: list[tuple[str, int, int, int, int]]) -> list[XlaDiffRow]:
    """Side-by-side rows; long runs of identical nodes fold into one `same` row."""
    raw: list[XlaDiffRow] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                kind = "equal" if a[i].text == b[j].text else "changed"
                raw.append(XlaDiffRow(kind=kind, a=_side(a[i]), b=_side(b[j])))
            continue
        span = max(i2 - i1, j2 - j1)
        for k in range(span):
            i, j = i1 + k, j1 + k
            raw.append(
                XlaDiffRow(
                    kind="removed" if j >= j2 else "added" if i >= i2 else "replaced",
                    a=_side(a[i]) if i < i2 else None,
                    b=_side(b[j]) if j < j2 else None,
                )
            )
    rows: list[XlaDiffRow] = []
    run: list[XlaDiffRow] = []

    def flush(last: bool) -> None:
        keep_head = 0 if not rows else _FOLD_CONTEXT
        keep_tail = 0 if last else _FOLD_CONTEXT
        if len(run) > keep_head + keep_tail + 1:
            rows.extend(run[:keep_head])
            rows.append(XlaDiffRow(kind="same", count=len(run) - keep_head - keep_tail))
            rows.extend(run[len(run) - keep_tail :] if keep_tail else [])
        else:
            rows.extend(run)
        run.clear()

    for row in raw:
        if row.kind == "equal":
            run.append(row)
        else:
            flush(last=False)
            rows.append(row)
    flush(last=True)
    return rows


def _side(node: Node) -> XlaDiffSide:
    return XlaDiffSide(line=node.line, text=node.text)
