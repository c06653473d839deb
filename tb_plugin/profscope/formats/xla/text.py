"""What the three PyTorch/XLA text-log readers share: reading lines, the read loop, stack frames, steps.

The metrics report, the PT_XLA_DEBUG log and the graph dump are each read by a line-driven state
machine, a `LineParser` subclass that sees one `feed(number, line)` per line, closes what is still
open at `close(last_line)` and builds its file's dataclass in `result()`. `LineParser.read` is the
loop around them: open through fsspec (or take the given text), count lines with invalid UTF-8 or
cut for their length as skipped, and raise `UnreadableProfile` when the file holds nothing of its format.
"""

from __future__ import annotations

import abc
import dataclasses
import gzip
import re
import zlib
from collections import Counter as Tally
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import fsspec

from profscope.errors import UnreadableProfile, describe_error
from profscope.formats import registry
from profscope.formats.chrome.blocks import InflateLimit, check_inflated

# The end of `function (file:line)`; the function is what precedes the first " (". Found in two
# linear steps: one regex `^(.+?) \((.*):(\d+)\)$` took quadratic time on long lines.
_FRAME_END = re.compile(r":(?P<line>-?\d{1,18})\)$")


@dataclasses.dataclass(frozen=True)
class Frame:
    """One stack frame as PyTorch/XLA prints it: `function (file:line)`; Swift frames have no file."""

    function: str
    file: str | None = None
    line: int | None = None

    @classmethod
    def parse(cls, text: str) -> Frame:
        text = text.strip()
        end = _FRAME_END.search(text)
        split = text.find(" (", 1)
        if end is not None and split > 0 and split + 2 <= end.start():
            return cls(text[:split], text[split + 2 : end.start()], int(end.group("line")))
        return cls(text)

    def label(self) -> str:
        return f"{self.function} ({self.file}:{self.line})" if self.file is not None else self.function


# A line is kept up to this many bytes (the rest of it is passed over in pieces, never held), and
# the file is read in blocks of _READ_BYTES.
MAX_LINE_BYTES = 1 << 20
_READ_BYTES = 1 << 20
# A .gz log is checked for its inflation ratio past this much text (lines cost Python time each,
# so a bomb of newlines must be stopped early; real logs are far below the ratio).
RATIO_CHECK_BYTES = 2 << 20
BAD_UTF8 = "lines with invalid UTF-8 (replaced)"
LONG_LINE = f"lines longer than {MAX_LINE_BYTES >> 20} MB (cut)"
# NUL bytes are never printed by the runtime: they are what a crash leaves in a preallocated or
# partly written log, so they are dropped (the rest of the line is read) and counted.
NUL_BYTES = "lines with NUL bytes (the NULs removed)"


def iter_text_lines(
    path: str, fs: fsspec.AbstractFileSystem | None = None, text: str | None = None
) -> Iterator[tuple[int, str, str | None]]:
    """Yield (1-based line number, line without its end, what was wrong with it or None) for a log.

    Reads through `fs` in blocks so big logs are never held whole, a line longer than
    MAX_LINE_BYTES is cut, and `.gz` (inferred from the name) is refused when it inflates like a
    gzip bomb. A carriage return inside a line (progress bars) also ends a line, keeping the
    line number. The problems are `NUL_BYTES`, `BAD_UTF8` and `LONG_LINE`.
    """
    if text is not None:
        for number, line in enumerate(text.splitlines(), 1):
            problem = None
            if "\0" in line:
                line, problem = line.replace("\0", ""), NUL_BYTES
            if len(line) > MAX_LINE_BYTES:
                line, problem = line[:MAX_LINE_BYTES], LONG_LINE
            for piece in line.split("\r"):
                yield number, piece, problem
        return
    filesystem = fs if fs is not None else fsspec.filesystem("file")
    try:
        with filesystem.open(path, "rb") as raw_handle:
            handle = gzip.GzipFile(fileobj=raw_handle) if path.endswith(".gz") else raw_handle
            raw_lines = _raw_lines(handle, raw_handle if handle is not raw_handle else None)
            for number, (raw, cut, nul) in enumerate(raw_lines, 1):
                problem = LONG_LINE if cut else NUL_BYTES if nul else None
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    line = raw.decode("utf-8", errors="replace")
                    problem = problem or BAD_UTF8
                line = line.rstrip("\r")
                for piece in line.split("\r"):
                    yield number, piece, problem
    except FileNotFoundError as exc:
        raise UnreadableProfile(path, "file not found") from exc
    except InflateLimit as exc:
        raise UnreadableProfile(path, str(exc)) from exc
    except (OSError, EOFError, zlib.error) as exc:
        raise UnreadableProfile(path, f"cannot read it: {_describe(exc)}") from exc


