"""The graph bodies of PyTorch/XLA graph dumps → one node list, whatever the dump format.

`XLA_SAVE_TENSORS_FMT` writes the lazy-tensor IR (`text`), its Graphviz form (`dot`), or the lowered
HLO / StableHLO. `parse_nodes` turns each into the same `Node`s (op, shape, operands, the source
location when `XLA_IR_DEBUG` / `XLA_HLO_DEBUG` recorded it), which the XLA view draws and compares.
`graph_format` and `is_node_line` are the cheap part the dump reader (`formats.xla.graphs`) runs on
every record: which format a body is in and how many nodes it has, without building them.
"""

from __future__ import annotations

import dataclasses
import re

from profscope.formats.xla.text import Frame

# Node lines, for counting only (matches every line that starts a node).
_COUNT_IR_NODE = re.compile(r"^\s*%\d+ = ")
_COUNT_DOT_NODE = re.compile(r"^\s*node\d+ \[")
_COUNT_HLO_INSTR = re.compile(r"^\s*(?:ROOT )?%?[\w.-]+ = \S")
_COUNT_STABLEHLO_OP = re.compile(r"^\s*(?:%[\w#:]+(?:, *%[\w#:]+)* = )?\"?(?:stablehlo|mhlo|chlo)\.")

# Ids and line numbers have at most 18 digits: `int()` of thousands raises, and none is real.
_IR_NODE = re.compile(r"^\s*%(?P<id>\d{1,18}) = (?P<rest>.*)$")
_IR_OPERAND = re.compile(r"%(\d{1,18})(?:\.\d+)?")
_LOCATION = re.compile(r"^(?P<function>.*)@(?P<file>[^@]*?):(?P<line>\d{1,18})$")
_DOT_NODE = re.compile(r'^\s*node(?P<id>\d{1,18}) \[label="(?P<label>(?:[^"\\]|\\.)*)"')
_DOT_EDGE = re.compile(
    r'^\s*node(?P<src>\d{1,18}) -> node(?P<dst>\d{1,18})(?: \[label="(?P<label>[^"]*)"\])?'
)
_DOT_POSITION = re.compile(r"i=(\d{1,9})")
_HLO_INSTR = re.compile(r"^\s*(?P<root>ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<rest>.*)$")
_HLO_NAME = re.compile(r"%([\w.\-]+)")
_HLO_SOURCE = re.compile(r'source_file="(?P<file>[^"]*)"\s+source_line=(?P<line>\d{1,18})')
_HLO_OP_NAME = re.compile(r'op_name="(?P<name>[^"]*)"')
_SHLO_OP = re.compile(
    r'^\s*(?:(?P<names>%[\w#:]+(?:\s*,\s*%[\w#:]+)*)\s*=\s*)?"?(?P<op>(?:stablehlo|mhlo|chlo|func|tensor|arith)\.[\w.]+)"?(?P<rest>.*)$'
)
_SHLO_VALUE = re.compile(r"%([\w#]+)")
_SHLO_RESULT_TYPE = re.compile(
    r"(?:->|:)\s*(?P<type>\(?tensor<[^>]*>(?:\s*,\s*tensor<[^>]*>)*\)?)\s*(?:loc\(.*)?$"
)
_SHLO_LOC = re.compile(r'loc\("(?P<file>[^"]+)":(?P<line>\d{1,18})')


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
            given = _DOT_POSITION.search(m.group("label") or "")
            position = int(given.group(1)) if given else len(edges.get(int(m.group("dst")), []))
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


def graph_format(first_line: str) -> str:
    """Which `XLA_SAVE_TENSORS_FMT` produced a body, from its first line."""
    s = first_line.strip()
    if s.startswith("IR {"):
        return "text"
    if s.startswith(("digraph", "graph ")):
        return "dot"
    if s.startswith("HloModule"):
        return "hlo"
    if s.startswith(("module", "func.func", '"builtin.module"')):
        return "stablehlo"
    return "unknown"


_COUNTED_LINES = {
    "text": _COUNT_IR_NODE,
    "dot": _COUNT_DOT_NODE,
    "hlo": _COUNT_HLO_INSTR,
    "stablehlo": _COUNT_STABLEHLO_OP,
}


def is_node_line(fmt: str, line: str) -> bool:
    """Whether `line` of a body of format `fmt` starts a node (no node in an unknown format)."""
    pattern = _COUNTED_LINES.get(fmt)
    return pattern is not None and pattern.match(line) is not None
