"""PyTorch/XLA and X10 graph logs (`XLA_SAVE_TENSORS_FILE`, formats text / hlo / dot / stablehlo) → dataclasses.

Each time the runtime builds a graph it appends a record:

    [ScheduleSyncTensorsGraph]          (also SyncTensorsGraph, GetTensorsOpByOp, dynamo, …)
    TensorsGraphInfo:
      sync (/path/torch_xla.py:87)      (Python frames; X10 prints `Swift Frames:` then functions)

    Root Hashes: (…)                    (`Hashes:` before 2023)

    ## BEGIN_GRAPH
    IR { … }                            (or `digraph G {…}`, `HloModule …`, `module @… {…}`)

    Graph Hash: 91f4…                   (since 2023)

    ## END_GRAPH

Records from 2019 have no BEGIN/END markers: the graph follows the frames. X10 with
`XLA_LOG_GRAPH_CHANGES=1` adds `New graph structure`, or `Found different shape: A vs B for:` with
the node and the current and previous traces that built it.

Bodies are kept zlib-compressed and shared between records with identical text, so logs of long runs
(the same graph thousands of times) stay small in memory; `body(record)` gives the text back.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import zlib

import fsspec

from profscope.formats.xla.graph_text import graph_format, is_node_line
from profscope.formats.xla.text import Frame, LineParser, number_steps

_HEADER = re.compile(r"^\[(?P<name>[A-Za-z_][\w .:-]*)\]\s*$")
_HASHES = re.compile(r"^(?P<kind>Root Hashes|Hashes): *\((?P<list>[^)]*)\)")
_GRAPH_HASH = re.compile(r"^Graph Hash: *(?P<hash>[0-9a-fA-F]+)")
_SHAPE_CHANGE = re.compile(r"^Found different shape: (?P<current>.*) vs (?P<previous>.*) for:\s*$")
_FRAME_KIND = {"Swift Frames:": "swift", "Python Frames:": "python", "Frames:": "python"}


@dataclasses.dataclass
class GraphChange:
    """X10's `XLA_LOG_GRAPH_CHANGES` note on a graph: new structure, or the first node whose shape changed."""

    kind: str  # "new_structure" or "different_shape"
    line: int
    current_shape: str | None = None
    previous_shape: str | None = None
    node: str | None = None
    current_trace: list[Frame] = dataclasses.field(default_factory=list)
    previous_trace: list[Frame] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class GraphRecord:
    """One graph record of the log, in file order."""

    index: int
    line: int
    header: str
    frames: list[Frame] = dataclasses.field(default_factory=list)
    frame_kind: str | None = None  # "python" / "swift"
    root_hashes: list[str] = dataclasses.field(default_factory=list)
    graph_hash: str | None = None
    format: str = "unknown"  # "text", "dot", "hlo", "stablehlo" or "unknown"
    num_nodes: int = 0
    digest: str = ""  # sha1 of the body text: equal digests = identical graphs
    body_lines: tuple[int, int] = (0, 0)
    complete: bool = False  # the END_GRAPH marker (or, in old logs, the end of the body) was seen
    change: GraphChange | None = None
    output_sharding: list[str] = dataclasses.field(default_factory=list)
    step: int | None = None  # inferred from the step-ending syncs before it

    @property
    def key(self) -> str:
        """What the graph list groups by: the runtime's graph hash, else the body digest."""
        return self.graph_hash or f"sha1:{self.digest[:16]}"

    @property
    def ends_step(self) -> bool:
        """A sync the training loop asks for at the end of a step (mark_step / torch_xla.sync)."""
        return any(_is_step_sync(frame) for frame in self.frames[:2])


@dataclasses.dataclass
class GraphsFile:
    """All records of one graph log, plus the compressed bodies they point to."""

    path: str
    ordinal: int | None
    records: list[GraphRecord]
    bodies: dict[str, bytes]
    skipped: dict[str, int]
    warnings: list[str]

    def body(self, record: GraphRecord) -> str:
        """The graph text of `record` as the runtime wrote it."""
        data = self.bodies.get(record.digest)
        return zlib.decompress(data).decode("utf-8") if data is not None else ""


def _is_step_sync(frame: Frame) -> bool:
    file = frame.file or ""
    if frame.function in ("mark_step", "_mark_step") and file.endswith(("xla_model.py", "torch_xla.py")):
        return True
    if frame.function == "sync" and file.endswith("torch_xla.py"):
        return True
    return frame.function == "next" and file.endswith("parallel_loader.py")


