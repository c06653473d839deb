"""The `memory` route through the plugin: 202 while the trace is read, the answer once it is,
"memory not observed" for a real trace recorded without `profile_memory=True` (the tab still applies
to it), and the compiler's view of the XLA programs of real XPlanes (`&program=`): the JAX CPU capture
of tests/data/memory and the TF GPU XPlane, whose profile carries no HloProto; and the allocator of
the TensorFlow CPU XPlane of tests/data/memory, read from its `MemoryAllocation` events."""

from __future__ import annotations

import argparse
import shutil
import time

import pytest
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from profscope.plugin import ProfscopePlugin
from profscope.tools.memory import routes
from tests.support import DATA_DIR

BASE = "/data/plugin/profscope"
RUNS = {
    "peak": DATA_DIR / "memory" / "peak_backward.pt.trace.json.gz",
    "plain": DATA_DIR / "overview" / "slow_input.pt.trace.json.gz",
}
XPLANES = {
    "jax": DATA_DIR / "memory" / "jax_cpu_train_step.xplane.pb",
    "tf": DATA_DIR / "xplane" / "gpu_8x_tf_training.xplane.pb",
    "tfmem": DATA_DIR / "memory" / "tf_keras_cpu_bfc.xplane.pb",
    "tfplain": next((DATA_DIR / "jobs" / "tf_custom_loop").rglob("*.xplane.pb")),
    "tpu": DATA_DIR / "xplane" / "tpu_v6e_inference.xplane.pb",
}


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> Client:
    root = tmp_path_factory.mktemp("memory")
    for run, source in RUNS.items():
        (root / "logdir" / run).mkdir(parents=True)
        shutil.copy(source, root / "logdir" / run / f"worker0.{source.name}")
    for run, source in XPLANES.items():
        (root / "logdir" / run / "plugins" / "profile" / "session").mkdir(parents=True)
        shutil.copy(source, root / "logdir" / run / "plugins" / "profile" / "session" / "host.xplane.pb")
    context = base_plugin.TBContext(
        logdir=str(root / "logdir"), flags=argparse.Namespace(profscope_cache_dir=str(root / "cache"))
    )
    return Client(application.TensorBoardWSGI([ProfscopePlugin(context)]))


def subject(client: Client, run: str) -> str:
    runs = client.get(f"{BASE}/runs").get_json()["runs"]
    (session,) = next(r for r in runs if r["name"] == run)["sessions"]
    (host,) = session["hosts"]
    assert "memory" in host["tools"]
    return f"run={run}&session={session['name']}&host={host['name']}"


def memory(client: Client, run: str, extra: str = "", timeout_s: float = 120) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        res = client.get(f"{BASE}/memory?{subject(client, run)}{extra}")
        if res.status_code != 202:
            assert res.status_code == 200, res.get_data(as_text=True)
            return res.get_json()
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_memory_profile_answers_its_allocator(client: Client) -> None:
    answer = memory(client, "peak")
    assert answer["observed"] and "reason" not in answer
    (device,) = answer["devices"]
    assert device["label"] == "CPU" and device["peak"]["step"] == "ProfilerStep#3"
    assert answer["step_source"].startswith("ProfilerStep#N")
    # the peak's ids are the timeline's event ids: the trace route finds the [memory] event and its op
    event = client.get(f"{BASE}/trace/event?{subject(client, 'peak')}&id={device['peak']['memory_event_id']}")
    assert event.get_json()["name"] == "[memory]"
    op = client.get(f"{BASE}/trace/event?{subject(client, 'peak')}&id={device['peak']['op_event_id']}")
    assert op.get_json()["name"] == device["peak"]["op"]


def test_a_trace_without_memory_events_says_how_to_record_them(client: Client) -> None:
    answer = memory(client, "plain")
    assert answer == {
        "observed": False,
        "reason": routes.NOT_OBSERVED,
        "devices": [],
        "warnings": [],
        "programs": [],
    }
    assert routes.NOT_OBSERVED == "memory not observed: record with profile_memory=True"


def test_an_xplane_with_hlo_protos_shows_its_programs_largest_peak_first(client: Client) -> None:
    answer = memory(client, "jax")
    assert not answer["observed"] and answer["reason"] == routes.NOT_OBSERVED_XLA
    programs = answer["programs"]
    assert len(programs) == 15 and programs[0]["name"] == "jit_train_step"
    assert [p["peak_bytes"] for p in programs] == sorted((p["peak_bytes"] for p in programs), reverse=True)
    chosen = answer["program"]
    assert (chosen["name"], chosen["program_id"]) == ("jit_train_step", programs[0]["program_id"])
    assert (
        chosen["peak_bytes"]
        == programs[0]["peak_bytes"]
        == sum(b["size_bytes"] for b in chosen["live_at_peak"])
    )
    timeline = chosen["timeline"]  # its allocation timeline: each temporary row names its box
    boxes = {b["timeline_box"] for b in chosen["live_at_peak"] if b["kind"] == "temporary"}
    assert timeline["boxes"] == 4 and boxes == {i for i, live in enumerate(timeline["at_peak"]) if live}


