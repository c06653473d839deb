"""Compare two XLA graphs node by node: what changed shape, what was added or removed, and where.

Graph logs hold the lazy-tensor IR (`text`), its Graphviz form (`dot`), or the lowered HLO /
StableHLO. All four are turned into one node list (op, shape, operands, source location when
`XLA_IR_DEBUG` / `XLA_HLO_DEBUG` recorded it). Nodes are aligned on op + operand ops, which is
stable when ids shift; aligned nodes whose shape differs are shape changes, and the ones whose
operands kept their shapes are the *origins*: the places a new size entered the graph, usually the
user code to fix (a batch that changes size, a data-dependent shape).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import re
from collections import Counter as Tally
from typing import Any

from profscope.formats.xla_debug import Frame

MAX_ALIGN_NODES = 200_000
_FOLD_CONTEXT = 3

_IR_NODE = re.compile(r"^\s*%(?P<id>\d+) = (?P<rest>.*)$")
_IR_OPERAND = re.compile(r"%(\d+)(?:\.\d+)?")
_LOCATION = re.compile(r"^(?P<function>.*)@(?P<file>[^@]*?):(?P<line>\d+)$")
_DOT_NODE = re.compile(r'^\s*node(?P<id>\d+) \[label="(?P<label>(?:[^"\\]|\\.)*)"')
_DOT_EDGE = re.compile(r'^\s*node(?P<src>\d+) -> node(?P<dst>\d+)(?: \[label="(?P<label>[^"]*)"\])?')
_HLO_INSTR = re.compile(r"^\s*(?P<root>ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<rest>.*)$")
_HLO_NAME = re.compile(r"%([\w.\-]+)")
_HLO_SOURCE = re.compile(r'source_file="(?P<file>[^"]*)"\s+source_line=(?P<line>\d+)')
_HLO_OP_NAME = re.compile(r'op_name="(?P<name>[^"]*)"')
_SHLO_OP = re.compile(
    r'^\s*(?:(?P<names>%[\w#:]+(?:\s*,\s*%[\w#:]+)*)\s*=\s*)?"?(?P<op>(?:stablehlo|mhlo|chlo|func|tensor|arith)\.[\w.]+)"?(?P<rest>.*)$'
)
_SHLO_VALUE = re.compile(r"%([\w#]+)")
_SHLO_RESULT_TYPE = re.compile(
    r"(?:->|:)\s*(?P<type>\(?tensor<[^>]*>(?:\s*,\s*tensor<[^>]*>)*\)?)\s*(?:loc\(.*)?$"
)
_SHLO_LOC = re.compile(r'loc\("(?P<file>[^"]+)":(?P<line>\d+)')


@dataclasses.dataclass(frozen=True)
class Node:
    """One graph node, whatever the dump format."""

    index: int
    name: str
    op: str
    shape: str
    operands: tuple[int, ...]  # indices into the node list (-1: not found)
    attrs: str  # other attributes, location and shape echoes removed
    location: Frame | None
    line: int  # 1-based line inside the graph body
    text: str


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split on `sep` outside (), [], {} and quotes."""
    parts: list[str] = []
    depth = 0
    quote = False
    start = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quote = False
        elif ch == '"':
            quote = True
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts


