"""The capture's messages carry the field numbers of TSL's `profiler_service.proto` and
`profiler_options.proto`, and addresses are checked before gRPC sees them."""

from __future__ import annotations

import pytest

from profscope.capture import protocol
from profscope.capture.addresses import AllowList, InFlight, parse_address
from profscope.capture.client import CaptureError, ProfileCall, TracerOptions

pytestmark = pytest.mark.stack_independent


def test_the_request_is_encoded_with_the_protos_field_numbers() -> None:
    options = protocol.ProfileOptions(
        host_tracer_level=2, device_tracer_level=1, python_tracer_level=1, version=0, enable_hlo_proto=False
    )
    assert options.encode() == b"\x10\x02\x18\x01\x20\x01"  # fields 2, 3, 4 as varints
    request = protocol.ProfileRequest(
        100, "/r", "s", "h", tools=("xplane.pb",), opts=protocol.ProfileOptions(version=1)
    )
    # duration_ms 1 (varint), tools 3, opts 4, repository_root 5, session_id 6, host_name 7 (length-delimited)
    assert request.encode() == (
        b"\x08\x64"
        + b"\x1a\x09xplane.pb"
        + b"\x22\x08\x10\x02\x18\x01\x28\x01\x38\x01"
        + b"\x2a\x02/r"
        + b"\x32\x01s"
        + b"\x3a\x01h"
    )
    assert protocol.ProfileRequest.decode(request.encode()) == request
    # empty_trace is field 7; tool_data (6) and fields unknown here are skipped
    assert protocol.ProfileResponse.decode(b"\x32\x03\x0a\x01x\x38\x01\x48\x05").empty_trace
    assert not protocol.ProfileResponse.decode(b"").empty_trace
    with pytest.raises(ValueError, match="not a ProfileResponse"):
        protocol.ProfileResponse.decode(b"\x0a\x09abc")
    assert protocol.PROFILE_METHOD == "/tensorflow.ProfilerService/Profile"


def test_a_call_asks_for_the_xspace_with_its_options() -> None:
    call = ProfileCall(
        "localhost:9012", 500, "/logdir/run/plugins/profile", "s", "h", TracerOptions(3, 1, 0), 7
    )
    request = call.request()
    assert request.tools == ("xplane.pb",)
    options = request.opts
    assert (options.host_tracer_level, options.python_tracer_level, options.device_tracer_level) == (3, 1, 0)
    assert options.version == 1 and options.start_timestamp_ns == 7 and options.duration_ms == 500
    assert options.enable_hlo_proto


@pytest.mark.parametrize(
    "text", ["localhost", "localhost:0", "localhost:70000", "unix:/x", "dns:///a:1", "a b:1", "[zz]:1", ""]
)
def test_what_is_not_an_address(text: str) -> None:
    with pytest.raises(CaptureError) as refused:
        parse_address(text)
    assert refused.value.kind == "bad_address"


def test_the_allow_list() -> None:
    loopback = AllowList.from_flag("loopback")
    assert loopback.check(["LOCALHOST:9012", "127.0.0.2:1", "[::1]:9012"]) == [
        "localhost:9012",
        "127.0.0.2:1",
        "[::1]:9012",
    ]
    with pytest.raises(CaptureError, match="not allowed"):
        loopback.check(["10.0.0.1:9012"])
    workers = AllowList.from_flag("tpu-worker-*:8466,10.0.0.*")
    assert workers.allows("tpu-worker-3", 8466) and not workers.allows("tpu-worker-3", 9012)
    assert workers.allows("10.0.0.7", 1) and not workers.allows("localhost", 9012)
    with pytest.raises(CaptureError, match="twice"):
        loopback.check(["localhost:1", "LocalHost:1"])


def test_one_claim_per_address() -> None:
    in_flight = InFlight()
    with (
        in_flight.claim(["a:1", "b:2"]),
        pytest.raises(CaptureError, match="b:2 is already running"),
        in_flight.claim(["b:2"]),
    ):
        pass
    with in_flight.claim(["b:2"]):
        pass
