"""PyTorch/XLA debug output (`PT_XLA_DEBUG`, `PT_XLA_DEBUG_LEVEL`, `PT_XLA_DEBUG_FILE`) → dataclasses.

Two kinds of lines come out of the debug tool, usually mixed into a training log:
- `pt-xla-profiler: …` one-line verdicts of the runtime's own metrics analysis (too frequent
  compilations or transfers, too slow compilations, ops that fell back to the CPU);
- `Compilation Analysis:`, `Post Compilation Analysis:`, `Execution Analysis:` (and `Unexpected
  Execution Analysis:`) blocks framed by `====` lines, giving the cause of each compilation or
  execution, the graph hash, its inputs/outputs, the Python frames that triggered it and, after
  compiling, the memory sizes. A `Computation hash:` line sits between a compilation and its sizes.
"""

from __future__ import annotations

import dataclasses
import re

import fsspec

from profscope.formats.xla.metrics import parse_time_ns
from profscope.formats.xla.text import Frame, LineParser, number_steps

_GIB = 1024.0**3
_ANALYSIS = re.compile(
    r"(?P<kind>Unexpected Execution|Post Compilation|Compilation|Execution) Analysis: ?(?P<body>.*)$"
)
_PROFILER = re.compile(r"pt-xla-profiler:?\s+(?P<body>.*)$")
_COMPUTATION_HASH = re.compile(r"Computation hash: *([0-9a-fA-F]+)")
_TOO_FREQUENT = re.compile(
    r"(?<!\w)(?P<metric>\w+) too frequent:? (?P<count>\d{1,18})(?: counts)? (?:during|in) (?P<steps>\d{1,18}) steps"
)
_TOO_SLOW = re.compile(r"(?<!\w)(?P<metric>\w+) too slow: longest instance took (?P<time>[0-9.dhmsu]+)")
_NOT_LOWERED = re.compile(r"Op\(s\) not lowered: (?P<ops>.*)$")
_XRT_FREQUENT = re.compile(r"Following metrics too frequent: (?P<items>.*?)during (?P<steps>\d{1,18}) steps")
_XRT_ITEM = re.compile(r"(?<!\w)(?P<metric>\w+) \((?P<count>\d{1,18}(?:\.\d*)?(?:e[+-]?\d{1,3})?) counts\)")
_SIZE = re.compile(
    r"(?P<what>Graph input|Graph output|Aliased Input|Intermediate tensor|Compiled program) size: *(?P<gb>\d{1,18}(?:\.\d*)?|Unknown) *GB"
)

# Causes the debug tool prints for the sync that ends a training step; releases say `mark_step` or
# `torch_xla.sync` in the same sentences.
STEP_END_CAUSES = (
    re.compile(r"^user (?:mark_step|torch_xla\.sync)$"),
    re.compile(r"^(?:mark_step|torch_xla\.sync) in parallel loader at step end$"),
    re.compile(r"^(?:mark_step|torch_xla\.sync) when exiting a profiler StepTrace region$"),
)


@dataclasses.dataclass
class Analysis:
    """One `Compilation Analysis` / `Execution Analysis` block."""

    kind: str  # "compilation", "execution" or "unexpected_execution"
    line: int
    cause: str = ""
    graph_name: str | None = None
    graph_hash: str | None = None
    num_inputs: int | None = None
    num_outputs: int | None = None
    frames: list[Frame] = dataclasses.field(default_factory=list)
    frames_truncated: bool = False
    complete: bool = False
    post: PostCompilation | None = None  # compilations: the sizes printed after compiling
    step: int | None = None  # inferred from the step-ending executions before it

    @property
    def ends_step(self) -> bool:
        """An execution the training loop asks for at the end of a step (mark_step / sync)."""
        return self.kind == "execution" and any(p.match(self.cause) for p in STEP_END_CAUSES)


@dataclasses.dataclass
class PostCompilation:
    """A `Post Compilation Analysis` block; sizes in bytes (printed as GB with 6 decimals)."""

    line: int
    computation_hash: str | None = None
    input_bytes: float | None = None
    output_bytes: float | None = None
    aliased_input_bytes: float | None = None
    intermediate_bytes: float | None = None
    program_bytes: float | None = None
    complete: bool = False


