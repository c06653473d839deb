"""The shared reading of the XLA text logs (`formats.xla_text`): one read loop for the three readers,
tried on a minimal parser of its own and on each reader's edge cases."""

from __future__ import annotations

import dataclasses
import pathlib

import pytest

from profscope.errors import UnreadableProfile
from profscope.formats.xla import debug as xla_debug
from profscope.formats.xla import graphs as xla_graphs
from profscope.formats.xla import metrics as xla_metrics
from profscope.formats.xla.text import Frame, LineParser, number_steps

pytestmark = pytest.mark.stack_independent


@dataclasses.dataclass
class Marks:
    path: str
    ordinal: int | None
    lines: list[tuple[int, str]]
    closed_after: int
    skipped: dict[str, int]


class MarkParser(LineParser[Marks]):
    """Keeps the lines that start with `mark`; counts the others as skipped."""

    NOTHING_FOUND = "no mark line found"

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.lines: list[tuple[int, str]] = []
        self.closed_after = -1

    def feed(self, number: int, line: str) -> None:
        if line.startswith("mark"):
            self.lines.append((number, line))
        else:
            self.skipped["other line"] += 1

    def close(self, last_line: int) -> None:
        self.skipped["still open at the end"] += 1
        self.closed_after = last_line

    def result(self) -> Marks:
        return Marks(self.path, self.ordinal, self.lines, self.closed_after, dict(self.skipped))

    @staticmethod
    def found(parsed: Marks) -> bool:
        return bool(parsed.lines)


def test_the_loop_numbers_lines_splits_carriage_returns_and_names_the_ordinal(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "w.log.3"
    path.write_bytes(b"mark a\nother\r mark b\rmark c\r\n")  # progress-bar returns inside line 2
    parsed = MarkParser.read(str(path))
    assert parsed.ordinal == 3
    assert parsed.lines == [(1, "mark a"), (2, "mark c")]  # " mark b" does not start with mark
    assert parsed.closed_after == 2
    assert parsed.skipped == {"other line": 2, "still open at the end": 1}


def test_invalid_utf8_is_counted_after_what_closing_skipped(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "marks.log"
    path.write_bytes(b"mark \xff\nmark ok\n")
    parsed = MarkParser.read(str(path))
    assert parsed.lines == [(1, "mark \ufffd"), (2, "mark ok")]
    assert list(parsed.skipped) == ["still open at the end", "lines with invalid UTF-8 (replaced)"]
    assert parsed.skipped["lines with invalid UTF-8 (replaced)"] == 1


def test_nothing_of_the_format_or_no_file_is_unreadable(tmp_path: pathlib.Path) -> None:
    with pytest.raises(UnreadableProfile, match="no mark line found"):
        MarkParser.read("x.log", text="hello\n")
    with pytest.raises(UnreadableProfile, match="no mark line found"):
        MarkParser.read("empty.log", text="")
    with pytest.raises(UnreadableProfile, match="file not found"):
        MarkParser.read(str(tmp_path / "missing.log"))


@pytest.mark.parametrize(
    ("reader", "reason"),
    [
        (xla_metrics.read, "no PyTorch/XLA metrics report"),
        (xla_debug.read, "no PyTorch/XLA debug output"),
        (xla_graphs.read, "no PyTorch/XLA graph record"),
    ],
)
def test_each_reader_goes_through_the_loop(tmp_path: pathlib.Path, reader, reason: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UnreadableProfile, match=reason):
        reader("plain.log", text="just a training log\n")
    with pytest.raises(UnreadableProfile, match="file not found"):
        reader(str(tmp_path / "missing.log"))


@dataclasses.dataclass
class Sync:
    ends_step: bool
    step: int | None = None


def test_steps_count_the_step_ending_items_before() -> None:
    items = [Sync(False), Sync(True), Sync(False), Sync(True), Sync(True), Sync(False)]
    number_steps(items)
    assert [i.step for i in items] == [0, 0, 1, 1, 2, 3]
    unknown = [Sync(False), Sync(False)]
    number_steps(unknown)
    assert [i.step for i in unknown] == [None, None]  # no item ends a step: steps stay unknown


def test_frames_as_pytorch_xla_prints_them() -> None:
    assert Frame.parse("  step (/src/train.py:12)") == Frame("step", "/src/train.py", 12)
    assert Frame.parse("$s6Models5train4stepyyF").label() == "$s6Models5train4stepyyF"
    assert Frame("f", "/a b/c.py", 3).label() == "f (/a b/c.py:3)"
