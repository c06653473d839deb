"""The `hlo` route (tools/trace/hlo.py, hlo_graph.py) through TensorBoard's WSGI app on the corpus
XPlanes that carry HloProtos (MI300 JAX conv, TPU v6e inference, the JAX CPU demo capture): the
instruction text against XLA's own and the proto's metadata, operand and user edges and distances
against an independent walk of the proto's ids (test_hlo_proto.raw_computations), the radius and
node limits, fused computations, the whole-module text, ops named by trace events, the 400s and
404s, and the profiles without HLO modules (a TensorFlow XPlane, a PyTorch trace).
"""

from __future__ import annotations

import collections
import shutil
import time
import urllib.parse

import pytest

from profscope.formats.common import wire
from profscope.formats.xplane.hlo import signed_program_id
from profscope.tools.trace import hlo
from tests.formats.hlo.test_hlo_proto import FILES, protos, raw_computations
from tests.support import DATA_DIR

BASE = "/data/plugin/profscope"
DATA = DATA_DIR
TF_XPLANE = DATA / "xplane" / "gpu_8x_tf_training.xplane.pb"
PYTORCH_TRACE = DATA / "trace_view" / "logdir" / "h100_bert_small" / "bert_small.pt.trace.json.gz"
TPU_PROGRAM = 12190760917235803885  # jit_f, as its events name it (unsigned)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    """One server over a logdir of one run per profile, every trace ingested before the tests."""
    import argparse

    from tensorboard.backend import application
    from tensorboard.plugins import base_plugin
    from werkzeug.test import Client

    from profscope.plugin import ProfscopePlugin

    root = tmp_path_factory.mktemp("hlo") / "logdir"
    for run, source in {**FILES, "tf": TF_XPLANE}.items():
        folder = root / run / "plugins" / "profile" / "session"
        folder.mkdir(parents=True)
        shutil.copy(source, folder / "host.xplane.pb")
    (root / "pytorch").mkdir()
    shutil.copy(PYTORCH_TRACE, root / "pytorch" / PYTORCH_TRACE.name)
    flags = argparse.Namespace(profscope_cache_dir=str(root.parent / "cache"))
    plugin = ProfscopePlugin(base_plugin.TBContext(logdir=str(root), flags=flags))
    http = Client(application.TensorBoardWSGI([plugin]))
    for run in [*FILES, "tf", "pytorch"]:
        assert ready(http, "trace/meta", **subject(http, run)).status_code == 200
    return http


def ready(http, route: str, timeout_s: float = 120, **params):
    """The answer once the trace is ingested (202 until then)."""
    deadline = time.monotonic() + timeout_s
    while True:
        res = http.get(f"{BASE}/{route}?{urllib.parse.urlencode(params)}")
        if res.status_code != 202:
            return res
        assert time.monotonic() < deadline
        time.sleep(0.05)


def subject(http, run: str) -> dict[str, str]:
    """run, session and host of a run's only host, as /runs names them."""
    entry = next(r for r in http.get(f"{BASE}/runs").get_json()["runs"] if r["name"] == run)
    session = entry["sessions"][0]
    return {"run": run, "session": session["name"], "host": session["hosts"][0]["name"]}


def get(http, run: str, **params):
    return ready(http, "hlo", **subject(http, run), **params)


def answer(http, run: str, **params) -> dict:
    res = get(http, run, **params)
    assert res.status_code == 200, res.get_data(as_text=True)
    return res.get_json()


# -- an independent reading of the proto --------------------------------------------------------------
def raw_module(key: str, program: int) -> dict[str, dict]:
    """Instruction records (name, opcode, id, operands, computation) by name, from the raw fields."""
    out = {}
    for comp in raw_computations(protos(key)[program]):
        for record in comp["instructions"]:
            out[record["name"]] = record | {"computation": comp["name"]}
    return out


def distances(records: dict[str, dict], op: str, radius: int) -> dict[str, int]:
    """BFS over operand and user edges of the op's computation, from the raw ids."""
    comp = records[op]["computation"]
    by_id = {r["id"]: r for r in records.values() if r["computation"] == comp}
    neighbours = collections.defaultdict(set)
    for r in by_id.values():
        for operand in r["operands"]:
            neighbours[r["name"]].add(by_id[operand]["name"])
            neighbours[by_id[operand]["name"]].add(r["name"])
    seen, frontier = {op: 0}, [op]
    for step in range(1, radius + 1):
        frontier = [n for f in frontier for n in sorted(neighbours[f]) if n not in seen]
        for n in frontier:
            seen.setdefault(n, step)
    return seen