@dataclasses.dataclass
class ProfilerMessage:
    """One `pt-xla-profiler:` line."""

    line: int
    kind: str  # "too_frequent", "too_slow", "not_lowered", "xrt_too_frequent" or "other"
    text: str
    metric: str | None = None
    count: float | None = None
    steps: int | None = None
    ops: list[str] = dataclasses.field(default_factory=list)
    duration_ns: float | None = None
    metrics: dict[str, float] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class DebugFile:
    """Everything read from one debug log."""

    path: str
    ordinal: int | None
    analyses: list[Analysis]
    messages: list[ProfilerMessage]
    skipped: dict[str, int]
    warnings: list[str]


_COUNT_FIELDS = {"Number of Graph Inputs": "num_inputs", "Number of Graph Outputs": "num_outputs"}
_SIZE_FIELDS = {
    "Graph input": "input_bytes",
    "Graph output": "output_bytes",
    "Aliased Input": "aliased_input_bytes",
    "Intermediate tensor": "intermediate_bytes",
    "Compiled program": "program_bytes",
}


def parse_profiler_message(number: int, body: str) -> ProfilerMessage:
    """Classify one `pt-xla-profiler:` message and pull its numbers out."""
    body = body.strip()
    m = _TOO_FREQUENT.search(body)
    if m:
        return ProfilerMessage(
            number, "too_frequent", body, m.group("metric"), float(m.group("count")), int(m.group("steps"))
        )
    m = _TOO_SLOW.search(body)
    if m:
        try:
            duration = parse_time_ns(m.group("time").rstrip("."))[0]
        except ValueError:
            duration = None
        return ProfilerMessage(number, "too_slow", body, m.group("metric"), duration_ns=duration)
    m = _NOT_LOWERED.search(body)
    if m:
        # The list ends where the advice to open an issue begins (found by `find`, not by a lazy
        # regex, which took quadratic time on long runs of blanks).
        listed = m.group("ops")
        advice = listed.find("Please open")
        listed = listed[:advice] if advice >= 0 else listed
        ops = [op.strip() for op in listed.split(",") if op.strip()]
        return ProfilerMessage(number, "not_lowered", body, ops=ops)
    m = _XRT_FREQUENT.search(body)
    if m:
        items = {i.group("metric"): float(i.group("count")) for i in _XRT_ITEM.finditer(m.group("items"))}
        return ProfilerMessage(number, "xrt_too_frequent", body, steps=int(m.group("steps")), metrics=items)
    return ProfilerMessage(number, "other", body)


