"""What `report`, `compare` and `mcp` share: the plugin over one logdir, its subjects, and calling a
tool's route handler as the tab does, waiting while a trace is ingested.

The commands never analyse anything themselves: they build the plugin TensorBoard would build
(`ProfscopePlugin`, same cache directory by default, same path checks), resolve run / session /
hosts through its `resolve` (so an unknown name is answered with what exists, in the tab's words) and
call the handler of a route (`tools.routes()`), so every number is the tab's.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, TextIO

from tensorboard import errors
from tensorboard.plugins import base_plugin

from profscope import logdir as logdir_lib
from profscope import tools
from profscope.context import StillIngesting
from profscope.engine.answers import Ingesting
from profscope.errors import UnreadableProfile
from profscope.params import Params
from profscope.plugin import ProfscopePlugin, UnprocessableProfileError, ingest_failure
from profscope.units import format_bytes

# Exit statuses of `report`, `compare` and `mcp` (docs/CLI.md).
EXIT_OK = 0
EXIT_FAILED = 1  # the gate failed, or nothing was found
EXIT_NOT_VALID = 2  # the comparison does not compare like with like
EXIT_BAD_INPUT = 3  # a run, session or host that does not exist, a bad option, an unreadable file

# How often an ingest's progress is asked for, and how often a line is written when stderr is no
# terminal (a CI log keeps every line; a terminal's line is rewritten in place).
POLL_S = 0.5
LOG_EVERY_S = 5.0


class CliError(Exception):
    """A message for the user and the exit status it ends the command with."""

    def __init__(self, message: str, code: int = EXIT_BAD_INPUT) -> None:
        super().__init__(message)
        self.code = code


def add_logdir_arguments(parser: argparse.ArgumentParser) -> None:
    """The logdir and the cache, as every analysing command takes them."""
    parser.add_argument("logdir", help="local folder or fsspec URL given to tensorboard --logdir")
    parser.add_argument(
        "--cache-dir",
        help="profscope's cache of decoded traces (default: the plugin's, shared with TensorBoard)",
    )


class ProgressLine:
    """The ingest's progress on stderr: rewritten in place on a terminal, a line now and then elsewhere."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream
        self._last_logged = 0.0
        self._open = False

    @staticmethod
    def text(progress: Ingesting) -> str:
        share = progress.bytes_done / progress.bytes_total if progress.bytes_total else 0.0
        files = len(progress.files)
        return (
            f"reading {files} trace file{'s' if files != 1 else ''}: {format_bytes(progress.bytes_done)} of "
            f"{format_bytes(progress.bytes_total)} ({share:.0%}, {progress.stage})"
        )

    def show(self, progress: Ingesting) -> None:
        if self.stream is None:
            return
        text = self.text(progress)
        if self.stream.isatty():
            self.stream.write(f"\r{text}\x1b[K")
            self._open = True
        elif time.monotonic() - self._last_logged >= LOG_EVERY_S:
            self.stream.write(text + "\n")
            self._last_logged = time.monotonic()
        self.stream.flush()

    def done(self) -> None:
        if self.stream is not None and self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False


def latest_session(run: logdir_lib.Run) -> logdir_lib.Session:
    """The run's latest capture: the last session in `profscope ls` order (their names are capture
    times) other than the PyTorch/XLA logs' `xla` session, which holds no capture; that one when
    the run has nothing else."""
    captures = [s for s in run.sessions if s.name != logdir_lib.XLA_SESSION]
    return (captures or run.sessions)[-1]


class Workspace:
    """The plugin over one logdir, as TensorBoard would start it with these flags."""

    def __init__(
        self, logdir: str, cache_dir: str | None, follow_symlinks: bool, progress: TextIO | None = None
    ) -> None:
        flags = argparse.Namespace(profscope_cache_dir=cache_dir, profscope_follow_symlinks=follow_symlinks)
        self.plugin = ProfscopePlugin(base_plugin.TBContext(logdir=logdir, flags=flags))
        self.progress = ProgressLine(progress)
        self._engine_used = False

    def listing(self) -> logdir_lib.Listing:
        listing = self.plugin.listing()
        if not listing.runs:
            reasons = "".join(f"\n  {e}" for e in listing.errors)
            raise CliError(
                logdir_lib.empty_logdir_message(listing.logdir, cli_hint=False) + reasons, EXIT_FAILED
            )
        return listing

    def subject(
        self, run: str | None, session: str | None = None, hosts: str | None = None, prefix: str = ""
    ) -> dict[str, str]:
        """The query parameters naming a subject: `run` (may be left out when the logdir has one),
        `session` (default: the run's latest, `latest_session`) and `hosts` (comma-separated;
        default: all of the session's, merged)."""
        listing = self.listing()
        if run is None:
            if len(listing.runs) > 1:
                names = ", ".join(repr(r.name) for r in listing.runs)
                raise CliError(f"logdir {listing.logdir} has {len(listing.runs)} runs: name one ({names})")
            run = listing.runs[0].name
        found = listing.run(run)
        if session is None and found is not None:
            session = latest_session(found).name
        chosen = found.session(session) if found is not None and session is not None else None
        if hosts is None and chosen is not None:
            hosts = ",".join(h.name for h in chosen.hosts)
        # What does not exist is said by the plugin's own resolution, naming what does.
        return {f"{prefix}run": run, f"{prefix}session": session or "?", f"{prefix}host": hosts or "?"}

    def hosts_of(self, subject: dict[str, str], tool: str, prefix: str = "") -> list[str]:
        """The subject's hosts the tool applies to (its tab is shown for them), in their order."""
        ctx = self._resolve(Params(subject), prefix)
        return [h.name for h in ctx.hosts if tool in tools.applicable(h)]

    def call(self, route: str, query: dict[str, str], wait_s: float | None = None) -> Any:
        """The answer of the route's handler to `query` (`run_with`)."""
        return self.run_with(tools.routes()[route][1], query, wait_s)

    def run_with(self, handler: tools.Handler, query: dict[str, str], wait_s: float | None = None) -> Any:
        """`handler(ctx, params)` for `query`, as the plugin calls a route: waiting while a trace is
        ingested (progress on stderr; at most `wait_s`, then a `CliError` with the progress), a
        plugin error turned into a `CliError` with the tab's message."""
        params = Params(query)
        give_up = None if wait_s is None else time.monotonic() + wait_s
        try:
            while True:
                ctx = self._resolve(params)
                self._engine_used = True
                try:
                    return handler(ctx, params)
                except StillIngesting as waiting:
                    if give_up is not None and time.monotonic() >= give_up:
                        raise CliError(
                            f"still {self.progress.text(waiting.progress)}: ask again later"
                        ) from None
                    self.progress.show(waiting.progress)
                    time.sleep(POLL_S)
        except UnreadableProfile as e:
            raise CliError(str(UnprocessableProfileError(e))) from e
        except errors.PublicError as e:
            raise CliError(logdir_lib.printable(str(ingest_failure(e)))) from e
        finally:
            self.progress.done()

    def _resolve(self, params: Params, prefix: str = "") -> Any:
        try:
            return self.plugin.resolve(params, prefix)
        except errors.PublicError as e:
            raise CliError(logdir_lib.printable(str(e))) from e

    def close(self) -> None:
        """Let the ingest helper processes go."""
        if self._engine_used:
            self.plugin.trace_service().manager.close()
