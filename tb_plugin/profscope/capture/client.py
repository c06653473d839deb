"""One `ProfilerService.Profile` call to one profiler server, its failures as `CaptureError`s.

gRPC is imported on first use: it is the optional extra `profscope[capture]`, and a server that
never captures does not need it.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from typing import Any

from profscope.capture import protocol

INSTALL_HINT = "pip install 'profscope[capture]'"
# Past the capture's own delay and duration, how long the server may take to collect and write.
WRITE_ALLOWANCE_S = 60.0


class CaptureError(Exception):
    """A capture that did not land; `kind` names why (the route's status code and the dialog's
    wording follow from it), the message says it for a person."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclasses.dataclass(frozen=True)
class TracerOptions:
    """What the profiled job records, as `ProfileOptions` says: host TraceMe level (0 off, 1 user,
    2 default, 3 verbose), Python function calls (0 off, 1 on), device activity (0 off, 1 on)."""

    host_tracer_level: int = 2
    python_tracer_level: int = 0
    device_tracer_level: int = 1


@dataclasses.dataclass(frozen=True)
class ProfileCall:
    """One request: which server, for how long, where its job writes, under which names."""

    address: str
    duration_ms: int
    repository_root: str
    session_id: str
    host_name: str
    tracers: TracerOptions = TracerOptions()
    start_ns: int = 0  # epoch ns at which every server of a session starts; 0: at once

    def request(self) -> protocol.ProfileRequest:
        options = protocol.ProfileOptions(
            host_tracer_level=self.tracers.host_tracer_level,
            device_tracer_level=self.tracers.device_tracer_level,
            python_tracer_level=self.tracers.python_tracer_level,
            start_timestamp_ns=self.start_ns,
            duration_ms=self.duration_ms,
        )
        return protocol.ProfileRequest(
            duration_ms=self.duration_ms,
            repository_root=self.repository_root,
            session_id=self.session_id,
            host_name=self.host_name,
            opts=options,
        )

    def deadline_s(self) -> float:
        """Seconds from now the call may take: the wait for the start, the capture, the writing."""
        wait_s = max(0.0, (self.start_ns - time.time_ns()) / 1e9)
        return wait_s + self.duration_ms / 1000 + WRITE_ALLOWANCE_S


def grpc_module() -> Any:
    """The `grpc` package, or a CaptureError saying how to install it."""
    try:
        return importlib.import_module("grpc")
    except ImportError as e:
        raise CaptureError(
            "grpc_missing", f"capturing needs gRPC, which is not installed: {INSTALL_HINT}"
        ) from e


def profile(call: ProfileCall, timeout_s: float | None = None) -> bool:
    """Ask the server at `call.address` for a capture, blocking until it is written; whether the
    server says the trace is empty. Raises CaptureError when the server cannot be reached, is busy,
    fails, or takes past `timeout_s` (default: `call.deadline_s()`)."""
    grpc = grpc_module()
    timeout = call.deadline_s() if timeout_s is None else timeout_s
    with grpc.insecure_channel(call.address) as channel:
        stub = channel.unary_unary(
            protocol.PROFILE_METHOD,
            request_serializer=protocol.ProfileRequest.encode,
            response_deserializer=protocol.ProfileResponse.decode,
        )
        try:
            response = stub(call.request(), timeout=timeout)
        except grpc.RpcError as e:
            raise _failure(grpc, call.address, e, timeout) from None
    return response.empty_trace


def _failure(grpc: Any, address: str, error: Any, timeout_s: float) -> CaptureError:
    """The CaptureError of a failed call, worded from its gRPC status."""
    code = error.code()
    details = (error.details() or "").strip()
    if code == grpc.StatusCode.UNAVAILABLE:
        return CaptureError(
            "unreachable",
            f"nothing answers at {address}: is the job running, and did it start its profiler server on "
            f"that port (jax.profiler.start_server, tf.profiler.experimental.server.start)? ({details})",
        )
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return CaptureError(
            "timeout", f"the profiler server at {address} did not answer within {timeout_s:.0f} s"
        )
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return CaptureError(
            "not_a_profiler",
            f"{address} answers gRPC but serves no {protocol.SERVICE}: is this the profiler server's port?",
        )
    if "another profiling session" in details.lower() or code == grpc.StatusCode.ALREADY_EXISTS:
        return CaptureError(
            "busy",
            f"the profiler at {address} is busy with another capture (one session at a time); "
            "try again when it is done",
        )
    return CaptureError("server_error", f"the profiler at {address} failed: {details or code.name}")