class _Parser(LineParser[DebugFile]):
    NOTHING_FOUND = "no PyTorch/XLA debug output (no `Compilation Analysis` or `pt-xla-profiler` lines) found"

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.analyses: list[Analysis] = []
        self.messages: list[ProfilerMessage] = []
        self.current: Analysis | None = None
        self.section = ""
        self.saw_dashes = False
        self.post: PostCompilation | None = None
        self.pending_hash: str | None = None

    def _close(self) -> None:
        if self.current is not None:
            if not self.current.complete:
                self.skipped[f"truncated {self.current.kind} analysis (kept)"] += 1
            self.analyses.append(self.current)
        self.current = None
        self.section = ""
        self.saw_dashes = False

    def _close_post(self) -> None:
        post, self.post = self.post, None
        if post is None:
            return
        if not post.complete:
            self.skipped["truncated post-compilation analysis (kept)"] += 1
        for analysis in reversed(self.analyses):
            if analysis.kind == "compilation":
                if analysis.post is None:
                    analysis.post = post
                    return
                break
        self.skipped["post-compilation analysis without its compilation"] += 1

    def feed(self, number: int, line: str) -> None:
        if "pt-xla-profiler" in line:
            m = _PROFILER.search(line)
            if m:
                message = parse_profiler_message(number, m.group("body"))
                if message.kind == "too_slow" and message.duration_ns is None:
                    self.skipped["unreadable time in a 'too slow' message (kept without it)"] += 1
                self.messages.append(message)
                return
        if "Analysis:" not in line:
            if "Computation hash:" in line:
                m = _COMPUTATION_HASH.search(line)
                if m:
                    self.pending_hash = m.group(1)
            return
        m = _ANALYSIS.search(line)
        if not m:
            return
        kind = m.group("kind")
        body = m.group("body").rstrip()
        if kind == "Post Compilation":
            self._feed_post(number, body)
            return
        self._close_post()
        kind_id = {"Compilation": "compilation", "Execution": "execution"}.get(kind, "unexpected_execution")
        stripped = body.strip()
        if stripped.startswith("====") and stripped == "=" * len(stripped):
            if self.current is None or self.current.kind != kind_id:
                self._close()
                self.current = Analysis(kind=kind_id, line=number)
            elif self.saw_dashes:
                self.current.complete = True
                self._close()
            return
        if self.current is None or self.current.kind != kind_id:
            self._close()
            self.current = Analysis(kind=kind_id, line=number)
            self.skipped[f"{kind_id} analysis without its opening line"] += 1
        self._feed_body(body)

    def _feed_body(self, body: str) -> None:
        current = self.current
        assert current is not None
        stripped = body.strip()
        if stripped.startswith("----") and stripped == "-" * len(stripped):
            self.saw_dashes = True
            return
        if not body.startswith(" "):
            if stripped in ("Compilation Cause", "Execution Cause"):
                self.section = "cause"
            elif stripped.startswith("Graph Info"):
                self.section = "graph"
            elif stripped.startswith("Python Frame"):
                self.section = "frames"
            else:
                self.section = ""
            return
        if self.section == "cause":
            current.cause = f"{current.cause} {stripped}".strip()
        elif self.section == "graph":
            label, _, value = stripped.partition(":")
            value = value.strip()
            try:
                if label == "Graph Hash":
                    current.graph_hash = value
                elif label == "Graph Name":
                    current.graph_name = value
                elif label in _COUNT_FIELDS:
                    count = int(value)
                    if count < 0:
                        raise ValueError(f"negative {label}")
                    setattr(current, _COUNT_FIELDS[label], count)
            except ValueError:
                self.skipped[f"unreadable {label}"] += 1
        elif self.section == "frames":
            if stripped.strip(".") == "":
                current.frames_truncated = True
            else:
                current.frames.append(Frame.parse(stripped))

    def _feed_post(self, number: int, body: str) -> None:
        stripped = body.strip()
        if stripped.startswith("====") and stripped == "=" * len(stripped):
            if self.post is None:
                self._close()
                self.post = PostCompilation(line=number, computation_hash=self.pending_hash)
                self.pending_hash = None
            elif self.saw_dashes:
                self.post.complete = True
                self.saw_dashes = False
                self._close_post()
            return
        if self.post is None:
            self._close()
            self.post = PostCompilation(line=number, computation_hash=self.pending_hash)
            self.pending_hash = None
        if stripped.startswith("----"):
            self.saw_dashes = True
            return
        m = _SIZE.search(stripped)
        if m and m.group("gb") != "Unknown":
            setattr(self.post, _SIZE_FIELDS[m.group("what")], float(m.group("gb")) * _GIB)
        elif m is None and "size:" in stripped:  # a negative, non-finite or unprintable size
            self.skipped["unreadable post-compilation size"] += 1

    def close(self, last_line: int) -> None:
        self._close()
        self._close_post()

    def result(self) -> DebugFile:
        number_steps(self.analyses)
        return DebugFile(
            path=self.path,
            ordinal=self.ordinal,
            analyses=self.analyses,
            messages=self.messages,
            skipped=dict(self.skipped),
            warnings=self.warnings,
        )

    @staticmethod
    def found(parsed: DebugFile) -> bool:
        return bool(parsed.analyses or parsed.messages)


def read(path: str, fs: fsspec.AbstractFileSystem | None = None, text: str | None = None) -> DebugFile:
    """Parse one PT_XLA_DEBUG log (or `text`, named `path` in messages).

    Raises `UnreadableProfile` only when the file cannot be opened or holds neither analyses nor
    `pt-xla-profiler` lines.
    """
    return _Parser.read(path, fs, text)
