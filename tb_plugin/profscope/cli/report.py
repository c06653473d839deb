"""`profscope report`: what the tabs say about one session, as Markdown or as the routes' JSON.

Each section is read from the answer of the route its tab calls (overview, roofline, memory,
`xla/report`), asked for the session's hosts the tool applies to, merged as the tab merges them; a
section whose tool applies to none of the hosts, or whose answer says the profile does not hold it,
is left out.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, TextIO

from profscope import answers
from profscope.cli import markdown
from profscope.cli.workspace import EXIT_FAILED, EXIT_OK, CliError, Workspace, add_logdir_arguments

# Section → the route whose answer it is written from (in the order the report shows them).
SECTIONS: dict[str, str] = {
    "steps": "/overview",
    "breakdown": "/overview",
    "phases": "/overview",
    "findings": "/overview",
    "ops": "/overview",
    "roofline": "/roofline",
    "memory": "/memory",
    "xla": "/xla/report",
}
# Route → the tool it belongs to and the key of its answer in `--json`.
ROUTE_TOOLS: dict[str, str] = {
    "/overview": "overview",
    "/roofline": "roofline",
    "/memory": "memory",
    "/xla/report": "xla",
}
DEFAULT_TOP = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_logdir_arguments(parser)
    parser.add_argument(
        "run", nargs="?", help="run as `profscope ls` shows it (default: the logdir's only run)"
    )
    parser.add_argument("session", nargs="?", help="session (default: the run's latest)")
    parser.add_argument(
        "hosts", nargs="?", metavar="HOST[,HOST...]", help="hosts, merged (default: all of the session's)"
    )
    parser.add_argument("--json", action="store_true", help="print the routes' own answers as JSON")
    parser.add_argument(
        "--sections",
        type=_sections,
        default=list(SECTIONS),
        metavar="A,B",
        help=f"sections to give, comma-separated (default: all): {', '.join(SECTIONS)}",
    )
    parser.add_argument("--top", type=int, default=DEFAULT_TOP, metavar="N", help="rows of each op table")


def _sections(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in names if s not in SECTIONS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown section(s) {', '.join(unknown) or '(none)'}: pick from {', '.join(SECTIONS)}"
        )
    return names


def answers_for(workspace: Workspace, subject: dict[str, str], sections: list[str]) -> dict[str, Any]:
    """The answer of each route the sections need, by tool id, for the subject's hosts that tool
    applies to (a tool that applies to none is left out)."""
    found: dict[str, Any] = {}
    for route in dict.fromkeys(SECTIONS[s] for s in sections):
        tool = ROUTE_TOOLS[route]
        hosts = workspace.hosts_of(subject, tool)
        if hosts:
            found[tool] = workspace.call(route, {**subject, "host": ",".join(hosts)})
    return found


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Exit status: 0 with a report, 1 when the logdir has no run or no section has data, 3 for an
    unknown run, session or host or an unreadable file (the message says which)."""
    workspace = Workspace(args.logdir, args.cache_dir, args.follow_symlinks, sys.stderr)
    try:
        subject = workspace.subject(args.run, args.session, args.hosts)
        found = answers_for(workspace, subject, args.sections)
    except CliError as e:
        out.write(f"error: {e}\n")
        return e.code
    finally:
        workspace.close()
    if args.json:
        out.write(answers.encode({"subject": subject, **found}).decode() + "\n")
        return EXIT_OK if found else EXIT_FAILED
    lines, missing = render(subject, found, args.sections, args.top)
    out.write("\n".join(lines) + "\n")
    return EXIT_OK if len(missing) < len(args.sections) else EXIT_FAILED


def render(
    subject: dict[str, str], found: dict[str, Any], sections: list[str], top: int
) -> tuple[list[str], list[str]]:
    """The Markdown report, and the sections it leaves out (the profile does not hold them)."""
    hosts = subject["host"].replace(",", ", ")
    lines = [
        f"# profscope report: run `{subject['run']}`, session `{subject['session']}`",
        "",
        f"Hosts: {hosts}.",
    ]
    missing: list[str] = []
    for section in sections:
        answer = found.get(ROUTE_TOOLS[SECTIONS[section]])
        written = _section(section, answer, top) if answer is not None else None
        if written is None:
            missing.append(section)
        else:
            lines += ["", *written]
    if missing:
        lines += ["", f"Not in this profile: {', '.join(missing)}."]
    return lines, missing


def _section(section: str, answer: Any, top: int) -> list[str] | None:
    """One section's lines, or None when the answer holds nothing for it."""
    writers: dict[str, tuple[Callable[[Any], bool], Callable[[Any], list[str]]]] = {
        "steps": (lambda a: bool(a.per_host), markdown.steps),
        "breakdown": (lambda a: bool(a.per_host), markdown.breakdown),
        "phases": (markdown.has_phases, markdown.phases),
        "findings": (lambda a: True, markdown.findings),
        "ops": (lambda a: bool(a.per_host), lambda a: markdown.ops(a, top)),
        "roofline": (lambda a: a.observed, lambda a: markdown.roofline(a, top)),
        "memory": (lambda a: a.observed, markdown.memory),
        "xla": (lambda a: a.summary is not None or bool(a.findings), markdown.xla),
    }
    holds, write = writers[section]
    return write(answer) if holds(answer) else None
