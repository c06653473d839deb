"""Graph log parser and node extraction: the real 2.9 text dump, and hand-written X10, 2019, dot, HLO, StableHLO logs."""

from __future__ import annotations

import msgspec
import pytest

from profscope.errors import UnreadableProfile
from profscope.formats.xla import graph_text as xla_graph_text
from profscope.formats.xla import graphs as xla_graphs
from profscope.formats.xla.graph_text import Node
from profscope.tools.xla import graph_diff as xla_graph_diff
from tests.support import DATA_DIR

DATA = DATA_DIR / "xla"
RUN = DATA / "pytorch_xla_cpu_recompile"


def compare(a: list[Node], b: list[Node]) -> dict:
    """The comparison as the builtins of its JSON."""
    return msgspec.to_builtins(xla_graph_diff.compare(a, b))


def test_real_text_dump() -> None:
    parsed = xla_graphs.read(str(RUN / "xla_graphs.txt.0"))
    assert parsed.ordinal == 0
    assert parsed.skipped == {}
    assert len(parsed.records) == 16  # = ExecuteComputation counter: one record per execution
    first = parsed.records[0]
    assert first.header == "ScheduleSyncTensorsGraph"
    assert first.graph_hash == "91f4b721e71712c9c7de0e8d37b4f2ca"
    assert len(first.root_hashes) == 15
    assert first.format == "text" and first.num_nodes == 122 and first.complete
    assert first.frame_kind == "python" and first.frames[-1].line == 23
    assert first.ends_step
    assert [r.step for r in parsed.records] == [0, 1, 2, 2, 2, 3, 4, 5, 5, 5, 6, 7, 8, 8, 8, 9]
    assert len({r.graph_hash for r in parsed.records}) == 9
    # equal graph hashes, different text: IR scope names (`scope=aten::mul.6`) count up between traces
    assert len(parsed.bodies) == 14
    body = parsed.body(parsed.records[2])
    assert body.startswith("IR {") and body.endswith("}")
    assert "aten::eq(%12, %0)" in body
    nodes = xla_graph_text.parse_nodes("text", body)
    assert len(nodes) == 14 == parsed.records[2].num_nodes
    eq = nodes[13]
    assert (eq.op, eq.shape, eq.operands) == ("aten::eq", "pred[8]{0}", (12, 0))
    assert eq.location is not None and (eq.location.file, eq.location.line) == ("train.py", 21)


# Hand-written in the format of X10's ir_dump_util.cpp / debug_util.cpp (XLA_LOG_GRAPH_CHANGES=1).
X10 = (DATA / "x10_graph_changes.txt").read_text()


def test_x10_swift_frames_and_graph_changes() -> None:
    parsed = xla_graphs.read("x10_graphs.txt", text=X10)
    assert parsed.skipped == {}
    first, second = parsed.records
    assert first.frame_kind == "swift"
    assert [f.function for f in first.frames] == ["$s6Models5train4stepyyF", "main"]
    assert first.root_hashes == ["8f1a2b", "77cc01"]
    assert first.graph_hash is None and first.key.startswith("sha1:")
    assert first.change is not None and first.change.kind == "new_structure"
    change = second.change
    assert change is not None and change.kind == "different_shape"
    assert (change.current_shape, change.previous_shape) == ("f32[6,4]", "f32[8,4]")
    assert change.node == "%0 = xla::device_data(), device=CPU:0"
    assert [f.function for f in change.current_trace] == ["$s6Models10DataLoader4nextyyF", "main"]
    assert len(change.previous_trace) == 2
    assert first.step is None  # Swift frames name no mark_step: steps are unknown
    compared = compare(
        xla_graph_text.parse_nodes("text", parsed.body(first)),
        xla_graph_text.parse_nodes("text", parsed.body(second)),
    )
    assert compared["same_structure"]
    assert [(c["shape_a"], c["shape_b"], c["origin"]) for c in compared["shape_changes"]] == [
        ("f32[8,4]", "f32[6,4]", True),
        ("f32[8,2]", "f32[6,2]", False),
    ]