def metadata(key: str, program: int, name: str) -> tuple[str, str, int]:
    """(op_name, source_file, source_line) of an instruction's OpMetadata, read field by field."""
    data = protos(key)[program]
    fields = {}
    for comp_start, comp_end in _children(data, *_children(data, 0, len(data), 1)[0], 3):
        for start, end in _children(data, comp_start, comp_end, 2):
            ins = {n: (wt, a, b) for n, wt, a, b in wire.iter_fields(data, start, end)}
            if data[ins[1][1] : ins[1][2]].decode() == name:
                fields = {n: (wt, a, b) for n, wt, a, b in wire.iter_fields(data, ins[7][1], ins[7][2])}
    text = {n: data[fields[n][1] : fields[n][2]].decode() if n in fields else "" for n in (2, 3)}
    return text[2], text[3], wire.as_int64(fields[4][1]) if 4 in fields else 0


def _children(data: bytes, start: int, end: int, number: int) -> list[tuple[int, int]]:
    return [(a, b) for n, wt, a, b in wire.iter_fields(data, start, end) if n == number and wt == wire.LEN]


# -- the instruction ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("run", "program_id", "op", "expected"),
    [  # XLA's HloInstruction::ToString of the same instructions (test_hlo_proto.test_text_is_what_xla_prints)
        ("tpu", 11287434908481120160, "copy", "%copy = f32[]{:T(128)S(6)} copy(f32[]{:T(128)} %Arg_0.1)"),
        (
            "mi300",
            15,
            "get-tuple-element.2.0",
            "%get-tuple-element.2.0 = bf16[1,5120,34,31,53]{4,3,2,1,0} get-tuple-element((bf16[1,5120,34,31,53]"
            "{4,3,2,1,0}, u8[7150336]{0}) %cudnn-conv.1), index=0",
        ),
        (  # the demo's program 2 is stored under metadata id 4: its events name the module's own id
            "cpu",
            2,
            "concatenate.0",
            "%concatenate.0 = u32[2]{0} concatenate(u32[1]{0} %bitcast.3, u32[1]{0} %bitcast.2), dimensions={0}, "
            'metadata={op_name="jit(_threefry_seed)/concatenate" stack_frame_id=2}',
        ),
    ],
)
def test_the_instruction_text_is_what_xla_prints(client, run, program_id, op, expected) -> None:
    body = answer(client, run, program_id=program_id, op=op)
    assert (body["kind"], body["op"], body["text"], body["program_id"]) == (
        "op",
        op,
        expected,
        str(program_id),
    )


@pytest.mark.parametrize(
    ("run", "key", "program_id", "op"),
    [
        ("mi300", 15, 15, "cudnn-conv.1"),
        ("tpu", signed_program_id(TPU_PROGRAM), TPU_PROGRAM, "broadcast_add_fusion.2"),
        ("cpu", 8, 14, "dot.3"),
    ],
)
def test_module_metadata_and_opcode_are_the_protos(client, run, key, program_id, op) -> None:
    body = answer(client, run, program_id=program_id, op=op)
    records = raw_module(run, key)
    op_name, source_file, source_line = metadata(run, key, op)
    assert body["opcode"] == records[op]["opcode"] and body["computation"] == records[op]["computation"]
    assert body["op_name"] == op_name
    assert body["source"] == (f"{source_file}:{source_line}" if source_file else "")
    assert f'op_name="{op_name}"' in body["text"]
    assert body["module"] == {"mi300": "jit_forward_3d_conv", "tpu": "jit_f", "cpu": "jit_train_step"}[run]


# -- the graph ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("run", "key", "program_id", "op"),
    [
        ("mi300", 15, 15, "cudnn-conv.1"),
        ("mi300", 9, 9, "iota.54"),
        ("tpu", signed_program_id(TPU_PROGRAM), TPU_PROGRAM, "copy-done"),
        ("cpu", 8, 14, "dot.3"),
    ],
)
@pytest.mark.parametrize("radius", [0, 1, 2, 3])
def test_nodes_and_edges_are_the_protos_within_the_radius(client, run, key, program_id, op, radius) -> None:
    body = answer(client, run, program_id=program_id, op=op, radius=radius)
    records = raw_module(run, key)
    within = distances(records, op, radius)
    nodes = {n["name"]: n for n in body["nodes"]}
    assert body["nodes"][0]["name"] == op and body["radius"] == radius
    assert body["capped"] is (len(within) > hlo.MAX_GRAPH_NODES)
    if not body["capped"]:
        assert {name: n["distance"] for name, n in nodes.items()} == within
    assert all(within[name] == n["distance"] <= radius for name, n in nodes.items())
    assert [n["distance"] for n in body["nodes"]] == sorted(n["distance"] for n in body["nodes"])
    by_id = {r["id"]: name for name, r in records.items() if r["computation"] == records[op]["computation"]}
    expected = {
        (by_id[operand], user, r["operands"].index(operand))
        for user, r in records.items()
        if user in nodes
        for operand in r["operands"]
        if by_id[operand] in nodes
    }
    assert {(e["operand"], e["user"], e["position"]) for e in body["edges"]} == expected
    for name, node in nodes.items():
        users = {by_id[r["id"]] for r in records.values() if records[name]["id"] in r["operands"]}
        neighbours = {by_id[o] for o in records[name]["operands"]} | users
        assert node["hidden"] == len(neighbours - set(nodes)), name
        assert node["opcode"] == records[name]["opcode"]


