"""The `/runs` answer (and `profscope ls --json`): discovery's tree with what each host offers.

Discovery (`profscope.logdir`) finds files and knows nothing of tools or labels; this module adds
what the UI needs to show them: the tools that apply to each host, a label per format (from the
format registry) and a display label per session (a capture time reads as a date and time).
"""

from __future__ import annotations

from profscope import answers, logdir, tools
from profscope.formats import registry


class FileEntry(answers.Answer):
    """One profile file of a host: `format` (and its label for people) is null when no reader knows the
    file; `error` says why a known file cannot be read."""

    name: str
    path: str
    format: str | None
    format_label: str | None
    size: int | None
    mtime: float | None
    error: str | answers.UnsetType = answers.UNSET


class HostEntry(answers.Answer):
    """One host of a session: its files and the ids of the tools that apply to it, in tab order."""

    name: str
    files: list[FileEntry]
    tools: list[str]


class SessionEntry(answers.Answer):
    """One capture: `name` identifies it in requests and links, `label` is what the picker shows."""

    name: str
    label: str
    hosts: list[HostEntry]


class RunEntry(answers.Answer):
    """One run (a folder of the logdir) and its sessions."""

    name: str
    sessions: list[SessionEntry]


class RunsAnswer(answers.Answer):
    """`/runs`: the logdir's runs; `errors` are logdir-level problems (a file's own sit on the file),
    `empty_message` says why nothing was found."""

    logdir: str
    runs: list[RunEntry]
    errors: list[str]
    empty_message: str | answers.UnsetType = answers.UNSET


def file_entry(f: logdir.ProfileFile) -> FileEntry:
    return FileEntry(
        name=f.name,
        path=f.path,
        format=f.format,
        format_label=registry.label(f.format),
        size=f.size,
        mtime=f.mtime,
        error=answers.UNSET if f.error is None else f.error,
    )


def host_entry(host: logdir.Host) -> HostEntry:
    return HostEntry(name=host.name, files=[file_entry(f) for f in host.files], tools=tools.applicable(host))


def answer(listing: logdir.Listing) -> RunsAnswer:
    """The `/runs` answer for one discovery result."""
    runs = [
        RunEntry(
            name=run.name,
            sessions=[
                SessionEntry(
                    name=s.name, label=logdir.session_label(s.name), hosts=[host_entry(h) for h in s.hosts]
                )
                for s in run.sessions
            ],
        )
        for run in listing.runs
    ]
    empty = listing.empty_message
    return RunsAnswer(
        logdir=listing.logdir,
        runs=runs,
        errors=list(listing.errors),
        empty_message=answers.UNSET if empty is None else empty,
    )
