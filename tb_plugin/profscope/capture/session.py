"""One capture session: every address asked at once for the same session of the same run, the
profiled jobs writing `<logdir>/<run>/plugins/profile/<session>/<host>.xplane.pb`, then checked.

The jobs write, not this process: `repository_root` is the run's `plugins/profile` folder as this
server names it, so a job on another machine writes to its own disk. That is found out after the
call (the server says it wrote, the folder is not here) and said, naming where the job wrote. A
capture that fails in any way leaves nothing behind: the session folder, and the folders above it
that the capture made, are removed.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import re
import threading
import time

import fsspec

from profscope.capture import client
from profscope.capture.addresses import parse_address
from profscope.capture.client import CaptureError, TracerOptions

MAX_DURATION_MS = 600_000
MAX_DELAY_MS = 600_000
TRACER_LEVELS = {"host_tracer_level": 3, "python_tracer_level": 1, "device_tracer_level": 2}
# A run folder as discovery names it: logdir-relative, `/`-separated; no `.`/`..` parts, no
# `plugins` part (another plugin's data), nothing a shell or a URL would read otherwise.
_RUN_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")
# Session folders are named by their start time, as XProf names them (the UI shows a date and time).
SESSION_TIME_FORMAT = "%Y_%m_%d_%H_%M_%S"


@dataclasses.dataclass(frozen=True)
class CaptureRequest:
    """What to capture: from which servers, into which run, for how long, recording what."""

    addresses: tuple[str, ...]
    run: str
    duration_ms: int
    tracers: TracerOptions = TracerOptions()
    delay_ms: int = 0


@dataclasses.dataclass(frozen=True)
class Captured:
    """A session that landed: its run and session as `/runs` names them, and its hosts."""

    run: str
    session: str
    hosts: tuple[str, ...]


def check_request(request: CaptureRequest) -> None:
    """CaptureError("bad_request") for a run name or a number out of bounds."""
    check_run(request.run)
    if not 1 <= request.duration_ms <= MAX_DURATION_MS:
        raise CaptureError(
            "bad_request", f"duration_ms must be 1 to {MAX_DURATION_MS}, not {request.duration_ms}"
        )
    if not 0 <= request.delay_ms <= MAX_DELAY_MS:
        raise CaptureError("bad_request", f"delay_ms must be 0 to {MAX_DELAY_MS}, not {request.delay_ms}")
    for name, top in TRACER_LEVELS.items():
        level = getattr(request.tracers, name)
        if not 0 <= level <= top:
            raise CaptureError("bad_request", f"{name} must be 0 to {top}, not {level}")


def check_run(run: str) -> None:
    parts = run.split("/")
    if run == "." or (all(_RUN_PART.match(p) for p in parts) and "plugins" not in parts and len(run) <= 512):
        return
    raise CaptureError(
        "bad_request",
        f"run {run!r} is not a run folder name (letters, digits, '_', '-', '.', parts joined by '/'; "
        "'.' for the logdir itself)",
    )


def host_names(addresses: list[str]) -> list[str]:
    """The file name each server's job writes (`<host>.xplane.pb`): its host, with the port when
    two addresses share a host; characters a file name should not hold become `_`."""
    hosts = [parse_address(a) for a in addresses]
    counts: dict[str, int] = {}
    for host, _ in hosts:
        counts[host] = counts.get(host, 0) + 1
    names = [f"{host}_{port}" if counts[host] > 1 else host for host, port in hosts]
    return [re.sub(r"[^A-Za-z0-9_.\-]", "_", name) for name in names]


class Destination:
    """Where the jobs write, in the logdir's filesystem: the run's `plugins/profile` folder."""

    def __init__(self, logdir: str, run: str, *, follow_symlinks: bool = False) -> None:
        self.fs, root = fsspec.core.url_to_fs(logdir)
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        self.local = "file" in protocols or "local" in protocols
        self.root = os.path.abspath(root) if self.local else root.rstrip("/")
        self.run_parts = [] if run == "." else run.split("/")
        self.follow_symlinks = follow_symlinks
        self.repository_root = self._join(*self.run_parts, "plugins", "profile")
        # The repository root as the job is told it: a local path, or the logdir's URL (gs://…).
        remote_scheme = logdir.split("://", 1)[0] + "://" if not self.local and "://" in logdir else ""
        self.job_repository_root = remote_scheme + self.repository_root

    def _join(self, *parts: str) -> str:
        return os.path.join(self.root, *parts) if self.local else "/".join([self.root, *parts])

    def session_folder(self, session: str) -> str:
        return self._join(*self.run_parts, "plugins", "profile", session)

    def check_inside(self) -> None:
        """CaptureError("outside_logdir") when a link among the run's folders leads out of the logdir."""
        if not self.local or self.follow_symlinks:
            return
        existing = self.repository_root
        while not os.path.lexists(existing) and existing != self.root:
            existing = os.path.dirname(existing)
        real_root = os.path.realpath(self.root)
        real = os.path.realpath(existing)
        if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
            raise CaptureError(
                "outside_logdir",
                f"run {'/'.join(self.run_parts)!r} leads out of the logdir through a symbolic link; "
                "capture into another run",
            )

    def missing_folders(self) -> list[str]:
        """The folders from the run down to `plugins/profile` that do not exist yet, deepest last."""
        folders = [self._join(*self.run_parts[:i]) for i in range(1, len(self.run_parts) + 1)]
        folders += [self._join(*self.run_parts, "plugins"), self.repository_root]
        return [f for f in folders if not self.fs.exists(f)]

    def new_session(self, taken: set[str]) -> str:
        """A session name no folder has and no capture starting now took: the time, `_2`… after it."""
        base = time.strftime(SESSION_TIME_FORMAT)
        name, n = base, 1
        while self.session_folder(name) in taken or self.fs.exists(self.session_folder(name)):
            n += 1
            name = f"{base}_{n}"
        return name

    def landed(self, session: str, host: str) -> bool:
        self.fs.invalidate_cache()
        try:
            return self.fs.info(f"{self.session_folder(session)}/{host}.xplane.pb").get("size", 0) > 0
        except FileNotFoundError:
            return False

    def remove(self, session: str, made: list[str]) -> None:
        """Take away what a failed capture left: the session folder, then the folders it made."""
        self.fs.invalidate_cache()
        folder = self.session_folder(session)
        if self.fs.exists(folder):
            self.fs.rm(folder, recursive=True)
        for path in reversed(made):
            try:
                if self.fs.exists(path) and not self.fs.ls(path):
                    self.fs.rmdir(path)
            except OSError:
                pass  # something else wrote there meanwhile: it stays