def test_the_dot_draws_every_node_and_edge_with_the_op_highlighted(client) -> None:
    body = answer(client, "mi300", program_id=15, op="cudnn-conv.1", radius=2)
    dot = body["dot"]
    assert dot.startswith("digraph hlo {") and dot.rstrip().endswith("}")
    node_lines = [line.strip() for line in dot.splitlines() if "[label=" in line]
    assert [line.split(" [")[0] for line in node_lines] == [f'"{n["name"]}"' for n in body["nodes"]]
    assert "penwidth=2" in node_lines[0] and all("penwidth" not in line for line in node_lines[1:])
    edge_lines = {line.strip().rstrip(";") for line in dot.splitlines() if "->" in line}
    assert edge_lines == {f'"{e["operand"]}" -> "{e["user"]}"' for e in body["edges"]}
    for node, line in zip(body["nodes"], node_lines, strict=True):
        assert ("dashed" in line) is (node["hidden"] > 0 and node["distance"] > 0)
        assert f"+{node['hidden']} more" in line if node["hidden"] else "more" not in line


def test_a_big_neighbourhood_is_capped_and_says_so(client) -> None:
    records = raw_module("mi300", 9)
    op = next(name for name in records if len(distances(records, name, 6)) > hlo.MAX_GRAPH_NODES)
    body = answer(client, "mi300", program_id=9, op=op, radius=6)
    within = distances(records, op, 6)
    assert body["capped"] and len(body["nodes"]) == hlo.MAX_GRAPH_NODES
    assert (
        body["note"]
        == f"showing the {hlo.MAX_GRAPH_NODES} nearest of {len(within)} instructions within 6 edges"
    )
    nearest = sorted(within.values())[: hlo.MAX_GRAPH_NODES]
    assert sorted(n["distance"] for n in body["nodes"]) == nearest
    assert "note" not in answer(client, "mi300", program_id=9, op=op, radius=1)


# -- fusions, callers, the whole module ---------------------------------------------------------------
def test_a_fusion_answers_its_fused_computation(client) -> None:
    body = answer(client, "tpu", program_id=TPU_PROGRAM, op="broadcast_add_fusion.2")
    records = raw_module("tpu", signed_program_id(TPU_PROGRAM))
    fused = [name for name, r in records.items() if r["computation"] == "fused_computation.2"]
    assert body["fusion"]["name"] == "fused_computation.2"
    lines = body["fusion"]["instructions"]
    assert [line.removeprefix("ROOT ").split(" = ")[0] for line in lines] == [f"%{n}" for n in fused]
    assert [line.startswith("ROOT ") for line in lines] == [n == "add.5" for n in fused]
    assert "fusion" not in answer(client, "tpu", program_id=TPU_PROGRAM, op="copy-done")


def test_a_fused_instruction_names_the_fusion_that_calls_it(client) -> None:
    body = answer(client, "tpu", program_id=TPU_PROGRAM, op="add.5")
    assert (body["computation"], body["callers"]) == ("fused_computation.2", ["broadcast_add_fusion.2"])
    assert {n["name"] for n in body["nodes"]} == {"add.5", "param_0.2", "broadcast.9", "constant.9"}
    assert answer(client, "tpu", program_id=TPU_PROGRAM, op="copy-done")["callers"] == []


def test_full_answers_the_whole_module_as_text(client) -> None:
    body = answer(client, "tpu", program_id=TPU_PROGRAM, op="copy-done", full=1)
    listing = body["module_text"]
    text = listing["text"]
    assert (listing["shown"], listing["total"], listing["truncated"]) == (31, 31, False)
    assert text.startswith("HloModule jit_f\n\n%fused_computation (param_0: f32[5,1024,1024,256]) -> ")
    assert "\nENTRY %main.22_spmd (param: f32[5,1024,1024,256], " in text
    assert f"\n  {body['text']}\n" in text
    assert "\n  ROOT %tuple.1 = " in text and text.rstrip().endswith("}")
    assert text.index("%fused_computation.2 (") < text.index("ENTRY %main.22_spmd")
    assert "module_text" not in answer(client, "tpu", program_id=TPU_PROGRAM, op="copy-done")