def _describe(exc: BaseException) -> str:
    """An I/O or gzip failure in words (its message, or what kind of failure when it has none)."""
    if isinstance(exc, EOFError):
        return "the gzip stream is truncated"
    if isinstance(exc, (zlib.error, gzip.BadGzipFile)):
        return f"the gzip stream is damaged ({exc})"
    return describe_error(exc)


def _raw_lines(handle: Any, compressed: Any | None) -> Iterator[tuple[bytes, bool, bool]]:
    """(line without its newline and its NUL bytes, whether it was cut to MAX_LINE_BYTES, whether
    it held NUL bytes) of a binary stream; `compressed` is the file under a gzip stream, whose
    position measures the inflation ratio."""
    partial = b""
    cut = nul = False
    inflated = 0
    while True:
        block = handle.read(_READ_BYTES)
        if not block:
            if partial or cut or nul:
                yield partial, cut, nul
            return
        if compressed is not None:
            inflated += len(block)
            check_inflated(inflated, compressed.tell(), RATIO_CHECK_BYTES)
        pieces = block.split(b"\n")
        if b"\0" in block:  # dropped before lines are measured: a run of NULs never cuts a line
            nuls = [b"\0" in piece for piece in pieces]
            pieces = [piece.replace(b"\0", b"") for piece in pieces]
        else:
            nuls = [False] * len(pieces)
        for piece, piece_nul in zip(pieces[:-1], nuls, strict=False):
            if cut:  # the end of a long line: what was kept of it
                yield partial, True, nul or piece_nul
                partial, cut, nul = b"", False, False
                continue
            line = partial + piece if partial else piece
            line_nul = nul or piece_nul
            partial, nul = b"", False
            yield (
                (line[:MAX_LINE_BYTES], True, line_nul)
                if len(line) > MAX_LINE_BYTES
                else (line, False, line_nul)
            )
        nul = nul or nuls[-1]
        if not cut:
            partial += pieces[-1]
            if len(partial) > MAX_LINE_BYTES:
                partial, cut = partial[:MAX_LINE_BYTES], True


class StepItem(Protocol):
    """A record of a log that may end a training step (an execution, a graph sync)."""

    step: int | None

    @property
    def ends_step(self) -> bool: ...


def number_steps(items: Iterable[StepItem]) -> None:
    """Give each item the number of step-ending items before it; logs in which no item ends a step
    (Swift frames, no mark_step) keep their steps unknown."""
    items = list(items)
    if not any(item.ends_step for item in items):
        return
    step = 0
    for item in items:
        item.step = step
        if item.ends_step:
            step += 1


Parsed = TypeVar("Parsed")


class LineParser(abc.ABC, Generic[Parsed]):
    """Base of the text-log readers; a subclass keeps only what its format needs.

    `NOTHING_FOUND` is the reason given when a file holds nothing of the format (`found` says).
    """

    NOTHING_FOUND: ClassVar[str]

    def __init__(self, path: str) -> None:
        self.path = path
        self.ordinal = registry.ordinal_of(path)
        self.skipped: Tally[str] = Tally()
        self.warnings: list[str] = []

    @abc.abstractmethod
    def feed(self, number: int, line: str) -> None:
        """Read one line (`number` is 1-based)."""

    def close(self, last_line: int) -> None:
        """The input ended after `last_line` (0 for an empty file): close what is still open."""

    @abc.abstractmethod
    def result(self) -> Parsed:
        """The file's dataclass, after `close`."""

    @staticmethod
    @abc.abstractmethod
    def found(parsed: Parsed) -> bool:
        """Whether `parsed` holds anything of the format."""

    @classmethod
    def read(cls, path: str, fs: fsspec.AbstractFileSystem | None = None, text: str | None = None) -> Parsed:
        """Parse one log (or `text`, named `path` in messages); `UnreadableProfile` when it cannot be
        opened or `found` is false."""
        parser = cls(path)
        last = 0
        problems: Tally[str] = Tally()
        for number, line, problem in iter_text_lines(path, fs, text):
            if problem is not None and number != last:
                problems[problem] += 1
            parser.feed(number, line)
            last = number
        parser.close(last)
        parser.skipped.update(problems)
        parsed = parser.result()
        if not cls.found(parsed):
            raise UnreadableProfile(path, cls.NOTHING_FOUND)
        return parsed
