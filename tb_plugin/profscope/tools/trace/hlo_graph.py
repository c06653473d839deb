"""The neighbourhood of an HLO instruction and its DOT: what the trace's Graph section draws.

The neighbourhood is the instructions of the op's computation within `radius` edges of it, edges
walked both ways (operands and users, as XLA's graph dumper does around a node), breadth first, so
the nearest ones are kept when `max_nodes` cuts it short. Edges go from operand to user, read from
each instruction's operand ids. Each node counts its neighbours left out, so the view can say a
node leads further. Called computations (fused, while bodies) are not entered.
"""

from __future__ import annotations

import dataclasses

from profscope.formats.hlo.proto import HloInstruction

# Labels longer than this are cut with an ellipsis (tuple shapes of dozens of elements).
MAX_LABEL_CHARS = 48
_OP_STYLE = 'fillcolor="#fde68a", color="#b45309", penwidth=2'
# Fill of the other nodes by kind of opcode (the op itself is always amber).
_FILLS = {"parameter": "#e0f2fe", "constant": "#f1f5f9", "fusion": "#ede9fe", "get-tuple-element": "#f8fafc"}
_FILLS |= {"tuple": "#f8fafc", "custom-call": "#fce7f3", "while": "#dcfce7", "conditional": "#dcfce7"}


@dataclasses.dataclass(frozen=True)
class Neighbourhood:
    """The op, the instructions kept around it in BFS order with their distance, and the edges
    among them; `within` counts every instruction within the radius, kept or not."""

    op: HloInstruction
    nodes: list[tuple[HloInstruction, int]]
    # (operand, user, operand position): the first position when an operand is used several times.
    edges: list[tuple[HloInstruction, HloInstruction, int]]
    hidden: dict[int, int]  # instruction id -> neighbours not in `nodes`
    within: int

    @property
    def capped(self) -> bool:
        """The node limit left out instructions within the radius."""
        return self.within > len(self.nodes)


def _neighbours(ins: HloInstruction) -> list[HloInstruction]:
    """Operands (in operand order), then users (in computation order), each once."""
    return list({n.id: n for n in [*ins.operands, *ins.users]}.values())


def neighbourhood(op: HloInstruction, radius: int, max_nodes: int) -> Neighbourhood:
    distance = {op.id: 0}
    reached, frontier = [op], [op]
    for step in range(1, radius + 1):
        ring = [n for ins in frontier for n in _neighbours(ins) if distance.setdefault(n.id, step) == step]
        frontier = list({n.id: n for n in ring}.values())
        reached += frontier
    kept = reached[:max_nodes]
    kept_ids = {ins.id for ins in kept}
    edges = []
    for user in kept:
        drawn: set[int] = set()
        for position, operand_id in enumerate(user.operand_ids):
            if operand_id in kept_ids and operand_id not in drawn:
                drawn.add(operand_id)
                edges.append((user.computation.by_id[operand_id], user, position))
    hidden = {ins.id: sum(n.id not in kept_ids for n in _neighbours(ins)) for ins in kept}
    return Neighbourhood(op, [(ins, distance[ins.id]) for ins in kept], edges, hidden, len(reached))


def _quote(text: str) -> str:
    """A DOT double-quoted string (its `\\n` stays a line break)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _cut(text: str) -> str:
    return text if len(text) <= MAX_LABEL_CHARS else text[: MAX_LABEL_CHARS - 1] + "…"


def node_label(ins: HloInstruction, hidden: int) -> str:
    """Name, then opcode (with a fusion's kind) and shape without layout, then what is left out."""
    opcode = f"{ins.opcode} {ins.fusion_kind}" if ins.opcode == "fusion" and ins.fusion_kind else ins.opcode
    lines = [_cut(ins.name), _cut(f"{opcode} {ins.shape.text(layout=False)}")]
    return "\n".join(lines + ([f"+{hidden} more"] if hidden else []))


def dot(hood: Neighbourhood) -> str:
    """The neighbourhood as a DOT digraph: node ids are instruction names (the SVG `<title>` the
    view reads to walk the graph), the op filled amber, nodes with neighbours left out dashed."""
    lines = [
        "digraph hlo {",
        '  graph [rankdir=TB, bgcolor="transparent", nodesep=0.25, ranksep=0.35, fontname="Helvetica"];',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, margin="0.1,0.04",'
        ' color="#94a3b8", fillcolor="#ffffff"];',
        '  edge [color="#64748b", arrowsize=0.6];',
    ]
    for ins, _ in hood.nodes:
        hidden = hood.hidden[ins.id]
        style = _OP_STYLE if ins is hood.op else f'fillcolor="{_FILLS.get(ins.opcode, "#ffffff")}"'
        dashed = ', style="rounded,filled,dashed"' if hidden and ins is not hood.op else ""
        lines.append(f"  {_quote(ins.name)} [label={_quote(node_label(ins, hidden))}, {style}{dashed}];")
    for operand, user, _ in hood.edges:
        lines.append(f"  {_quote(operand.name)} -> {_quote(user.name)};")
    lines.append("}")
    return "\n".join(lines) + "\n"
