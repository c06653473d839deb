"""Which profiler servers a capture may reach: `host:port` addresses checked against the allow-list
given to `--profscope_capture` (default: loopback only), and one capture at a time per address."""

from __future__ import annotations

import contextlib
import fnmatch
import ipaddress
import re
import threading
from collections.abc import Iterable, Iterator

from profscope.capture.client import CaptureError

LOOPBACK = "loopback"
MAX_ADDRESSES = 64
_NAME_PORT = re.compile(r"^(?P<host>[A-Za-z0-9][A-Za-z0-9.\-]{0,252}):(?P<port>[0-9]{1,5})$")
_IPV6_PORT = re.compile(r"^\[(?P<host>[0-9A-Fa-f:.]{2,45})\]:(?P<port>[0-9]{1,5})$")


def parse_address(text: str) -> tuple[str, int]:
    """(host, port) of `host:port` or `[v6]:port`; CaptureError("bad_address") for anything else
    (a gRPC target scheme, a path, no port), so the address handed to gRPC is only ever a host."""
    text = text.strip()
    match = _NAME_PORT.match(text) or _IPV6_PORT.match(text)
    port = int(match["port"]) if match else 0
    if match is None or not 1 <= port <= 65535:
        raise CaptureError(
            "bad_address", f"{text!r} is not a profiler server address (host:port, e.g. localhost:9012)"
        )
    host = match["host"].lower()
    if match.re is _IPV6_PORT:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise CaptureError("bad_address", f"{text!r} holds no valid IPv6 address") from None
    return host, port


def address_text(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class AllowList:
    """The addresses `--profscope_capture` lets the server reach: `loopback`, or `HOST[:PORT]`
    patterns with `*` wildcards (`10.0.0.*:9012`, `tpu-worker-*`), comma-separated."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(p.strip().lower() for p in patterns if p.strip()) or (LOOPBACK,)

    @classmethod
    def from_flag(cls, value: str) -> AllowList:
        return cls(value.split(","))

    def allows(self, host: str, port: int) -> bool:
        for pattern in self.patterns:
            if pattern == LOOPBACK:
                if is_loopback(host):
                    return True
                continue
            host_pattern, _, port_pattern = (
                pattern.rpartition(":") if _has_port(pattern) else (pattern, "", "*")
            )
            if fnmatch.fnmatchcase(host, host_pattern.strip("[]")) and fnmatch.fnmatchcase(
                str(port), port_pattern
            ):
                return True
        return False

    def check(self, addresses: Iterable[str]) -> list[str]:
        """The addresses normalised, each parsed and allowed; CaptureError for the first that is not."""
        checked: list[str] = []
        for text in addresses:
            host, port = parse_address(text)
            if not self.allows(host, port):
                raise CaptureError(
                    "not_allowed",
                    f"capturing from {address_text(host, port)} is not allowed: this TensorBoard allows "
                    f"{', '.join(self.patterns)} (--profscope_capture=PATTERNS to widen it)",
                )
            checked.append(address_text(host, port))
        if not checked:
            raise CaptureError("bad_address", "no profiler server address given")
        if len(checked) > MAX_ADDRESSES:
            raise CaptureError("bad_address", f"{len(checked)} addresses: at most {MAX_ADDRESSES} at once")
        if len(set(checked)) != len(checked):
            raise CaptureError("bad_address", "an address is given twice")
        return checked


def _has_port(pattern: str) -> bool:
    """Whether a pattern ends in `:PORT` (an IPv6 pattern names its port after `]`)."""
    if pattern.startswith("["):
        return "]:" in pattern
    return pattern.count(":") == 1


class InFlight:
    """The addresses being captured from now: a second capture from one of them is refused at once
    rather than queued (the server would refuse it too: one profiling session at a time)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy: set[str] = set()

    @contextlib.contextmanager
    def claim(self, addresses: list[str]) -> Iterator[None]:
        with self._lock:
            taken = [a for a in addresses if a in self._busy]
            if taken:
                raise CaptureError("busy", f"a capture from {', '.join(taken)} is already running")
            self._busy.update(addresses)
        try:
            yield
        finally:
            with self._lock:
                self._busy.difference_update(addresses)
