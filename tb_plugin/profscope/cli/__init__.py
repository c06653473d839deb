"""`profscope` command line: check what the plugin sees in a logdir without starting TensorBoard
(`ls`); export a trace as gzipped Chrome trace JSON (`export`); the tabs' figures in a terminal or a
CI job (`report`, `compare`, in `report.py`, `compare.py`) and for an agent (`mcp`, `mcp_server.py`).

Subcommands live in `COMMANDS` (name → (help, add_arguments, run)); adding one is one function pair
and one table entry. `run` returns the process exit status.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import NoReturn, TextIO

import msgspec
from tensorboard import errors

from profscope import logdir as logdir_lib
from profscope import runs
from profscope import tools as profscope_tools
from profscope.capture import cli as capture_cli
from profscope.cli import compare, mcp_server, report, workspace
from profscope.context import HostContext, StillIngesting
from profscope.engine import service as trace_service
from profscope.engine.ingest import cluster as cluster_ingest
from profscope.errors import UnreadableProfile
from profscope.params import Params
from profscope.version import __version__


def _add_ls_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "logdir", help="local folder or fsspec URL (gs://…, s3://…) given to tensorboard --logdir"
    )
    parser.add_argument("--json", action="store_true", help="print the /runs JSON instead of a tree")


def _run_ls(args: argparse.Namespace, out: TextIO) -> int:
    """Print run → session → host → files with format, size, tools and errors.

    Exit status: 0 when at least one run was found, 1 when none (the message says which layouts are
    recognised), 2 when the logdir itself cannot be read.
    """
    listing = logdir_lib.discover(args.logdir, follow_symlinks=args.follow_symlinks)
    if args.json:
        json.dump(msgspec.to_builtins(runs.answer(listing)), out, indent=2)
        out.write("\n")
    else:
        print_tree(listing, out)
    if listing.runs:
        return 0
    return 2 if listing.errors else 1


def print_tree(listing: logdir_lib.Listing, out: TextIO) -> None:
    """Human-readable discovery tree; every unreadable file is shown with its reason."""
    out.write(f"logdir {listing.logdir}\n")
    for error in listing.errors:
        out.write(f"  ERROR {error}\n")
    for run in listing.runs:
        out.write(f"run {run.name}\n")
        for session in run.sessions:
            out.write(f"  session {session.name}\n")
            for host in session.hosts:
                tools = ", ".join(profscope_tools.applicable(host)) or "none (no readable file)"
                out.write(f"    host {host.name}  tools: {tools}\n")
                for f in host.files:
                    size = "size unknown" if f.size is None else _human_size(f.size)
                    out.write(f"      {f.path}  {f.format or 'unknown format'}  {size}\n")
                    if f.error:
                        out.write(f"        ERROR {f.error}\n")
    if not listing.runs:
        out.write(logdir_lib.empty_logdir_message(listing.logdir, cli_hint=False))
        out.write("\n")


def _human_size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    size = n / 1024
    for unit in ("KiB", "MiB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def _add_export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("logdir", help="local folder or fsspec URL given to tensorboard --logdir")
    parser.add_argument("run", help="run name as `profscope ls` shows it")
    parser.add_argument("session", help="session name as `profscope ls` shows it")
    parser.add_argument("hosts", metavar="HOST[,HOST...]", help="host, or hosts merged on one timeline")
    parser.add_argument("-o", "--output", required=True, help="file to write (.json.gz)")
    parser.add_argument("--start", type=float, metavar="NS", help="range start, ns from the session start")
    parser.add_argument("--end", type=float, metavar="NS", help="range end, ns from the session start")
    parser.add_argument(
        "--redact", action="store_true", help="take out paths, user and host names, e-mails, tokens and keys"
    )
    parser.add_argument("--redact-shapes", action="store_true", help="also input shapes (implies --redact)")
    parser.add_argument(
        "--redact-args", action="store_true", help="also every argument value (implies --redact)"
    )
    parser.add_argument("--cache-dir", help="profscope's cache of decoded traces (default: the plugin's)")


def _run_export(args: argparse.Namespace, out: TextIO) -> int:
    """Write the trace of (run, session, hosts) as gzipped Chrome trace JSON (see
    `profscope.tools.trace.export`), ingesting it into the cache first when needed.

    Exit status: 0 when written, 2 when the subject does not exist, the range is wrong or the
    trace cannot be read.
    """
    from profscope.engine import store as trace_store
    from profscope.tools.trace import export

    logdir = logdir_lib.Logdir(args.logdir, follow_symlinks=args.follow_symlinks)
    listing = logdir.listing()
    run = listing.run(args.run)
    session = run.session(args.session) if run is not None else None
    hosts = [session.host(h) for h in args.hosts.split(",") if h] if session is not None else []
    if not hosts or None in hosts:
        out.write(
            f"error: {listing.logdir} has no run {args.run!r} with session {args.session!r} and hosts "
            f"{args.hosts!r} (see `profscope ls {args.logdir}`)\n"
        )
        return 2
    service = trace_service.TraceService(args.cache_dir or trace_store.default_cache_root())
    ctx = HostContext(run, session, hosts, logdir.fs, lambda: service)
    flags = {"redact": args.redact, "redact_shapes": args.redact_shapes, "redact_args": args.redact_args}
    query = {name: "1" for name, on in flags.items() if on}
    query.update({name: repr(v) for name, v in (("start", args.start), ("end", args.end)) if v is not None})
    try:
        while True:
            try:
                exporter = export.exporter_for(ctx, Params(query))
                break
            except StillIngesting as waiting:
                done, total = waiting.progress.bytes_done, waiting.progress.bytes_total
                out.write(f"reading the trace: {done} of {total} bytes\n")
                time.sleep(1.0)
        written = export.write(exporter, args.output)
    except (errors.PublicError, UnreadableProfile, OSError) as e:
        out.write(f"error: {e}\n")
        return 2
    finally:
        service.manager.close()
    counts = exporter.counts
    out.write(
        f"wrote {args.output}: {written} bytes, {counts['events']} events, {counts['flows']} flows, "
        f"{counts['counter_samples']} counter samples\n"
    )
    for kind in exporter.redactor.summary():
        out.write(f"  redacted {kind.kind}: {kind.values} values in {kind.occurrences} places\n")
    return 0


Command = tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace, TextIO], int]]

COMMANDS: dict[str, Command] = {
    "ls": (
        "list the runs, sessions, hosts and files profscope finds in a logdir",
        _add_ls_arguments,
        _run_ls,
    ),
    "ingest": (
        "build the trace cache of every host of a logdir's sessions on a Dask cluster",
        cluster_ingest.add_arguments,
        cluster_ingest.run,
    ),
    "export": (
        "write a trace as gzipped Chrome trace JSON (Perfetto UI, chrome://tracing), optionally redacted",
        _add_export_arguments,
        _run_export,
    ),
    "report": (
        "the tabs' figures of one session as Markdown (a terminal, a CI summary) or JSON",
        report.add_arguments,
        report.run,
    ),
    "compare": (
        "a run against its base, as the Compare tab; with --max-slowdown, a CI gate",
        compare.add_arguments,
        compare.run,
    ),
    "mcp": (
        "serve the analyses to an agent: a Model Context Protocol server over stdio",
        mcp_server.add_arguments,
        mcp_server.run,
    ),
    "capture": (
        "capture a profile from running jobs' profiler servers into a logdir (docs/CAPTURE.md)",
        capture_cli.add_arguments,
        capture_cli.run,
    ),
}


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line exits with 3 (bad input): 2 is `compare`'s "not valid"."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(workspace.EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="profscope", description="profscope: ML profiles in TensorBoard.")
    parser.add_argument("--version", action="version", version=f"profscope {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, add_arguments, _) in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        add_arguments(command)
        # Every command reads a logdir: the twin of TensorBoard's --profscope_follow_symlinks.
        command.add_argument(
            "--follow-symlinks",
            action="store_true",
            help="also read symbolic links that resolve outside the logdir (skipped by default)",
        )
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Console-script entry point; returns the exit status."""
    args = build_parser().parse_args(argv)
    return COMMANDS[args.command][2](args, out or sys.stdout)
