"""`profscope capture`: the tab's Capture dialog from a terminal, into a logdir this machine writes
(no allow-list: whoever runs it reaches the servers anyway)."""

from __future__ import annotations

import argparse
from typing import TextIO

from profscope.capture.addresses import parse_address
from profscope.capture.client import CaptureError, TracerOptions
from profscope.capture.session import CaptureRequest, capture

# The other commands' exit statuses (profscope/cli/workspace.py), which this package cannot import.
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 3
_BAD_INPUT = {"bad_address", "bad_request", "outside_logdir", "grpc_missing"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "addresses", metavar="ADDR[,ADDR...]", help="profiler servers, host:port (e.g. localhost:9012)"
    )
    parser.add_argument(
        "--logdir", required=True, help="the logdir TensorBoard reads (the jobs write into it)"
    )
    parser.add_argument("--run", required=True, help="run folder to capture into (made when new)")
    parser.add_argument("--duration-ms", type=int, default=2000, help="how long to record (default 2000)")
    parser.add_argument("--delay-ms", type=int, default=0, help="start recording this much later (default 0)")
    defaults = TracerOptions()
    parser.add_argument(
        "--host-tracer-level",
        type=int,
        default=defaults.host_tracer_level,
        help="0 off, 1 user annotations, 2 default, 3 verbose",
    )
    parser.add_argument(
        "--python-tracer-level", type=int, default=defaults.python_tracer_level, help="1: record Python calls"
    )
    parser.add_argument(
        "--device-tracer-level", type=int, default=defaults.device_tracer_level, help="0: no device activity"
    )


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Capture one session; exit 0 when it landed, 1 when the capture failed, 3 on bad input."""
    addresses = [a for a in args.addresses.split(",") if a.strip()]
    request = CaptureRequest(
        addresses=tuple(addresses),
        run=args.run,
        duration_ms=args.duration_ms,
        tracers=TracerOptions(args.host_tracer_level, args.python_tracer_level, args.device_tracer_level),
        delay_ms=args.delay_ms,
    )
    try:
        for address in addresses:
            parse_address(address)
        out.write(f"capturing {args.duration_ms} ms from {', '.join(addresses)}…\n")
        captured = capture(args.logdir, request, follow_symlinks=args.follow_symlinks)
    except CaptureError as e:
        out.write(f"error: {e}\n")
        return EXIT_BAD_INPUT if e.kind in _BAD_INPUT else EXIT_FAILED
    out.write(
        f"captured run {captured.run!r} session {captured.session!r}, hosts: {', '.join(captured.hosts)}\n"
    )
    return EXIT_OK