class _Parser(LineParser[GraphsFile]):
    NOTHING_FOUND = "no PyTorch/XLA graph record (`[…]` header then `TensorsGraphInfo:`) found"

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.records: list[GraphRecord] = []
        self.bodies: dict[str, bytes] = {}
        self.record: GraphRecord | None = None
        self.state = "idle"  # idle, frames, preamble, body, unmarked_body, after, change, sharding
        self.body: list[str] = []
        self.body_start = 0
        self.change_target = ""  # which trace of a shape change is being read

    def _finish_body(self, number: int) -> None:
        record = self.record
        assert record is not None
        lines = self.body
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
        text = "\n".join(lines)
        record.format = graph_format(lines[0]) if lines else "unknown"
        record.num_nodes = sum(1 for line in lines if is_node_line(record.format, line))
        record.digest = hashlib.sha1(text.encode("utf-8")).hexdigest()
        if record.digest not in self.bodies:
            self.bodies[record.digest] = zlib.compress(text.encode("utf-8"), 6)
        record.body_lines = (self.body_start, number)
        self.body = []

    def _close(self, number: int) -> None:
        record = self.record
        if record is None:
            return
        if self.state in ("body", "unmarked_body"):
            self._finish_body(number)
            if self.state == "unmarked_body":
                record.complete = True
            else:
                self.skipped["graph without END_GRAPH (kept, truncated)"] += 1
        elif self.state in ("frames", "preamble"):
            self.skipped["graph record without a graph"] += 1
            self.record = None
            self.state = "idle"
            return
        self.records.append(record)
        self.record = None
        self.state = "idle"

    def feed(self, number: int, line: str) -> None:
        state = self.state
        header = _HEADER.match(line) if line[:1] == "[" else None
        if state == "body" and header is None:
            # A record header (never part of a graph text) ends a graph whose END_GRAPH is missing:
            # otherwise the records after an unclosed graph would all be read as its body.
            self._feed_marked_body(number, line)
            return
        if header and state != "sharding":
            self._close(number)
            self.record = GraphRecord(index=len(self.records), line=number, header=header.group("name"))
            self.state = "frames"
            return
        record = self.record
        stripped = line.strip()
        if record is None:
            if stripped:
                self.skipped["lines outside any graph record"] += 1
            return
        if state == "frames":
            if stripped == "TensorsGraphInfo:":
                return
            if stripped in _FRAME_KIND:
                record.frame_kind = _FRAME_KIND[stripped]
                return
            if line.startswith("  ") and stripped:
                frame = Frame.parse(stripped)
                record.frames.append(frame)
                if record.frame_kind is None:
                    record.frame_kind = "python" if frame.file is not None else "swift"
                return
            self.state = state = "preamble"
        if state == "preamble":
            self._feed_preamble(number, line, stripped)
            return
        if state == "unmarked_body":
            self.body.append(line)
            return
        self._feed_after(number, line, stripped)

    def _feed_preamble(self, number: int, line: str, stripped: str) -> None:
        record = self.record
        assert record is not None
        m = _HASHES.match(stripped)
        if m:
            record.root_hashes = [h.strip() for h in m.group("list").split(",") if h.strip()]
        elif stripped == "## BEGIN_GRAPH":
            self.state = "body"
            self.body_start = number + 1
        elif stripped and graph_format(stripped) != "unknown":
            self.state = "unmarked_body"
            self.body_start = number
            self.body.append(line)
        elif stripped:
            self.skipped["unexpected line before a graph"] += 1

    def _feed_marked_body(self, number: int, line: str) -> None:
        record = self.record
        assert record is not None
        stripped = line.strip()
        if stripped == "## END_GRAPH":
            self._finish_body(number)
            record.complete = True
            self.state = "after"
            return
        m = _GRAPH_HASH.match(stripped)
        if m:
            record.graph_hash = m.group("hash")
            return
        self.body.append(line)

    def _feed_after(self, number: int, line: str, stripped: str) -> None:
        record = self.record
        assert record is not None
        if stripped == "#OUTPUT_SHARDING_BEGIN":
            self.state = "sharding"
            return
        if self.state == "sharding":
            if stripped == "#OUTPUT_SHARDING_END":
                self.state = "after"
            elif stripped:
                record.output_sharding.append(stripped)
            return
        if stripped == "New graph structure":
            record.change = GraphChange(kind="new_structure", line=number)
            return
        # Checked first so the regex never backtracks over a long line that lacks the end.
        m = _SHAPE_CHANGE.match(stripped) if stripped.rstrip().endswith(" for:") else None
        if m:
            record.change = GraphChange(
                kind="different_shape",
                line=number,
                current_shape=m.group("current").strip(),
                previous_shape=m.group("previous").strip(),
            )
            self.state = "change"
            self.change_target = "node"
            return
        if self.state == "change" and record.change is not None:
            change = record.change
            if stripped == "Current trace:":
                self.change_target = "current"
            elif stripped == "Previous trace:":
                self.change_target = "previous"
            elif stripped in _FRAME_KIND or not stripped:
                return
            elif self.change_target == "node" and change.node is None:
                change.node = stripped
            elif self.change_target == "current":
                change.current_trace.append(Frame.parse(stripped))
            elif self.change_target == "previous":
                change.previous_trace.append(Frame.parse(stripped))
            return
        m = _GRAPH_HASH.match(stripped)
        if m and record.graph_hash is None:
            record.graph_hash = m.group("hash")
            return
        if stripped:
            self.skipped["unexpected line after a graph"] += 1

    def close(self, last_line: int) -> None:
        self._close(last_line + 1)

    def result(self) -> GraphsFile:
        number_steps(self.records)
        return GraphsFile(
            path=self.path,
            ordinal=self.ordinal,
            records=self.records,
            bodies=self.bodies,
            skipped=dict(self.skipped),
            warnings=self.warnings,
        )

    @staticmethod
    def found(parsed: GraphsFile) -> bool:
        return bool(parsed.records)


def read(path: str, fs: fsspec.AbstractFileSystem | None = None, text: str | None = None) -> GraphsFile:
    """Parse one graph log (or `text`, named `path` in messages).

    Raises `UnreadableProfile` only when the file cannot be opened or holds no graph record.
    """
    return _Parser.read(path, fs, text)