OLD_UNMARKED = """\
[SyncTensorsGraph]
TensorsGraphInfo:
  train_loop_fn (/src/train.py:44)
  <module> (/src/train.py:60)

IR {
  %0 = f32[] prim::Constant(), value=1
  %1 = f32[3] xla::device_data(), device=TPU:0
  %2 = f32[3] aten::add(%1, %0), ROOT=0
}

[SyncTensorsGraph]
TensorsGraphInfo:
  mark_step (/venv/lib/python3.6/site-packages/torch_xla/core/xla_model.py:405)
  train_loop_fn (/src/train.py:48)

digraph G {
  node0 [label="prim::Constant\\nf32[]\\nvalue=1"]
  node1 [label="xla::device_data\\nf32[3]\\ndevice=TPU:0"]
  node2 [label="aten::add\\nf32[3]\\nROOT=0"]
  node1 -> node2 [label="i=0"]
  node0 -> node2 [label="i=1"]
}

[GetTensorsOpByOp]
TensorsGraphInfo:
  item (/src/train.py:50)

HloModule SyncTensorsGraph.6

ENTRY %SyncTensorsGraph.6 (p0.1: f32[3]) -> (f32[3]) {
  %p0.1 = f32[3]{0} parameter(0), metadata={op_type="xla__device_data" op_name="xla__device_data" source_file="/src/train.py" source_line=44}
  %constant.2 = f32[] constant(1)
  %broadcast.3 = f32[3]{0} broadcast(f32[] %constant.2), dimensions={}
  %add.4 = f32[3]{0} add(f32[3]{0} %p0.1, f32[3]{0} %broadcast.3), metadata={op_type="aten__add" op_name="aten__add" source_file="/src/train.py" source_line=45}
  ROOT %tuple.5 = (f32[3]{0}) tuple(f32[3]{0} %add.4)
}
"""


def test_2019_records_without_markers_in_three_formats() -> None:
    parsed = xla_graphs.read("old.txt", text=OLD_UNMARKED)
    assert parsed.skipped == {}
    text, dot, hlo = parsed.records
    assert [r.format for r in parsed.records] == ["text", "dot", "hlo"]
    assert [r.num_nodes for r in parsed.records] == [3, 3, 5]
    assert all(r.complete for r in parsed.records)
    assert [r.header for r in parsed.records] == ["SyncTensorsGraph", "SyncTensorsGraph", "GetTensorsOpByOp"]
    assert [r.step for r in parsed.records] == [0, 0, 1]  # the mark_step record ends step 0
    assert parsed.body(dot).startswith("digraph G {") and parsed.body(dot).endswith("}")

    dot_nodes = xla_graph_text.parse_nodes("dot", parsed.body(dot))
    assert [(n.op, n.shape) for n in dot_nodes] == [
        ("prim::Constant", "f32[]"),
        ("xla::device_data", "f32[3]"),
        ("aten::add", "f32[3]"),
    ]
    assert dot_nodes[2].operands == (1, 0)
    assert dot_nodes[0].attrs == "value=1"

    hlo_nodes = xla_graph_text.parse_nodes("hlo", parsed.body(hlo))
    assert [n.op for n in hlo_nodes] == ["parameter", "constant", "broadcast", "add", "tuple"]
    assert hlo_nodes[3].operands == (0, 2)
    assert hlo_nodes[3].location is not None and hlo_nodes[3].location.line == 45
    assert hlo_nodes[4].shape == "(f32[3]{0})"
    # the same computation in IR text and dot form has the same structure
    text_nodes = xla_graph_text.parse_nodes("text", parsed.body(text))
    assert xla_graph_diff.structure_key(text_nodes) == xla_graph_diff.structure_key(dot_nodes)