def test_the_module_text_is_capped(monkeypatch, client) -> None:
    monkeypatch.setattr(hlo, "MAX_MODULE_INSTRUCTIONS", 5)
    listing = answer(client, "tpu", program_id=TPU_PROGRAM, op="copy-done", full=1)["module_text"]
    assert (listing["shown"], listing["total"], listing["truncated"]) == (5, 31, True)
    assert listing["text"].count("\n  %") + listing["text"].count("\n  ROOT %") == 5


# -- ops named by trace events ------------------------------------------------------------------------
def first_match(http, run: str, query: str, track_name: str | None = None) -> dict:
    """The first event matching `query` (on a track of that name, if given)."""
    who = subject(http, run)
    tracks = {t["id"]: t["name"] for t in ready(http, "trace/meta", **who).get_json()["tracks"]}
    matches = ready(http, "trace/search", **who, q=query, limit=1000).get_json()["matches"]
    return next(m for m in matches if track_name is None or tracks[m["track"]].startswith(track_name))


@pytest.mark.parametrize(
    ("run", "query", "track", "program_id", "op"),
    [
        ("tpu", "broadcast_add_fusion.2", "XLA Ops", str(TPU_PROGRAM), "broadcast_add_fusion.2"),
        ("tpu", "%copy-start.1 =", "Async XLA Ops", str(TPU_PROGRAM), "copy-start.1"),  # named "async-copy"
        ("mi300", "loop_transpose_fusion", "Stream", "15", "loop_transpose_fusion"),  # kernel: its hlo_op
        ("mi300", "cudnn-conv.1", "py_xla_execute", "15", "cudnn-conv.1"),  # host thunk: no program_id
        ("mi300", "cudnn-conv.1", "XLA Ops", "15", "cudnn-conv.1"),  # derived line: no program_id
        ("cpu", "dot.3", "tf_XLAPjRtCpuClient", "14", "dot.3"),
    ],
)
def test_an_event_names_its_op(client, run, query, track, program_id, op) -> None:
    event = first_match(client, run, query, track)
    body = answer(client, run, event=event["id"])
    assert (body["kind"], body["program_id"], body["op"], body["host_index"]) == ("op", program_id, op, 0)
    assert body == answer(client, run, program_id=program_id, op=op)


def test_an_event_that_names_no_op_says_so(client) -> None:
    event = first_match(client, "tpu", "XLA::TPU emitting for broadcast_add_fusion.2")
    body = answer(client, "tpu", event=event["id"])
    assert body == {
        "kind": "not-an-op",
        "subject": "run 'tpu' session 'session'",
        "host_index": 0,
        "reason": f"event {event['id']} ('XLA::TPU emitting for broadcast_add_fusion.2') names no "
        "instruction of the profile's HLO modules",
    }


# -- errors and profiles without HLO ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({"program_id": 99, "op": "x"}, 404, "no XLA program 99 in the profile (it holds 8 programs)"),
        (
            {"program_id": 15, "op": "nope"},
            404,
            "no op 'nope' in XLA program 15 (module 'jit_forward_3d_conv')",
        ),
        ({"event": 4_000_000_000}, 404, "no event with id 4000000000"),
        ({"program_id": 15, "op": "x", "host_index": 3}, 404, "no host 3"),
        ({"program_id": 15}, 400, "missing query parameter 'op'"),
        ({"op": "x"}, 400, "missing query parameter 'program_id'"),
        ({"program_id": "-1", "op": "x"}, 400, "'program_id' must be an unsigned 64-bit integer, got '-1'"),
        ({"program_id": str(1 << 64), "op": "x"}, 400, "'program_id' must be an unsigned 64-bit integer"),
        ({"program_id": 15, "op": "x", "radius": 7}, 400, "'radius' must be within 0..6"),
        ({"program_id": 15, "op": "x", "full": 2}, 400, "'full' must be 0 or 1"),
    ],
)
def test_what_is_missing_or_malformed_is_named(client, params, status, message) -> None:
    res = get(client, "mi300", **params)
    assert res.status_code == status and message in res.get_data(as_text=True), res.get_data(as_text=True)


@pytest.mark.parametrize("run", ["tf", "pytorch"])
def test_profiles_without_hloprotos_answer_no_hlo_module(client, run) -> None:
    who = subject(client, run)
    expected = {
        "kind": "no-module",
        "subject": f"run {run!r} session {who['session']!r}",
        "host_index": 0,
        "reason": "the profile carries no HLO module",
    }
    assert answer(client, run, program_id=1, op="fusion") == expected
    event = ready(client, "trace/search", **who, q="a", limit=1).get_json()["matches"][0]
    assert answer(client, run, event=event["id"]) == expected
