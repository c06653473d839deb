"""The TensorBoard plugin: a thin route table over discovery, analyses and the static frontend.

A route parses its query, calls one function of `profscope.logdir`, `profscope.trace` or
`profscope.analysis`, and answers through `http_util.Respond` (nosniff, CSP, gzip). Errors are raised
as `tensorboard.errors` so TensorBoard answers 400/404 with the message. To add a route: write one
`_serve_<name>(self, request)` method decorated with `@wrappers.Request.application` and add one
entry to `get_plugin_apps()`; use `self.subject(request)` to resolve run/session/host.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import mimetypes
import os
import pathlib
import re
import threading
from collections.abc import Callable
from typing import Any

from tensorboard import errors
from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from profscope import logdir as logdir_lib
from profscope.analysis import xla_report, xla_sources
from profscope.trace import api as trace_api
from profscope.trace import store as trace_store

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

    def load(self, context: base_plugin.TBContext) -> ProfscopePlugin:
        return ProfscopePlugin(context)


@dataclasses.dataclass(frozen=True)
class Subject:
    """What a data route is about: a run, one session of it, and one or more hosts of that session."""

    run: logdir_lib.Run
    session: logdir_lib.Session
    hosts: list[logdir_lib.Host]


class ProfscopePlugin(base_plugin.TBPlugin):
    """Serves the profscope tab: discovery (`/runs`), the frontend bundle and its static files."""

    plugin_name = PLUGIN_NAME

    def __init__(
        self, context: base_plugin.TBContext, *, static_dir: str | os.PathLike[str] | None = None
    ) -> None:
        self._logdir_url = context.logdir or ""
        self.logdir = logdir_lib.Logdir(self._logdir_url) if self._logdir_url else None
        flags = context.flags
        self.cache_dir = getattr(flags, "profscope_cache_dir", None) or trace_store.default_cache_root()
        self.static_dir = pathlib.Path(static_dir) if static_dir is not None else STATIC_DIR
        self._trace_service: trace_api.TraceService | None = None
        self._trace_lock = threading.Lock()

    def get_plugin_apps(self) -> dict[str, Any]:
        return {
            "/runs": self._serve_runs,
            "/index.js": self._serve_index_js,
            "/static/*": self._serve_static,
            "/xla/report": self._serve_xla_report,
            "/xla/graphs": self._serve_xla_graphs,
            "/xla/graph": self._serve_xla_graph,
            "/xla/diff": self._serve_xla_diff,
            "/trace/meta": self._serve_trace_meta,
            "/trace/tile": self._serve_trace_tile,
            "/trace/event": self._serve_trace_event,
            "/trace/search": self._serve_trace_search,
            "/trace/summary": self._serve_trace_summary,
        }

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

    def subject(self, request: wrappers.Request, *, multi_host: bool = True) -> Subject:
        """Resolve the `run`, `session` and `host` query parameters against the current listing.

        `host` may be a comma-separated list when `multi_host`. Raises InvalidArgumentError for a
        missing parameter and NotFoundError naming what does not exist and what does.
        """
        run_name = _required_arg(request, "run")
        session_name = _required_arg(request, "session")
        host_arg = _required_arg(request, "host")
        host_names = [h for h in host_arg.split(",") if h] if multi_host else [host_arg]
        if not host_names:
            raise errors.InvalidArgumentError("query parameter 'host' names no host")
        if len(set(host_names)) != len(host_names):
            raise errors.InvalidArgumentError(f"query parameter 'host' repeats a host: {host_arg!r}")
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
        return Subject(run, session, hosts)

    # -- routes -------------------------------------------------------------------------------

    @wrappers.Request.application
    def _serve_runs(self, request: wrappers.Request) -> wrappers.Response:
        return http_util.Respond(request, self.listing().to_json(), "application/json")

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

    def _xla_files(self, request: wrappers.Request) -> list[xla_sources.XlaFile]:
        subject = self.subject(request)
        return xla_sources.host_files(subject.session, subject.hosts, self.logdir.fs if self.logdir else None)

    @wrappers.Request.application
    def _serve_xla_report(self, request: wrappers.Request) -> wrappers.Response:
        ordinal = xla_sources.int_param(request.args.get("ordinal"), "ordinal")
        body = xla_report.build_report(self._xla_files(request), ordinal)
        return http_util.Respond(request, body, "application/json")

    @wrappers.Request.application
    def _serve_xla_graphs(self, request: wrappers.Request) -> wrappers.Response:
        ordinal = xla_sources.int_param(request.args.get("ordinal"), "ordinal")
        body = xla_report.graphs(self._xla_files(request), ordinal)
        return http_util.Respond(request, body, "application/json")

    @wrappers.Request.application
    def _serve_xla_graph(self, request: wrappers.Request) -> wrappers.Response:
        ordinal = xla_sources.int_param(request.args.get("ordinal"), "ordinal")
        index = xla_sources.required_int_param(_required_arg(request, "index"), "index")
        body = xla_report.graph(self._xla_files(request), index, ordinal)
        return http_util.Respond(request, body, "application/json")

    @wrappers.Request.application
    def _serve_xla_diff(self, request: wrappers.Request) -> wrappers.Response:
        ordinal = xla_sources.int_param(request.args.get("ordinal"), "ordinal")
        a = xla_sources.required_int_param(_required_arg(request, "a"), "a")
        b = xla_sources.required_int_param(_required_arg(request, "b"), "b")
        body = xla_report.diff(self._xla_files(request), a, b, ordinal)
        return http_util.Respond(request, body, "application/json")

    def trace_service(self) -> trace_api.TraceService:
        """The trace engine's shared state, made on first use (it creates the cache directory)."""
        with self._trace_lock:
            if self._trace_service is None:
                self._trace_service = trace_api.TraceService(self.cache_dir)
            return self._trace_service

    def _trace_response(
        self,
        request: wrappers.Request,
        answer: Callable[[trace_api.Timeline], wrappers.Response],
        wait_s: float = 0.0,
    ) -> wrappers.Response:
        """`answer` about the subject's timeline, or 202 with the ingest progress while a host's
        trace is still being read (the view polls until it can ask again)."""
        subject = self.subject(request)
        label = f"run {subject.run.name!r} session {subject.session.name!r}"
        fs = self.logdir.fs if self.logdir else None
        timeline = self.trace_service().open(label, trace_api.host_sources(subject.hosts, fs), wait_s)
        if isinstance(timeline, trace_api.Ingesting):
            return http_util.Respond(request, timeline.to_json(), "application/json", code=202)
        return answer(timeline)

    def _trace_json(
        self,
        request: wrappers.Request,
        body: Callable[[trace_api.Timeline], dict[str, Any]],
        wait_s: float = 0.0,
    ) -> wrappers.Response:
        """`_trace_response` for the routes that answer JSON."""
        return self._trace_response(
            request, lambda timeline: http_util.Respond(request, body(timeline), "application/json"), wait_s
        )

    @wrappers.Request.application
    def _serve_trace_meta(self, request: wrappers.Request) -> wrappers.Response:
        return self._trace_json(request, trace_api.meta, trace_api.META_WAIT_S)

    @wrappers.Request.application
    def _serve_trace_tile(self, request: wrappers.Request) -> wrappers.Response:
        level = _int_arg(request, "level")
        index = _int_arg(request, "index")

        def answer(timeline: trace_api.Timeline) -> wrappers.Response:
            data, etag = self.trace_service().tile(timeline, level, index)
            return http_util.Respond(
                request,
                data,
                "application/octet-stream",
                expires=trace_api.TILE_MAX_AGE_S,
                content_encoding="gzip",
                headers=[("ETag", etag)],
            )

        return self._trace_response(request, answer)

    @wrappers.Request.application
    def _serve_trace_event(self, request: wrappers.Request) -> wrappers.Response:
        event_id = _int_arg(request, "id")
        return self._trace_json(request, lambda timeline: trace_api.event(timeline, event_id))

    @wrappers.Request.application
    def _serve_trace_search(self, request: wrappers.Request) -> wrappers.Response:
        query = request.args.get("q", "")
        limit = _int_arg(request, "limit", trace_api.DEFAULT_SEARCH_LIMIT)
        offset = _int_arg(request, "offset", 0)
        return self._trace_json(request, lambda timeline: trace_api.search(timeline, query, limit, offset))

    @wrappers.Request.application
    def _serve_trace_summary(self, request: wrappers.Request) -> wrappers.Response:
        start = _float_arg(request, "start")
        end = _float_arg(request, "end")
        tracks = _int_list_arg(request, "tracks")
        ids = _int_list_arg(request, "ids")
        return self._trace_json(
            request, lambda timeline: trace_api.summary(timeline, start, end, tracks, ids)
        )

    def _resolve_static(self, relative: str) -> pathlib.Path:
        """Map a URL tail to a file inside `static_dir`, refusing anything that could escape it."""
        parts = relative.split("/")
        if not relative or "\\" in relative or not all(_STATIC_COMPONENT.match(p) for p in parts):
            raise errors.InvalidArgumentError(f"invalid static file path {relative!r}")
        root = self.static_dir.resolve()
        target = (root / relative).resolve()
        if not target.is_relative_to(root):
            raise errors.InvalidArgumentError(f"invalid static file path {relative!r}")
        if not target.is_file():
            raise errors.NotFoundError(f"static file {relative!r}")
        return target

    def _respond_file(self, request: wrappers.Request, path: pathlib.Path) -> wrappers.Response:
        # No ETag/304: werkzeug drops Content-Type from a 304 and TensorBoard's security validator
        # rejects responses without one. The bundle is small and served from the same machine.
        content_type = _CONTENT_TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0]
        return http_util.Respond(request, path.read_bytes(), content_type or "application/octet-stream")


