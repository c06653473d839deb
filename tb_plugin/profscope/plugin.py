"""The TensorBoard plugin: the routes every tool shares, and every tool's routes merged in.

Shared here: `/runs` (discovery), the frontend bundle and its static files, resolving a request's
`run`/`session`/`host` into a `HostContext`, the 202 answer while a trace is being ingested, and
turning errors into HTTP answers (`tensorboard.errors` raised anywhere; a profile that cannot be
read → 422; an ingest that failed or was killed → 503 with `Retry-After`). Everything else is a
tool's (`profscope.tools`): its handlers return answers and this module encodes them (msgspec) and
sends them through `http_util.Respond` (nosniff, CSP, gzip).
"""

from __future__ import annotations

import argparse
import mimetypes
import os
import pathlib
import re
import select
import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from typing import Any

from tensorboard import errors
from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from profscope import answers, runs, tools
from profscope import logdir as logdir_lib
from profscope.caches import Caches
from profscope.capture import route as capture_route
from profscope.capture.addresses import AllowList
from profscope.capture.session import Captured
from profscope.context import HostContext, StillIngesting
from profscope.engine import resident
from profscope.engine import service as trace_service
from profscope.engine import store as trace_store
from profscope.engine.ingest import fanout
from profscope.engine.ingest import memory as ingest_memory
from profscope.engine.ingest.manager import RETRY_FAILED_AFTER_S, IngestError, file_name
from profscope.errors import UnreadableProfile
from profscope.params import Params

PLUGIN_NAME = "profscope"
STATIC_DIR = pathlib.Path(__file__).parent / "static"

# Content types of what the frontend build emits; anything else is served as opaque bytes.
_CONTENT_TYPES = {
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".css": "text/css",
    ".wasm": "application/wasm",
    ".map": "application/json",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".woff2": "font/woff2",
    ".txt": "text/plain",
}
# One path component of a static file: no leading dot (so no "..", no hidden files), no separators.
_STATIC_COMPONENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
# Longest static path and path component looked up (the build emits short hashed names; NAME_MAX is
# 255): longer ones are refused before the filesystem sees them (ENAMETOOLONG).
MAX_STATIC_PATH = 1024
MAX_STATIC_COMPONENT = 255
# Percent-encoded dot, slash or backslash in the raw URL: never part of a legitimate asset name.
_ENCODED_TRICK = re.compile(r"%(?:2e|2f|5c|00)", re.IGNORECASE)