_sessions_lock = threading.Lock()
_sessions_starting: set[str] = set()


def capture(
    logdir: str,
    request: CaptureRequest,
    *,
    follow_symlinks: bool = False,
    timeout_s: float | None = None,
) -> Captured:
    """Capture `request` into `logdir`, one `Profile` call per address at the same time; returns the
    session once every host's file is in place, else raises a CaptureError (naming every server that
    failed) having removed what the capture wrote."""
    check_request(request)
    client.grpc_module()
    destination = Destination(logdir, request.run, follow_symlinks=follow_symlinks)
    destination.check_inside()
    addresses = list(request.addresses)
    hosts = host_names(addresses)
    made = destination.missing_folders()
    with _sessions_lock:
        session = destination.new_session(_sessions_starting)
        key = destination.session_folder(session)
        _sessions_starting.add(key)
    try:
        start_ns = time.time_ns() + request.delay_ms * 1_000_000 if request.delay_ms else 0
        calls = [
            client.ProfileCall(
                address=address,
                duration_ms=request.duration_ms,
                repository_root=destination.job_repository_root,
                session_id=session,
                host_name=host,
                tracers=request.tracers,
                start_ns=start_ns,
            )
            for address, host in zip(addresses, hosts)
        ]
        outcomes = _profile_all(calls, timeout_s)
        errors = [
            error or (None if destination.landed(session, call.host_name) else _wrote_elsewhere(call))
            for call, error in zip(calls, outcomes)
        ]
        failed = [e for e in errors if e is not None]
        if failed:
            raise _combined(failed)
    except BaseException:
        destination.remove(session, made)
        raise
    finally:
        with _sessions_lock:
            _sessions_starting.discard(key)
    return Captured(request.run, session, tuple(hosts))


def _profile_all(calls: list[client.ProfileCall], timeout_s: float | None) -> list[CaptureError | None]:
    """Every call at once (so the servers record the same time); each call's error, or None."""
    with concurrent.futures.ThreadPoolExecutor(len(calls), thread_name_prefix="profscope-capture") as pool:
        futures = [pool.submit(client.profile, call, timeout_s) for call in calls]
        outcomes: list[CaptureError | None] = []
        for call, future in zip(calls, futures):
            try:
                empty = future.result()
            except CaptureError as e:
                outcomes.append(e)
                continue
            outcomes.append(
                CaptureError(
                    "empty",
                    f"the profiler at {call.address} captured nothing in {call.duration_ms} ms: was the "
                    "job running steps then? Capture longer, or while it runs",
                )
                if empty
                else None
            )
    return outcomes


def _wrote_elsewhere(call: client.ProfileCall) -> CaptureError:
    return CaptureError(
        "elsewhere",
        f"the profiler at {call.address} says it wrote the capture, but it is not in the logdir: the job "
        f"runs on another machine and wrote to {call.repository_root}/{call.session_id} on its own disk. "
        "Copy that folder into the logdir, or give the job a logdir both machines see (a shared "
        "filesystem, gs://…)",
    )


def _combined(errors: list[CaptureError]) -> CaptureError:
    if len(errors) == 1:
        return errors[0]
    message = "; ".join(str(e) for e in errors)
    return CaptureError(errors[0].kind, f"{len(errors)} servers failed, nothing was kept: {message}")