def test_the_program_parameter_picks_a_program_and_is_checked(client: Client) -> None:
    programs = memory(client, "jax")["programs"]
    other = next(p for p in programs if p["name"] == "jit_dynamic_slice")
    answer = memory(client, "jax", f"&program={other['program_id']}")
    assert answer["program"]["name"] == "jit_dynamic_slice"
    assert answer["program"]["peak_bytes"] == other["peak_bytes"]
    bad = client.get(f"{BASE}/memory?{subject(client, 'jax')}&program=-3")
    assert bad.status_code == 400 and "program" in bad.get_data(as_text=True)
    missing = client.get(f"{BASE}/memory?{subject(client, 'jax')}&program=999999")
    assert missing.status_code == 404


def test_an_xplane_without_hlo_protos_has_no_programs(client: Client) -> None:
    answer = memory(client, "tf")
    assert answer["programs"] == [] and "program" not in answer and "programs_reason" not in answer


def test_a_tensorflow_xplane_with_allocator_events_answers_its_allocator(client: Client) -> None:
    answer = memory(client, "tfmem")
    assert answer["observed"] and "reason" not in answer
    (device,) = answer["devices"]
    assert device["label"] == "bfc_cpu_allocator_for_gpu" and device["peak"]["allocated_bytes"] == 886_528
    assert answer["programs"] == []


def test_an_xplane_without_memory_data_says_what_records_it(client: Client) -> None:
    """TensorFlow's default CPU allocator writes no allocator events and the job compiled no XLA
    program: the reason names what would record memory in an XPlane, not PyTorch's flag."""
    answer = memory(client, "tfplain")
    assert not answer["observed"] and answer["reason"] == routes.NOT_OBSERVED_XPLANE
    assert answer["programs"] == [] and "TF_CPU_ALLOCATOR_USE_BFC=true" in answer["reason"]


def test_a_programs_instructions_link_to_the_events_that_run_them(client: Client) -> None:
    """The JAX train step ran 3 times: each of its fusions and dots that holds a buffer at the peak
    has its 3 executions, each an event the HLO graph resolves to that instruction of that program;
    parameters, constants and tuples run as no event."""
    chosen = memory(client, "jax")["program"]
    events = chosen["instruction_events"]
    assert chosen["peak_instruction"] == "ynn_fusion.2" and len(events["ynn_fusion.2"]) == 3
    live = {b["instruction"]: b["opcode"] for b in chosen["live_at_peak"]}
    assert set(events) == {name for name, opcode in live.items() if opcode in ("fusion", "dot")}
    for name, ids in events.items():
        assert len(ids) == 3
        for event_id in ids:
            event = client.get(f"{BASE}/trace/event?{subject(client, 'jax')}&id={event_id}").get_json()
            assert event["name"] == name and event["args"]["hlo_module"] == "jit_train_step"
            op = client.get(f"{BASE}/hlo?{subject(client, 'jax')}&event={event_id}").get_json()
            # JAX on CPU: the events name the module's own id (28), the HloProto is stored under 13
            assert (op["op"], op["module"], op["program_id"]) == (
                name,
                "jit_train_step",
                str(event["args"]["program_id"]),
            )


def test_the_memory_space_parameter_picks_a_space_of_the_program(client: Client) -> None:
    """The TPU's jit_f plans buffers in memory spaces 0, 1, 2 and 5; each answers its own peak, made
    of its own live buffers, and links its instructions to the TPU's XLA op events of jit_f."""
    answer = memory(client, "tpu")
    chosen = answer["program"]
    assert chosen["name"] == "jit_f" and chosen["memory_spaces"] == [0, 1, 2, 5]
    assert chosen["memory_space"] == 0 and chosen["peak_instruction"] == "broadcast_add_fusion.2"
    peaks = {}
    for space in chosen["memory_spaces"]:
        view = memory(client, "tpu", f"&program={chosen['program_id']}&memory_space={space}")["program"]
        assert view["memory_space"] == space and view["program_id"] == chosen["program_id"]
        assert view["peak_bytes"] == sum(b["size_bytes"] for b in view["live_at_peak"])
        peaks[space] = view["peak_bytes"]
        for name, ids in view["instruction_events"].items():
            event = client.get(f"{BASE}/trace/event?{subject(client, 'tpu')}&id={ids[0]}").get_json()
            assert event["name"] == name and str(event["args"]["program_id"]) == chosen["program_id"]
    assert peaks[0] == chosen["peak_bytes"] and len(set(peaks.values())) == 4
    assert "broadcast_add_fusion.2" in chosen["instruction_events"]
