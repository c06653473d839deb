"""What the three PyTorch/XLA text-log readers share: reading lines, the read loop, stack frames, steps.

The metrics report, the PT_XLA_DEBUG log and the graph dump are each read by a line-driven state
machine, a `LineParser` subclass that sees one `feed(number, line)` per line, closes what is still
open at `close(last_line)` and builds its file's dataclass in `result()`. `LineParser.read` is the
loop around them: open through fsspec (or take the given text), count lines with invalid UTF-8 as
skipped, and raise `UnreadableProfile` when the file holds nothing of its format.
"""

from __future__ import annotations

import abc
import dataclasses
import gzip
import re
from collections import Counter as Tally
from collections.abc import Iterable, Iterator
from typing import ClassVar, Generic, Protocol, TypeVar

import fsspec

from profscope.errors import UnreadableProfile
from profscope.formats import registry

_FRAME = re.compile(r"^(?P<function>.+?) \((?P<file>.*):(?P<line>-?\d+)\)$")


@dataclasses.dataclass(frozen=True)
class Frame:
    """One stack frame as PyTorch/XLA prints it: `function (file:line)`; Swift frames have no file."""

    function: str
    file: str | None = None
    line: int | None = None

    @classmethod
    def parse(cls, text: str) -> Frame:
        m = _FRAME.match(text.strip())
        if m:
            return cls(m.group("function"), m.group("file"), int(m.group("line")))
        return cls(text.strip())

    def label(self) -> str:
        return f"{self.function} ({self.file}:{self.line})" if self.file is not None else self.function


def iter_text_lines(
    path: str, fs: fsspec.AbstractFileSystem | None = None, text: str | None = None
) -> Iterator[tuple[int, str, bool]]:
    """Yield (1-based line number, line without its end, had invalid UTF-8) for a text log.

    Reads through `fs` one line at a time so big logs are never held whole; `.gz` is inferred from the
    name. A carriage return inside a line (progress bars) also ends a line, keeping the line number.
    """
    if text is not None:
        for number, line in enumerate(text.splitlines(), 1):
            for piece in line.split("\r"):
                yield number, piece, False
        return
    filesystem = fs if fs is not None else fsspec.filesystem("file")
    try:
        with filesystem.open(path, "rb") as raw_handle:
            handle = gzip.GzipFile(fileobj=raw_handle) if path.endswith(".gz") else raw_handle
            for number, raw in enumerate(handle, 1):
                try:
                    line = raw.decode("utf-8")
                    bad = False
                except UnicodeDecodeError:
                    line = raw.decode("utf-8", errors="replace")
                    bad = True
                line = line.rstrip("\n").rstrip("\r")
                for piece in line.split("\r"):
                    yield number, piece, bad
    except FileNotFoundError as exc:
        raise UnreadableProfile(path, "file not found") from exc
    except (OSError, EOFError) as exc:
        raise UnreadableProfile(path, f"cannot read it: {exc}") from exc


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
        bad_lines = 0
        for number, line, bad in iter_text_lines(path, fs, text):
            bad_lines += bad
            parser.feed(number, line)
            last = number
        parser.close(last)
        if bad_lines:
            parser.skipped["lines with invalid UTF-8 (replaced)"] += bad_lines
        parsed = parser.result()
        if not cls.found(parsed):
            raise UnreadableProfile(path, cls.NOTHING_FOUND)
        return parsed
