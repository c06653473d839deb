"""The capture routes of the plugin: `POST capture` (capture a session into the logdir, answered
once it has landed) and `GET capture/status` (whether capturing is on, for the dialog).

Synchronous on purpose: a capture is seconds to minutes, TensorBoard's server runs each request on
its own thread, and the answer is the new session or why there is none; the dialog shows the
expected time passing meanwhile. Off unless TensorBoard was started with `--profscope_capture`, and
then only from a page of this TensorBoard: the request must be a POST of JSON carrying TensorBoard's
own `X-XSRF-Protected: 1` header (its frontend adds it to every POST; a page of another site cannot
add it without a CORS preflight, which TensorBoard never grants) and an Origin (or, without one, a
Referer) on this server's host.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable
from typing import Any

from tensorboard import errors
from tensorboard.backend import http_util
from werkzeug import wrappers

from profscope.capture import client
from profscope.capture.addresses import AllowList, InFlight
from profscope.capture.client import CaptureError, TracerOptions
from profscope.capture.session import Captured, CaptureRequest, capture

FLAG = "--profscope_capture"
MAX_BODY_BYTES = 64 * 1024
# The status code of each reason a capture is refused or failed.
HTTP_CODES = {
    "off": 403,
    "forbidden": 403,
    "not_allowed": 403,
    "bad_request": 400,
    "bad_address": 400,
    "outside_logdir": 400,
    "busy": 409,
    "empty": 422,
    "grpc_missing": 501,
    "unreachable": 502,
    "not_a_profiler": 502,
    "server_error": 502,
    "elsewhere": 502,
    "timeout": 504,
}
ENABLE_HINT = (
    f"Capturing is off. Start TensorBoard with {FLAG} to capture from profiler servers on this machine "
    f"(loopback addresses), or {FLAG}=PATTERNS (e.g. 'loopback,10.0.0.*:9012') for others."
)


class CaptureRefusedError(errors.PublicError):
    """A capture refused or failed: the status code of its reason, the reason as plain text."""

    def __init__(self, error: CaptureError) -> None:
        super().__init__(str(error))
        self.http_code = HTTP_CODES.get(error.kind, 500)
        self.headers.append(("X-Profscope-Capture-Error", error.kind))


class CaptureRoutes:
    """The two routes, over one logdir; `allow` None means capturing is off."""

    def __init__(
        self,
        logdir: str,
        allow: AllowList | None,
        *,
        follow_symlinks: bool,
        landed: Callable[[Captured], None],
    ) -> None:
        self.logdir = logdir
        self.allow = allow
        self.follow_symlinks = follow_symlinks
        self.landed = landed
        self.in_flight = InFlight()

    def apps(self) -> dict[str, Any]:
        return {"/capture": self._serve_capture, "/capture/status": self._serve_status}

    def status(self) -> dict[str, Any]:
        enabled = self.allow is not None and bool(self.logdir)
        return {
            "enabled": enabled,
            "allowed": list(self.allow.patterns) if self.allow else [],
            "message": "" if enabled else (ENABLE_HINT if self.logdir else "TensorBoard has no --logdir"),
            "logdir": self.logdir,
            "grpc_installed": _grpc_installed(),
        }

    @wrappers.Request.application
    def _serve_status(self, request: wrappers.Request) -> wrappers.Response:
        return http_util.Respond(request, json.dumps(self.status()), "application/json")

    @wrappers.Request.application
    def _serve_capture(self, request: wrappers.Request) -> wrappers.Response:
        if request.method != "POST":
            return http_util.Respond(
                request, "capture takes a POST", "text/plain", code=405, headers=[("Allow", "POST")]
            )
        try:
            if self.allow is None or not self.logdir:
                raise CaptureError("off", self.status()["message"])
            _check_same_origin(request)
            capture_request = _parse_body(request)
            addresses = self.allow.check(capture_request.addresses)
            with self.in_flight.claim(addresses):
                captured = capture(
                    self.logdir,
                    CaptureRequest(
                        tuple(addresses),
                        capture_request.run,
                        capture_request.duration_ms,
                        capture_request.tracers,
                        capture_request.delay_ms,
                    ),
                    follow_symlinks=self.follow_symlinks,
                )
        except CaptureError as e:
            raise CaptureRefusedError(e) from e
        self.landed(captured)
        answer = {"run": captured.run, "session": captured.session, "hosts": list(captured.hosts)}
        return http_util.Respond(request, json.dumps(answer), "application/json")


def _grpc_installed() -> bool:
    try:
        client.grpc_module()
    except CaptureError:
        return False
    return True


def _check_same_origin(request: wrappers.Request) -> None:
    """CaptureError("forbidden") unless the request comes from a page of this server."""
    if request.headers.get("X-XSRF-Protected") != "1":
        raise CaptureError("forbidden", "capture requests need the header X-XSRF-Protected: 1")
    source = request.headers.get("Origin") or request.headers.get("Referer") or ""
    netloc = urllib.parse.urlsplit(source).netloc.lower() if source and source != "null" else ""
    if not netloc or netloc != request.host.lower():
        raise CaptureError(
            "forbidden",
            "capture requests are taken only from this TensorBoard's own pages (Origin or Referer)",
        )


def _parse_body(request: wrappers.Request) -> CaptureRequest:
    if request.mimetype != "application/json":
        raise CaptureError(
            "bad_request", "the capture request is a JSON body (Content-Type: application/json)"
        )
    if (request.content_length or 0) > MAX_BODY_BYTES:
        raise CaptureError("bad_request", f"the capture request is over {MAX_BODY_BYTES} bytes")
    try:
        body = json.loads(request.get_data(cache=False)[: MAX_BODY_BYTES + 1] or b"null")
    except ValueError as e:
        raise CaptureError("bad_request", f"the capture request is not JSON: {e}") from None
    if not isinstance(body, dict):
        raise CaptureError("bad_request", "the capture request is a JSON object")
    addresses = body.get("addresses")
    if not isinstance(addresses, list) or not all(isinstance(a, str) for a in addresses):
        raise CaptureError("bad_request", '"addresses" is a list of "host:port" strings')
    run = body.get("run")
    if not isinstance(run, str) or not run:
        raise CaptureError("bad_request", '"run" names the run to capture into')
    tracers = TracerOptions(
        host_tracer_level=_integer(body, "host_tracer_level", TracerOptions.host_tracer_level),
        python_tracer_level=_integer(body, "python_tracer_level", TracerOptions.python_tracer_level),
        device_tracer_level=_integer(body, "device_tracer_level", TracerOptions.device_tracer_level),
    )
    return CaptureRequest(
        tuple(addresses), run, _integer(body, "duration_ms", None), tracers, _integer(body, "delay_ms", 0)
    )


def _integer(body: dict[str, Any], name: str, default: int | None) -> int:
    value = body.get(name, default)
    if value is None:
        raise CaptureError("bad_request", f'"{name}" is required')
    if isinstance(value, bool) or not isinstance(value, int):
        raise CaptureError("bad_request", f'"{name}" is a whole number, not {value!r}')
    return value
