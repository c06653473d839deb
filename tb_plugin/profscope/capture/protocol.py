"""The messages of the profiler server's `ProfilerService.Profile` RPC, written from their public
definition (TSL's `profiler_service.proto` and `profiler_options.proto`, package `tensorflow`) and
encoded by hand with the field numbers it gives.

Why by hand: generated `_pb2` modules ship only with TensorFlow or XProf and break across protobuf
majors (the package never imports one: tests/test_packaging.py), and these are a handful of scalar
fields. Only the fields a capture uses are written; decoding skips the others.
"""

from __future__ import annotations

import dataclasses

from profscope.formats.common.wire import LEN, VARINT, WireError, encode_varint, iter_fields

SERVICE = "tensorflow.ProfilerService"
# The gRPC path of `rpc Profile(ProfileRequest) returns (ProfileResponse)`.
PROFILE_METHOD = f"/{SERVICE}/Profile"

# ProfileOptions.version: the options below are read as set (version >= 1), not as proto3 defaults.
OPTIONS_VERSION = 1
# What the server writes into the repository: the XSpace of the session, `<host_name>.xplane.pb`.
XPLANE_TOOL = "xplane.pb"


def _scalar(number: int, value: int | bool) -> bytes:
    """A varint field, left out at its default (0, false) as proto3 writes it."""
    return encode_varint(number << 3 | VARINT) + encode_varint(int(value)) if value else b""


def _bytes(number: int, value: bytes | str, *, always: bool = False) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    if not data and not always:
        return b""
    return encode_varint(number << 3 | LEN) + encode_varint(len(data)) + data


@dataclasses.dataclass(frozen=True)
class ProfileOptions:
    """`ProfileOptions`: what the profiled job records, and when it starts."""

    host_tracer_level: int = 2  # field 2
    device_tracer_level: int = 1  # field 3
    python_tracer_level: int = 0  # field 4
    version: int = OPTIONS_VERSION  # field 5
    enable_hlo_proto: bool = True  # field 7: the XLA programs, for the HLO graph and the Roofline
    start_timestamp_ns: int = 0  # field 8: every server of a session starts then (0: at once)
    duration_ms: int = 0  # field 9

    def encode(self) -> bytes:
        return b"".join(
            (
                _scalar(2, self.host_tracer_level),
                _scalar(3, self.device_tracer_level),
                _scalar(4, self.python_tracer_level),
                _scalar(5, self.version),
                _scalar(7, self.enable_hlo_proto),
                _scalar(8, self.start_timestamp_ns),
                _scalar(9, self.duration_ms),
            )
        )

    @classmethod
    def decode(cls, data: bytes) -> ProfileOptions:
        names = {2: "host_tracer_level", 3: "device_tracer_level", 4: "python_tracer_level", 5: "version"}
        names.update({7: "enable_hlo_proto", 8: "start_timestamp_ns", 9: "duration_ms"})
        values = {"version": 0, "enable_hlo_proto": False, "host_tracer_level": 0, "device_tracer_level": 0}
        for number, wire_type, value, _ in iter_fields(data, 0, len(data)):
            if wire_type == VARINT and number in names:
                values[names[number]] = bool(value) if number == 7 else value
        return cls(**values)


@dataclasses.dataclass(frozen=True)
class ProfileRequest:
    """`ProfileRequest`: one capture of `duration_ms`, written under `repository_root/session_id/`
    as `<host_name>.<tool>` for each of `tools`."""

    duration_ms: int  # field 1
    repository_root: str  # field 5
    session_id: str  # field 6
    host_name: str  # field 7
    tools: tuple[str, ...] = (XPLANE_TOOL,)  # field 3
    opts: ProfileOptions = ProfileOptions()  # field 4

    def encode(self) -> bytes:
        return b"".join(
            (
                _scalar(1, self.duration_ms),
                *(_bytes(3, tool, always=True) for tool in self.tools),
                _bytes(4, self.opts.encode(), always=True),
                _bytes(5, self.repository_root),
                _bytes(6, self.session_id),
                _bytes(7, self.host_name),
            )
        )

    @classmethod
    def decode(cls, data: bytes) -> ProfileRequest:
        """The request a server receives (the tests' stand-in server reads it)."""
        texts: dict[int, str] = {}
        tools: list[str] = []
        duration_ms, opts = 0, ProfileOptions.decode(b"")
        for number, wire_type, a, b in iter_fields(data, 0, len(data)):
            if number == 1 and wire_type == VARINT:
                duration_ms = a
            elif number == 3 and wire_type == LEN:
                tools.append(data[a:b].decode())
            elif number == 4 and wire_type == LEN:
                opts = ProfileOptions.decode(data[a:b])
            elif number in (5, 6, 7) and wire_type == LEN:
                texts[number] = data[a:b].decode()
        return cls(duration_ms, texts.get(5, ""), texts.get(6, ""), texts.get(7, ""), tuple(tools), opts)


@dataclasses.dataclass(frozen=True)
class ProfileResponse:
    """`ProfileResponse`: whether the captured trace is empty (field 7). Its `tool_data` (field 6)
    stays on the server when it writes to the repository, as it does here."""

    empty_trace: bool = False

    def encode(self) -> bytes:
        return _scalar(7, self.empty_trace)

    @classmethod
    def decode(cls, data: bytes) -> ProfileResponse:
        try:
            fields = list(iter_fields(data, 0, len(data)))
        except WireError as e:
            raise ValueError(f"the profiler's answer is not a ProfileResponse: {e}") from e
        return cls(
            any(number == 7 and wire_type == VARINT and value for number, wire_type, value, _ in fields)
        )
