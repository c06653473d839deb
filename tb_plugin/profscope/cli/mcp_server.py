"""`profscope mcp`: the tabs' analyses for an agent, as a Model Context Protocol server over stdio.

Each MCP tool calls the route handler its tab calls (through `Workspace`, the plugin TensorBoard
would start: the same logdir checks, nothing read outside the logdir, links refused unless
`--follow-symlinks`) and answers compact JSON: times and durations in ns (`*_ns`), sizes in bytes
(`*_bytes`), shares as fractions 0..1, long tables paged (`offset`, `limit`, `total`,
`next_offset`). Nothing is written except an export, to a file under the `--output-dir` the server
was started with (redacted unless asked otherwise); without one, an export is refused.
Needs the `mcp` extra (`pip install "profscope[mcp]"`).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import msgspec

from profscope import runs
from profscope.cli import compare as compare_cli
from profscope.cli.workspace import EXIT_BAD_INPUT, EXIT_OK, CliError, Workspace, add_logdir_arguments

# How long one tool call waits for a trace being ingested before answering "ask again".
INGEST_WAIT_S = 120.0
DEFAULT_LIMIT = 20
MAX_LIMIT = 200
UNITS = "times and durations in ns (*_ns), sizes in bytes (*_bytes), shares and fractions 0..1"
INSTRUCTIONS = (
    "profscope reads ML profiles (PyTorch/Kineto, XPlane, PyTorch/XLA logs) of one logdir. Start with "
    "list_runs; name a run (session: its latest by default; hosts: all of the session's, merged). "
    f"Answers are JSON: {UNITS}; long tables are paged with offset/limit."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_logdir_arguments(parser)
    parser.add_argument(
        "--output-dir",
        help="the only folder export_trace may write to (outside the logdir); without it, exports are refused",
    )


def _compact(value: Any) -> str:
    return json.dumps(msgspec.to_builtins(value), separators=(",", ":"), ensure_ascii=False)


def _page(rows: Sequence[Any], offset: int, limit: int) -> dict[str, Any]:
    limit = max(1, min(limit, MAX_LIMIT))
    end = offset + limit
    return {
        "total": len(rows),
        "offset": offset,
        "rows": list(rows[offset:end]),
        "next_offset": end if end < len(rows) else None,
    }


def _pick(struct: Any, *names: str) -> dict[str, Any]:
    """The named fields of an answer Struct that it holds (an UNSET one is left out)."""
    found = msgspec.to_builtins(struct)
    return {n: found[n] for n in names if n in found}


class Analyses:
    """The MCP tools: each one route (or the CLI's report of it), answered as compact JSON."""

    def __init__(self, workspace: Workspace, output_dir: str | None) -> None:
        self.workspace = workspace
        self.output_dir = output_dir

    def _subject(self, run: str, session: str | None, hosts: str | None, tool: str) -> dict[str, str]:
        subject = self.workspace.subject(run, session, hosts)
        applicable = self.workspace.hosts_of(subject, tool)
        if not applicable:
            raise CliError(f"{tool}: no host of run {run!r} session {subject['session']!r} has what it reads")
        return {**subject, "host": ",".join(applicable)}

    def _call(
        self, route: str, tool: str, run: str, session: str | None, hosts: str | None, **extra: str
    ) -> Any:
        query = {**self._subject(run, session, hosts, tool), **extra}
        return self.workspace.call(route, query, wait_s=INGEST_WAIT_S)

    # -- the tools --------------------------------------------------------------------------------

    def list_runs(self) -> str:
        """The logdir's runs, their sessions (oldest first), hosts, files with formats, and which
        analyses apply to each host."""
        return _compact(runs.answer(self.workspace.plugin.listing()))

    def overview(self, run: str, session: str | None = None, hosts: str | None = None) -> str:
        """Steps and steady-state step time with its spread, where step time goes (breakdown per
        step), the phases, device busy time and the findings' titles with their cost per step."""
        answer = self._call("/overview", "overview", run, session, hosts)
        per_host = []
        for host in answer.per_host:
            window = host.steady if host.steady is not msgspec.UNSET else host.capture
            entry: dict[str, Any] = {
                "host": host.host,
                "format": host.format,
                "steps": {
                    **_pick(host.steps, "source_kind", "source", "message", "stats"),
                    "count": len(host.steps.rows),
                    **({"split": host.steps.split.verdict} if host.steps.split is not msgspec.UNSET else {}),
                },
                "breakdown": _pick(window, "label", "wall_ns", "steps", "per_step_median", "fractions"),
                "devices": [
                    _pick(d, "name", "kind", "busy_ns", "busy_fraction") for d in host.devices.devices
                ],
            }
            if host.phases is not msgspec.UNSET:
                entry["phases"] = [
                    _pick(p, "name", "median_ns", "p10_ns", "p90_ns", "share") for p in host.phases.phases
                ]
            per_host.append(entry)
        findings = [_pick(f, "kind", "host", "title", "cost_ns", "cost_share") for f in answer.findings]
        categories = {c.id: c.label for c in answer.categories if c.observed}
        return _compact(
            {
                "units": UNITS,
                "subject": answer.subject,
                "categories": categories,
                "hosts": per_host,
                "findings": findings,
                "warnings": answer.warnings,
            }
        )

    def findings(
        self,
        run: str,
        session: str | None = None,
        hosts: str | None = None,
        offset: int = 0,
        limit: int = DEFAULT_LIMIT,
    ) -> str:
        """Every finding in full (observation, hypothesis, next check, the rule, evidence, cost per
        step), ordered by cost; then the XLA log findings when the hosts have PyTorch/XLA logs."""
        rows = [
            msgspec.to_builtins(f) for f in self._call("/overview", "overview", run, session, hosts).findings
        ]
        subject = self.workspace.subject(run, session, hosts)
        if self.workspace.hosts_of(subject, "xla"):
            report = self._call("/xla/report", "xla", run, session, hosts)
            rows += [
                {"source": "xla", **_pick(f, "id", "severity", "title", "summary", "evidence", "fix")}
                for f in report.findings
            ]
        return _compact({"units": UNITS, **_page(rows, offset, limit)})

    def top_ops(
        self,
        run: str,
        table: str = "host_ops",
        session: str | None = None,
        hosts: str | None = None,
        offset: int = 0,
        limit: int = DEFAULT_LIMIT,
    ) -> str:
        """One op table of the overview over its scope (steady steps), largest total time first:
        `host_ops`, `kernels` (device kernels) or `hlo_ops` (XLA ops of an XPlane)."""
        if table not in ("host_ops", "kernels", "hlo_ops"):
            raise CliError(f"table must be host_ops, kernels or hlo_ops, not {table!r}")
        tables = self._call("/overview", "overview", run, session, hosts).tables
        rows = [msgspec.to_builtins(r) for r in getattr(tables, table)]
        return _compact(
            {
                "units": UNITS,
                "scope": tables.scope,
                "groups": getattr(tables, f"{table}_total"),
                **_page(rows, offset, limit),
            }
        )

    def roofline(
        self,
        run: str,
        session: str | None = None,
        hosts: str | None = None,
        offset: int = 0,
        limit: int = DEFAULT_LIMIT,
    ) -> str:
        """The device's roofs (FLOP/s, B/s), the program's achieved rates, bound and roofline
        efficiency, and its ops by self time (paged)."""
        answer = self._call("/roofline", "roofline", run, session, hosts)
        if not answer.observed:
            return _compact({"observed": False, "reason": answer.reason})
        ops = [
            _pick(
                o,
                "name",
                "category",
                "occurrences",
                "self_time_ns",
                "time_fraction",
                "flops",
                "bytes_accessed",
                "figures",
                "source",
            )
            for o in answer.ops
        ]
        return _compact(
            {
                "units": UNITS + "; rates in FLOP/s and B/s",
                "observed": True,
                "device": msgspec.to_builtins(answer.device),
                "program": msgspec.to_builtins(answer.program),
                "warnings": answer.warnings,
                "ops": _page(ops, offset, limit),
            }
        )

    def memory(self, run: str, session: str | None = None, hosts: str | None = None) -> str:
        """Each allocator's peak (bytes, step, allocating op), what was live at it, the bytes never
        freed, and the allocating ops (largest first, the first 20)."""
        answer = self._call("/memory", "memory", run, session, hosts)
        if not answer.observed:
            return _compact({"observed": False, "reason": answer.reason})
        devices = [
            {
                **_pick(
                    d,
                    "label",
                    "peak",
                    "live_at_peak_bytes",
                    "before_capture_bytes",
                    "never_freed_bytes",
                    "never_freed_count",
                    "notes",
                ),
                "live_at_peak": msgspec.to_builtins(d.live_at_peak[:DEFAULT_LIMIT]),
                "ops": msgspec.to_builtins(d.ops[:DEFAULT_LIMIT]),
            }
            for d in answer.devices
        ]
        return _compact({"units": UNITS, "observed": True, "devices": devices, "warnings": answer.warnings})

    def compare(self, base_run: str, run: str, max_slowdown_percent: float | None = None) -> str:
        """A run against its base (latest sessions, first host): the cautions, each side's steady
        step time, the Hodges–Lehmann shift with its interval, breakdown and phase deltas, the 10
        largest op deltas of each table; with `max_slowdown_percent`, the CI gate's verdict."""
        query, notes = compare_cli.subjects(self.workspace, base_run, run)
        answer = self.workspace.call("/compare", query, wait_s=INGEST_WAIT_S)
        found: dict[str, Any] = {
            "units": UNITS,
            "notes": notes,
            **_pick(
                answer,
                "cautions",
                "shift",
                "shift_reason",
                "breakdown_scope",
                "categories",
                "phases",
                "advice",
            ),
        }
        for side in ("base", "run"):
            found[side] = _pick(
                getattr(answer, side), "run", "session", "host", "format", "step_source", "stats", "devices"
            )
        for table in ("host_ops", "kernels", "hlo_ops"):
            found[table] = msgspec.to_builtins(getattr(answer, table).rows[:10])
        if max_slowdown_percent is not None:
            code, verdict = compare_cli.gate(answer, max_slowdown_percent / 100)
            found["gate"] = {"exit": code, "verdict": verdict}
        return _compact(found)

    def search_trace(
        self,
        run: str,
        query: str,
        session: str | None = None,
        hosts: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> str:
        """Events whose name or argument values contain `query` (case-insensitive), in time order,
        paged; each match's `id` is what event_details takes."""
        answer = self._call(
            "/trace/search",
            "trace",
            run,
            session,
            hosts,
            q=query,
            offset=str(offset),
            limit=str(max(1, min(limit, MAX_LIMIT))),
        )
        return _compact({"units": UNITS, **msgspec.to_builtins(answer)})

    def event_details(
        self, run: str, event_id: int, session: str | None = None, hosts: str | None = None
    ) -> str:
        """One event of the trace: name, category, start and duration, self time, args, flows, and
        for an XLA op its HLO instruction with its operands and users (or why there is none)."""
        details = self._call("/trace/event", "trace", run, session, hosts, id=str(event_id))
        hlo = self._call("/hlo", "trace", run, session, hosts, event=str(event_id), radius="1")
        return _compact({"event": details, "hlo": hlo})

    def export_trace(
        self,
        run: str,
        path: str,
        session: str | None = None,
        hosts: str | None = None,
        start_ns: float | None = None,
        end_ns: float | None = None,
        redact: bool = True,
        redact_shapes: bool = False,
        redact_args: bool = False,
    ) -> str:
        """Write the trace (a time range of it, ns from the session start) as gzipped Chrome trace
        JSON to `path` under the server's output folder; redacted unless `redact` is false (paths,
        user and host names, addresses, tokens and keys replaced)."""
        from profscope.tools.trace import export

        target = self._output_path(path)
        query = self._subject(run, session, hosts, "trace")
        query.update(
            {
                name: "1"
                for name, on in (
                    ("redact", redact),
                    ("redact_shapes", redact_shapes),
                    ("redact_args", redact_args),
                )
                if on
            }
        )
        query.update({name: repr(v) for name, v in (("start", start_ns), ("end", end_ns)) if v is not None})
        exporter = self.workspace.run_with(export.exporter_for, query, wait_s=INGEST_WAIT_S)
        written = export.write(exporter, target)
        redacted = [_pick(k, "kind", "values", "occurrences") for k in exporter.redactor.summary()]
        return _compact(
            {
                "path": os.path.relpath(target, os.path.realpath(self.output_dir)),
                "size_bytes": written,
                **exporter.counts,
                "redacted": redacted,
            }
        )

    def _output_path(self, path: str) -> str:
        """`path` resolved under the output folder; refused when there is none, when it leads out
        of it, names an existing file or is no `.json.gz`."""
        if self.output_dir is None:
            raise CliError("this server was started without --output-dir: it writes no file")
        root = os.path.realpath(self.output_dir)
        target = os.path.realpath(os.path.join(root, path))
        if os.path.commonpath([root, target]) != root or target == root:
            raise CliError(f"{path!r} is outside the output folder; refused")
        if os.path.lexists(target):
            raise CliError(f"{path!r} exists; name a new file")
        if not target.endswith(".json.gz"):
            raise CliError(f"{path!r}: the export is gzipped Chrome trace JSON, name it *.json.gz")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        return target

    TOOLS = (
        "list_runs",
        "overview",
        "findings",
        "top_ops",
        "roofline",
        "memory",
        "compare",
        "search_trace",
        "event_details",
        "export_trace",
    )


def server(analyses: Analyses) -> Any:
    """The MCP server whose tools are `analyses`' methods; a `CliError` is the tool's error."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    from profscope.version import __version__

    mcp = MCPServer("profscope", instructions=INSTRUCTIONS, version=__version__)
    for name in Analyses.TOOLS:
        method = getattr(analyses, name)

        @functools.wraps(method)
        def tool(*args: Any, _method: Any = method, **kwargs: Any) -> str:
            try:
                return _method(*args, **kwargs)
            except CliError as e:
                raise ToolError(str(e)) from e

        read_only = name != "export_trace"
        mcp.add_tool(
            tool, name=name, annotations=ToolAnnotations(readOnlyHint=read_only, openWorldHint=False)
        )
    return mcp


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Serve until the client closes stdin. Exit status 3 when the `mcp` package is missing or the
    output folder lies in the logdir (profscope never writes there)."""
    del out  # stdout is the protocol's
    try:
        import mcp  # noqa: F401
    except ImportError:
        sys.stderr.write('error: `profscope mcp` needs the MCP SDK: pip install "profscope[mcp]"\n')
        return EXIT_BAD_INPUT
    if args.output_dir is not None and "://" not in args.logdir:
        logdir, output = os.path.realpath(args.logdir), os.path.realpath(args.output_dir)
        if os.path.commonpath([logdir, output]) == logdir:
            sys.stderr.write(
                f"error: --output-dir {args.output_dir} is inside the logdir, which profscope never writes\n"
            )
            return EXIT_BAD_INPUT
    workspace = Workspace(args.logdir, args.cache_dir, args.follow_symlinks, sys.stderr)
    try:
        server(Analyses(workspace, args.output_dir)).run("stdio")
    finally:
        workspace.close()
    return EXIT_OK
