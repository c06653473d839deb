"""`profscope` command line: check what the plugin sees in a logdir without starting TensorBoard.

Subcommands live in `COMMANDS` (name → (help, add_arguments, run)); adding one is one function pair
and one table entry. `run` returns the process exit status.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

import msgspec

from profscope import logdir as logdir_lib
from profscope import runs
from profscope import tools as profscope_tools
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
    listing = logdir_lib.discover(args.logdir)
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


Command = tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace, TextIO], int]]

COMMANDS: dict[str, Command] = {
    "ls": (
        "list the runs, sessions, hosts and files profscope finds in a logdir",
        _add_ls_arguments,
        _run_ls,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="profscope", description="profscope: ML profiles in TensorBoard.")
    parser.add_argument("--version", action="version", version=f"profscope {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, add_arguments, _) in COMMANDS.items():
        add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Console-script entry point; returns the exit status."""
    args = build_parser().parse_args(argv)
    return COMMANDS[args.command][2](args, out or sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