class ProfscopeLoader(base_plugin.TBLoader):
    """Defines profscope's flags and builds the plugin; TensorBoard finds it by entry point."""

    def define_flags(self, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group(PLUGIN_NAME)
        group.add_argument(
            "--profscope_cache_dir",
            metavar="DIR",
            type=str,
            default=None,
            help="Where profscope keeps decoded traces (the logdir is never written). "
            "Default: $XDG_CACHE_HOME/profscope, else ~/.cache/profscope.",
        )
        group.add_argument(
            "--profscope_follow_symlinks",
            action="store_true",
            default=False,
            help="Also read files and folders of the logdir that are symbolic links to places outside "
            "it. By default such links are skipped (and listed as skipped), so a link planted in a "
            "shared logdir cannot make the server read other files.",
        )
        group.add_argument(
            "--profscope_dask_scheduler",
            metavar="ADDR",
            type=str,
            default=None,
            help="Ingest traces on the Dask cluster of this scheduler (tcp://host:8786) instead of in "
            "local processes; its workers must see --profscope_cache_dir at the same path. Needs "
            'pip install "profscope[dask]".',
        )
        group.add_argument(
            "--profscope_ingest_memory_mb",
            metavar="MB",
            type=int,
            default=None,
            help="Memory that all of profscope's ingest processes together may use, in MB (default "
            f"{ingest_memory.DEFAULT_TOTAL_MB}): traces bigger than their share are sorted through files "
            "in the cache directory, and fewer ingests run at once when it is low.",
        )

        group.add_argument(
            "--profscope_resident_mb",
            metavar="MB",
            type=int,
            default=None,
            help="Pages of memory-mapped cache files that the server keeps counted in its resident "
            f"memory, in MB (default {resident.DEFAULT_BUDGET_MB}): past it, they are handed back to "
            "the page cache after a request (touching them again reads no disk).",
        )
        group.add_argument(
            capture_route.FLAG,
            metavar="PATTERNS",
            nargs="?",
            const="loopback",
            default=None,
            help="Let the profscope tab capture profiles from profiler servers into the logdir (off by "
            "default). Without a value only loopback addresses; else a comma-separated allow-list of "
            "HOST[:PORT] patterns with * wildcards, 'loopback' among them if wanted (docs/CAPTURE.md).",
        )

    def load(self, context: base_plugin.TBContext) -> ProfscopePlugin:
        return ProfscopePlugin(context)


class UnprocessableProfileError(errors.PublicError):
    """A request was fine but the profile file behind it cannot be read: 422 with the reader's reason
    (TensorBoard's `errors` has no 422), the file named by its base name, never the server's path."""

    http_code = 422

    def __init__(self, cause: UnreadableProfile | str) -> None:
        if isinstance(cause, UnreadableProfile):
            cause = f"cannot read profile {file_name(cause.path)}: {cause.reason}"
        super().__init__(cause)


class IngestFailedError(errors.PublicError):
    """The server could not read a file for a reason outside the request and maybe outside the file
    (the ingest process was killed, ran out of memory, the cache is full): 503, and `Retry-After`
    says when the ingest is tried again."""

    http_code = 503

    def __init__(self, details: str) -> None:
        super().__init__(details)
        self.headers.append(("Retry-After", str(int(RETRY_FAILED_AFTER_S))))


def ingest_failure(error: errors.PublicError) -> errors.PublicError:
    """The answer to a route error raised because an ingest failed (`IngestError` as its cause):
    422 when the reader found the file unreadable, else 503; any other error as it is."""
    cause = error.__cause__
    if not isinstance(cause, IngestError):
        return error
    details = str(error).removeprefix("Invalid argument: ")
    return UnprocessableProfileError(details) if cause.unreadable else IngestFailedError(details)


def client_disconnected(environ: Mapping[str, Any]) -> Callable[[], bool]:
    """The check `Params.disconnected` makes of one request: its connection is readable and a peek
    reads end of file (or the peer reset it). The socket is the one werkzeug's server, which
    TensorBoard runs, puts in the environ; a request has been read whole before its handler runs, so
    a browser that aborted its fetch is the only reason for EOF. Elsewhere (another server, TLS,
    whose records a peek cannot read, no `poll`) the check never says gone."""
    sock = environ.get("werkzeug.socket")
    if not isinstance(sock, socket.socket) or isinstance(sock, ssl.SSLSocket) or not hasattr(select, "poll"):
        return lambda: False

    def disconnected() -> bool:
        readable = select.poll()  # poll, not select: no limit on the descriptor's number
        readable.register(sock, select.POLLIN)
        try:
            return bool(readable.poll(0)) and sock.recv(1, socket.MSG_PEEK) == b""
        except OSError:  # reset by the peer, or closed under us
            return True

    return disconnected


class ProfscopePlugin(base_plugin.TBPlugin):
    """Serves the profscope tab: discovery (`/runs`), the frontend bundle and its static files."""

    plugin_name = PLUGIN_NAME

    def __init__(
        self, context: base_plugin.TBContext, *, static_dir: str | os.PathLike[str] | None = None
    ) -> None:
        self._logdir_url = context.logdir or ""
        flags = context.flags
        follow = bool(getattr(flags, "profscope_follow_symlinks", False))
        self.logdir = (
            logdir_lib.Logdir(self._logdir_url, follow_symlinks=follow) if self._logdir_url else None
        )
        self.cache_dir = getattr(flags, "profscope_cache_dir", None) or trace_store.default_cache_root()
        self.dask_scheduler: str | None = getattr(flags, "profscope_dask_scheduler", None) or None
        self.ingest_memory_mb: int | None = getattr(flags, "profscope_ingest_memory_mb", None) or None
        resident_mb = getattr(flags, "profscope_resident_mb", None)
        resident.set_budget_mb(resident.DEFAULT_BUDGET_MB if resident_mb is None else resident_mb)
        self.static_dir = pathlib.Path(static_dir) if static_dir is not None else STATIC_DIR
        self._trace_service: trace_service.TraceService | None = None
        self._trace_lock = threading.Lock()
        # This plugin's analysis caches, shared by every request's context.
        self.caches = Caches()
        capture_flag = getattr(flags, "profscope_capture", None)
        self.capture = capture_route.CaptureRoutes(
            self._logdir_url,
            AllowList.from_flag(capture_flag) if capture_flag is not None else None,
            follow_symlinks=follow,
            landed=self._rescan,
        )

    def _rescan(self, _: Captured) -> None:
        """A session just captured is in the next `/runs` answer, not one discovery interval later."""
        if self.logdir is not None:
            self.logdir.listing(max_age_s=0)

    def get_plugin_apps(self) -> dict[str, Any]:
        apps: dict[str, Any] = {
            "/runs": self._serve_runs,
            "/index.js": self._serve_index_js,
            "/static/*": self._serve_static,
        }
        apps.update(self.capture.apps())
        for path, (_, handler) in tools.routes().items():
            apps[path] = self._tool_app(handler)
        return apps

    def is_active(self) -> bool:
        active = self.logdir is not None and self.logdir.is_active()
        if active and self._trace_service is None:
            # TensorBoard asks this when its page opens: start the trace engine's ingest helper
            # process now, so the first trace view does not wait for an interpreter to start.
            threading.Thread(target=self.trace_service, name="profscope-trace-warmup", daemon=True).start()
        return active

    def frontend_metadata(self) -> base_plugin.FrontendMetadata:
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name=PLUGIN_NAME)

    # -- helpers for routes -------------------------------------------------------------------

    def listing(self) -> logdir_lib.Listing:
        """The current discovery result (re-scanned at most every few seconds)."""
        if self.logdir is None:
            return logdir_lib.Listing(
                "",
                [],
                ["TensorBoard was started without --logdir; profscope reads profiles from the logdir."],
                0.0,
            )
        return self.logdir.listing()

    def subject(self, request: wrappers.Request) -> HostContext:
        """Resolve the `run`, `session` and `host` query parameters against the current listing.

        `host` may be a comma-separated list (hosts merged on one timeline). Raises
        InvalidArgumentError for a missing parameter and NotFoundError naming what does not exist
        and what does.
        """
        return self.resolve(Params(request.args))

    def resolve(self, params: Params, prefix: str = "") -> HostContext:
        """The subject named by the `<prefix>run`, `<prefix>session` and `<prefix>host` parameters
        (`subject`'s rules); the context can resolve another one the same way (`HostContext.other`)."""
        run_name = params.required(f"{prefix}run")
        session_name = params.required(f"{prefix}session")
        host_names = params.names(f"{prefix}host")
        if not host_names:
            raise errors.InvalidArgumentError(f"query parameter '{prefix}host' names no host")
        if len(set(host_names)) != len(host_names):
            raise errors.InvalidArgumentError(
                f"query parameter '{prefix}host' repeats a host: {params.required(f'{prefix}host')!r}"
            )
        listing = self.listing()
        run = listing.run(run_name)
        if run is None:
            known = ", ".join(repr(r.name) for r in listing.runs) or "none"
            raise errors.NotFoundError(f"run {run_name!r} is not in logdir {listing.logdir} (runs: {known})")
        session = run.session(session_name)
        if session is None:
            known = ", ".join(repr(s.name) for s in run.sessions)
            raise errors.NotFoundError(
                f"run {run_name!r} has no session {session_name!r} (sessions: {known})"
            )
        hosts = []
        for name in host_names:
            host = session.host(name)
            if host is None:
                known = ", ".join(repr(h.name) for h in session.hosts)
                raise errors.NotFoundError(
                    f"session {session_name!r} of run {run_name!r} has no host {name!r} (hosts: {known})"
                )
            hosts.append(host)
        fs = self.logdir.fs if self.logdir else None
        return HostContext(run, session, hosts, fs, self.trace_service, self.resolve, self.caches)

    # -- routes -------------------------------------------------------------------------------

    @wrappers.Request.application
    def _serve_runs(self, request: wrappers.Request) -> wrappers.Response:
        return http_util.Respond(request, answers.encode(runs.answer(self.listing())), "application/json")

    @wrappers.Request.application
    def _serve_index_js(self, request: wrappers.Request) -> wrappers.Response:
        path = self.static_dir / "index.js"
        if not path.is_file():
            raise errors.NotFoundError(
                f"the frontend bundle {path} is missing; build it with `npm --prefix frontend run build`"
            )
        return self._respond_file(request, path)

    @wrappers.Request.application
    def _serve_static(self, request: wrappers.Request) -> wrappers.Response:
        marker = f"/data/plugin/{PLUGIN_NAME}/static/"
        path = request.path
        raw = request.environ.get("REQUEST_URI") or request.environ.get("RAW_URI") or ""
        if marker not in path or _ENCODED_TRICK.search(raw.split("?", 1)[0]):
            raise errors.InvalidArgumentError("invalid static file path")
        relative = path.split(marker, 1)[1]
        return self._respond_file(request, self._resolve_static(relative))

    def trace_service(self) -> trace_service.TraceService:
        """The trace engine's shared state, made on first use (it creates the cache directory)."""
        with self._trace_lock:
            if self._trace_service is None:
                runner = fanout.DaskRunner(self.dask_scheduler) if self.dask_scheduler else None
                self._trace_service = trace_service.TraceService(
                    self.cache_dir, runner=runner, memory_mb=self.ingest_memory_mb
                )
            return self._trace_service

    def _tool_app(self, handler: tools.Handler) -> Any:
        """The WSGI app of one tool route: resolve the subject, call the handler (its `Params` can
        tell whether the client went away), encode its answer; then the mapped cache pages it
        touched are trimmed to their budget (`resident`)."""

        def respond(request: wrappers.Request) -> wrappers.Response:
            try:
                params = Params(request.args, client_disconnected(request.environ))
                answer = handler(self.subject(request), params)
            except StillIngesting as waiting:
                return http_util.Respond(
                    request, answers.encode(waiting.progress), "application/json", code=202
                )
            except UnreadableProfile as e:
                raise UnprocessableProfileError(e) from e
            except errors.PublicError as e:
                answer_error = ingest_failure(e)
                if answer_error is e:
                    raise
                raise answer_error from e
            if isinstance(answer, tools.Stream):
                return self._stream(answer)
            if isinstance(answer, tools.Binary):
                headers = [("ETag", answer.etag)] if answer.etag else []
                return http_util.Respond(
                    request,
                    answer.data,
                    answer.content_type,
                    expires=answer.max_age_s or 0,
                    content_encoding=answer.content_encoding,
                    headers=headers,
                )
            return http_util.Respond(request, answers.encode(answer), "application/json")

        @wrappers.Request.application
        def app(request: wrappers.Request) -> wrappers.Response:
            try:
                return respond(request)
            except errors.PublicError as e:  # a path that is not UTF-8 must not break the error answer
                e.args = (logdir_lib.printable(str(e)),)
                raise
            finally:
                resident.trim()

        return app

    @staticmethod
    def _stream(answer: tools.Stream) -> wrappers.Response:
        """A download sent as its chunks are made (no Content-Length: chunked), never cached."""
        headers = [("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-store")]
        if answer.filename:
            headers.append(("Content-Disposition", f'attachment; filename="{answer.filename}"'))
        return wrappers.Response(
            answer.chunks, content_type=answer.content_type, headers=headers, direct_passthrough=True
        )

    def _resolve_static(self, relative: str) -> pathlib.Path:
        """Map a URL tail to a file inside `static_dir`, refusing anything that could escape it."""
        parts = relative.split("/")
        if len(relative) > MAX_STATIC_PATH or any(len(p) > MAX_STATIC_COMPONENT for p in parts):
            raise errors.InvalidArgumentError(f"static file path of {len(relative)} characters is too long")
        if not relative or "\\" in relative or not all(_STATIC_COMPONENT.match(p) for p in parts):
            raise errors.InvalidArgumentError(f"invalid static file path {relative!r}")
        try:
            root = self.static_dir.resolve()
            target = (root / relative).resolve()
            if not target.is_relative_to(root):
                raise errors.InvalidArgumentError(f"invalid static file path {relative!r}")
            if not target.is_file():
                raise errors.NotFoundError(f"static file {relative!r}")
        except OSError as e:
            raise errors.NotFoundError(f"static file {relative!r} ({e.strerror or 'cannot be read'})") from e
        return target

    def _respond_file(self, request: wrappers.Request, path: pathlib.Path) -> wrappers.Response:
        # No ETag/304: werkzeug drops Content-Type from a 304 and TensorBoard's security validator
        # rejects responses without one. The bundle is small and served from the same machine.
        content_type = _CONTENT_TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0]
        try:
            data = path.read_bytes()
        except OSError as e:
            raise errors.NotFoundError(f"static file {path.name!r} ({e.strerror or 'cannot be read'})") from e
        return http_util.Respond(request, data, content_type or "application/octet-stream")