def _take_balanced(text: str) -> tuple[str, str]:
    """Split off the first token of `text`, where brackets may hold spaces (tuple shapes)."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == " " and depth == 0:
            return text[:i], text[i + 1 :]
    return text, ""


def _closing_paren(text: str) -> int:
    """Index of the `)` closing an already opened `(` (len(text) when missing)."""
    depth = 1
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
    return len(text)


def _location(text: str) -> Frame | None:
    m = _LOCATION.match(text.strip())
    if not m:
        return None
    return Frame(m.group("function"), m.group("file"), int(m.group("line")))


def _parse_ir(text: str) -> list[Node]:
    nodes: list[Node] = []
    ids: dict[int, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        m = _IR_NODE.match(line)
        if not m:
            continue
        shape, rest = _take_balanced(m.group("rest"))
        op, paren, rest = rest.partition("(")
        if not paren:
            op, rest = shape, ""
            shape = ""
        end = _closing_paren(rest)
        operand_text, tail = rest[:end], rest[end + 1 :]
        operands = tuple(ids.get(int(o), -1) for o in _IR_OPERAND.findall(operand_text))
        location = None
        attrs = []
        for attr in split_top_level(tail.lstrip(", ")):
            attr = attr.strip()
            if not attr:
                continue
            key, _, value = attr.partition("=")
            if key == "location":
                location = _location(value)
            elif key not in ("xla_shape", "ROOT", "scope"):  # scope names count up between traces
                attrs.append(attr)
        ids[int(m.group("id"))] = len(nodes)
        nodes.append(
            Node(
                len(nodes),
                f"%{m.group('id')}",
                op.strip(),
                shape,
                operands,
                ", ".join(attrs),
                location,
                number,
                line.strip(),
            )
        )
    return nodes


def _parse_dot(text: str) -> list[Node]:
    labels: dict[int, tuple[str, int, str]] = {}
    edges: dict[int, list[tuple[int, int]]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        m = _DOT_NODE.match(line)
        if m:
            labels[int(m.group("id"))] = (m.group("label"), number, line.strip())
            continue
        m = _DOT_EDGE.match(line)
        if m:
            label = m.group("label") or ""
            position = (
                int(label.split("i=")[1].split(",")[0])
                if "i=" in label
                else len(edges.get(int(m.group("dst")), []))
            )
            edges.setdefault(int(m.group("dst")), []).append((position, int(m.group("src"))))
    order = sorted(labels)
    index_of = {node_id: i for i, node_id in enumerate(order)}
    nodes = []
    for node_id in order:
        label, number, line = labels[node_id]
        parts = label.split("\\n")
        op = parts[0]
        shape = parts[1] if len(parts) > 1 else ""
        location = None
        attrs = []
        for part in parts[2:]:
            key, _, value = part.partition("=")
            if key == "location":
                location = _location(value)
            elif key not in ("xla_shape", "ROOT"):
                attrs.append(part)
        operands = tuple(index_of.get(src, -1) for _, src in sorted(edges.get(node_id, [])))
        nodes.append(
            Node(len(nodes), f"node{node_id}", op, shape, operands, ", ".join(attrs), location, number, line)
        )
    return nodes


def _parse_hlo(text: str) -> list[Node]:
    nodes: list[Node] = []
    ids: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        m = _HLO_INSTR.match(line)
        if not m or line.lstrip().startswith(("HloModule", "ENTRY")):
            continue
        shape, rest = _take_balanced(m.group("rest"))
        op, paren, rest = rest.partition("(")
        if not paren or not re.fullmatch(r"[\w\-]+", op):
            continue
        operand_text, _, tail = rest.partition(")")
        operands = tuple(ids.get(n, -1) for n in _HLO_NAME.findall(operand_text))
        source = _HLO_SOURCE.search(tail)
        op_name = _HLO_OP_NAME.search(tail)
        location = None
        if source:
            location = Frame(
                op_name.group("name") if op_name else "", source.group("file"), int(source.group("line"))
            )
        attrs = ", ".join(
            a.strip()
            for a in split_top_level(tail.lstrip(", "))
            if a.strip() and not a.strip().startswith("metadata=")
        )
        ids[m.group("name")] = len(nodes)
        nodes.append(
            Node(len(nodes), m.group("name"), op, shape, operands, attrs, location, number, line.strip())
        )
    return nodes


def _parse_stablehlo(text: str) -> list[Node]:
    nodes: list[Node] = []
    ids: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        m = _SHLO_OP.match(line)
        if not m or m.group("op") in ("func.func",):
            continue
        rest = m.group("rest")
        type_match = _SHLO_RESULT_TYPE.search(rest)
        shape = type_match.group("type") if type_match else ""
        operands = tuple(ids.get(v, -1) for v in _SHLO_VALUE.findall(rest.split(":")[0]))
        loc = _SHLO_LOC.search(rest)
        location = Frame("", loc.group("file"), int(loc.group("line"))) if loc else None
        names = _SHLO_VALUE.findall(m.group("names") or "")
        for name in names:
            ids[name.split("#")[0]] = len(nodes)
        nodes.append(
            Node(
                len(nodes),
                names[0] if names else "",
                m.group("op"),
                shape,
                operands,
                "",
                location,
                number,
                line.strip(),
            )
        )
    return nodes


_PARSERS = {"text": _parse_ir, "dot": _parse_dot, "hlo": _parse_hlo, "stablehlo": _parse_stablehlo}


def parse_nodes(fmt: str, text: str) -> list[Node]:
    """Nodes of a graph body of format `fmt` ("text", "dot", "hlo", "stablehlo"; others: none)."""
    parser = _PARSERS.get(fmt)
    return parser(text) if parser else []


def _tokens(nodes: list[Node]) -> list[str]:
    return [f"{n.op}({','.join(nodes[o].op if o >= 0 else '?' for o in n.operands)})" for n in nodes]


def structure_key(nodes: list[Node]) -> str:
    """Digest of ops and wiring without shapes: equal keys = same graph up to tensor sizes."""
    digest = hashlib.sha1()
    for node in nodes:
        digest.update(f"{node.op}({','.join(map(str, node.operands))})\n".encode())
    return digest.hexdigest()


def node_json(node: Node) -> dict[str, Any]:
    return {
        "name": node.name,
        "op": node.op,
        "shape": node.shape,
        "line": node.line,
        "location": frame_json(node.location),
    }


def frame_json(frame: Frame | None) -> dict[str, Any] | None:
    if frame is None:
        return None
    return {"function": frame.function, "file": frame.file, "line": frame.line, "label": frame.label()}


def compare(a: list[Node], b: list[Node]) -> dict[str, Any]:
    """Align two node lists; report shape changes (with their origins), attribute changes, additions, removals."""
    if len(a) > MAX_ALIGN_NODES or len(b) > MAX_ALIGN_NODES:
        return {
            "aligned": False,
            "reason": f"graphs larger than {MAX_ALIGN_NODES} nodes are not aligned",
            "nodes_a": len(a),
            "nodes_b": len(b),
        }
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
            {
                "a": node_json(a[i]),
                "b": node_json(b[j]),
                "op": a[i].op,
                "shape_a": a[i].shape,
                "shape_b": b[j].shape,
                "origin": origin,
                "location": frame_json(a[i].location or b[j].location),
            }
        )
    attr_changes = [
        {"a": node_json(a[i]), "b": node_json(b[j]), "attrs_a": a[i].attrs, "attrs_b": b[j].attrs}
        for i, j in sorted(pairs.items())
        if a[i].attrs != b[j].attrs and i not in shape_changed
    ]
    origin_locations = Tally(
        c["location"]["label"] for c in shape_changes if c["origin"] and c["location"] is not None
    )
    return {
        "aligned": True,
        "nodes_a": len(a),
        "nodes_b": len(b),
        "same_structure": not added and not removed,
        "shape_changes": shape_changes,
        "origins": [c for c in shape_changes if c["origin"]],
        "origin_locations": [{"label": label, "count": n} for label, n in origin_locations.most_common()],
        "attr_changes": attr_changes,
        "added": [node_json(b[j]) for j in added],
        "removed": [node_json(a[i]) for i in removed],
        "rows": _rows(a, b, opcodes),
    }


def _rows(
    a: list[Node], b: list[Node], opcodes: list[tuple[str, int, int, int, int]]
) -> list[dict[str, Any]]:
    """Side-by-side rows; long runs of identical nodes fold into one `same` row."""
    raw: list[dict[str, Any]] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                kind = "equal" if a[i].text == b[j].text else "changed"
                raw.append({"kind": kind, "a": _side(a[i]), "b": _side(b[j])})
            continue
        span = max(i2 - i1, j2 - j1)
        for k in range(span):
            i, j = i1 + k, j1 + k
            raw.append(
                {
                    "kind": "removed" if j >= j2 else "added" if i >= i2 else "replaced",
                    "a": _side(a[i]) if i < i2 else None,
                    "b": _side(b[j]) if j < j2 else None,
                }
            )
    rows: list[dict[str, Any]] = []
    run: list[dict[str, Any]] = []

    def flush(last: bool) -> None:
        keep_head = 0 if not rows else _FOLD_CONTEXT
        keep_tail = 0 if last else _FOLD_CONTEXT
        if len(run) > keep_head + keep_tail + 1:
            rows.extend(run[:keep_head])
            rows.append({"kind": "same", "count": len(run) - keep_head - keep_tail})
            rows.extend(run[len(run) - keep_tail :] if keep_tail else [])
        else:
            rows.extend(run)
        run.clear()

    for row in raw:
        if row["kind"] == "equal":
            run.append(row)
        else:
            flush(last=False)
            rows.append(row)
    flush(last=True)
    return rows


def _side(node: Node) -> dict[str, Any]:
    return {"line": node.line, "text": node.text}