def _required_arg(request: wrappers.Request, name: str) -> str:
    value = request.args.get(name)
    if value is None or value == "":
        raise errors.InvalidArgumentError(f"missing query parameter {name!r}")
    return value


def _int_arg(request: wrappers.Request, name: str, default: int | None = None) -> int:
    """An integer query parameter; `default` when absent, else it is required."""
    text = request.args.get(name)
    if (text is None or text == "") and default is not None:
        return default
    text = _required_arg(request, name)
    try:
        return int(text)
    except ValueError as e:
        raise errors.InvalidArgumentError(f"query parameter {name!r} must be an integer, got {text!r}") from e


def _float_arg(request: wrappers.Request, name: str) -> float | None:
    """A finite number query parameter; None when absent."""
    text = request.args.get(name)
    if text is None or text == "":
        return None
    try:
        value = float(text)
    except ValueError as e:
        raise errors.InvalidArgumentError(f"query parameter {name!r} must be a number, got {text!r}") from e
    if not math.isfinite(value):
        raise errors.InvalidArgumentError(f"query parameter {name!r} must be finite")
    return value


def _int_list_arg(request: wrappers.Request, name: str) -> list[int] | None:
    """A comma-separated list of integers query parameter; None when absent."""
    text = request.args.get(name)
    if text is None or text == "":
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError as e:
        raise errors.InvalidArgumentError(f"query parameter {name!r} must be comma-separated integers") from e