DYNAMO_STABLEHLO = """\
[dynamo]
TensorsGraphInfo:
  extract_compiled_graph (/venv/lib/python3.10/site-packages/torch_xla/_dynamo/dynamo_bridge.py:500)
  fn (/src/app.py:10)

Root Hashes: (aa11)

## BEGIN_GRAPH
module @IrToHlo.8 attributes {mhlo.cross_program_prefetches = [], mhlo.is_dynamic = false} {
  func.func @main(%arg0: tensor<4xf32>) -> tuple<tensor<4xf32>> {
    %0 = stablehlo.constant dense<2.000000e+00> : tensor<4xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<4xf32>
    %2 = stablehlo.tuple %1 {xla_shape = "(f32[4]{0})"} : tuple<tensor<4xf32>>
    return %2 : tuple<tensor<4xf32>>
  }
}

Graph Hash: 5e5e

## END_GRAPH


#OUTPUT_SHARDING_BEGIN

f32[4] {replicated}

#OUTPUT_SHARDING_END

[ScheduleSyncTensorsGraph]
TensorsGraphInfo:
  sync (/venv/lib/python3.10/site-packages/torch_xla/torch_xla.py:87)

Root Hashes: (bb22)

## BEGIN_GRAPH
IR {
  %0 = f32[4]{0} xla::device_data(), xla_shape=f32[4]{0}, ROOT=0
"""


def test_dynamo_stablehlo_sharding_and_truncation() -> None:
    parsed = xla_graphs.read("dyn.txt.1", text=DYNAMO_STABLEHLO)
    assert parsed.ordinal == 1
    dynamo, truncated = parsed.records
    assert dynamo.header == "dynamo" and dynamo.format == "stablehlo"
    assert dynamo.graph_hash == "5e5e" and dynamo.root_hashes == ["aa11"]
    assert dynamo.output_sharding == ["f32[4] {replicated}"]
    nodes = xla_graph_text.parse_nodes("stablehlo", parsed.body(dynamo))
    assert [n.op for n in nodes] == ["stablehlo.constant", "stablehlo.multiply", "stablehlo.tuple"]
    assert nodes[1].operands == (-1, 0) and nodes[1].shape == "tensor<4xf32>"
    assert not truncated.complete and truncated.num_nodes == 1
    assert parsed.skipped == {"graph without END_GRAPH (kept, truncated)": 1}


def test_no_record_is_unreadable() -> None:
    with pytest.raises(UnreadableProfile, match="g.txt.*no PyTorch/XLA graph record"):
        xla_graphs.read("g.txt", text="IR {\n}\n")


def test_compare_reports_added_and_removed_nodes() -> None:
    a = xla_graph_text.parse_nodes(
        "text", "IR {\n  %0 = f32[2] xla::device_data()\n  %1 = f32[2] aten::neg(%0), ROOT=0\n}"
    )
    b = xla_graph_text.parse_nodes(
        "text",
        "IR {\n  %0 = f32[2] xla::device_data()\n  %1 = f32[2] aten::neg(%0)\n  %2 = f32[2] aten::exp(%1), ROOT=0\n}",
    )
    result = compare(a, b)
    assert not result["same_structure"]
    assert [n["op"] for n in result["added"]] == ["aten::exp"]
    assert result["removed"] == []
    assert [r["kind"] for r in result["rows"]] == ["equal", "changed", "added"]


def test_compare_folds_long_identical_runs() -> None:
    body = "IR {\n" + "".join(f"  %{i} = f32[2] aten::neg(%{i - 1})\n" for i in range(1, 40)) + "}"
    a = xla_graph_text.parse_nodes("text", "IR {\n  %0 = f32[2] xla::device_data()\n" + body[5:])
    b = xla_graph_text.parse_nodes("text", "IR {\n  %0 = f32[3] xla::device_data()\n" + body[5:])
    rows = compare(a, b)["rows"]
    assert rows[0]["kind"] == "changed"
    assert rows[-1] == {"kind": "same", "count": 39 - 3} or rows[4] == {"kind": "same", "count": 39 - 3}
    assert sum(r.get("count", 1) for r in rows) == 40
