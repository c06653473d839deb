"""What every finding rule reads: the loaded logs and the views derived from them, computed once.

Inputs are whatever the user captured — a metrics report, a per-step `XLA_METRICS_FILE` series, the
PT_XLA_DEBUG log, the `XLA_SAVE_TENSORS_FILE` graph log — so each view says when it has nothing
(None, empty). Thresholds follow PyTorch/XLA's own debug tool where it has one.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter as Tally
from collections.abc import Sequence

from profscope.formats.xla.debug import Analysis, ProfilerMessage
from profscope.formats.xla.metrics import Report
from profscope.formats.xla.text import Frame
from profscope.tools.xla import graph_diff
from profscope.tools.xla.answers import XlaFindingDiff
from profscope.tools.xla.graph_list import Entry, entries, user_frame
from profscope.tools.xla.rules.evidence import plural
from profscope.tools.xla.series import Series
from profscope.xla_logs import Loaded

WARMUP_STEPS = 3  # the forward/backward graph, then the graph with optimizer state: a few steps
PER_STEP_THRESHOLD = 0.5  # PyTorch/XLA's debug tool flags more than 0.5 compilations/transfers per step
TRANSFER_FROM_DEVICE = ("TransferFromDeviceTime", "TransferFromServerTime")
TRANSFER_TO_DEVICE = ("TransferToDeviceTime", "TransferToServerTime")
FORCED_EXECUTION_CAUSE = "most likely user code trying to access tensor value"
MAX_DIFF_ORIGINS = 10  # origin nodes a finding keeps per graph comparison


@dataclasses.dataclass(frozen=True)
class ShapeFamily:
    """Distinct graphs with identical structure (ops and wiring) but different tensor sizes, in log
    order, with the comparison of each member with the one before it."""

    members: list[Entry]
    diffs: list[XlaFindingDiff]


class Context:
    """The loaded files plus the derived views the rules need."""

    def __init__(self, loaded: Loaded, snapshot: Report | None, series: Series | None) -> None:
        self.loaded = loaded
        self.snapshot = snapshot
        self.series = series
        self.analyses: list[Analysis] = [a for _, parsed in loaded.debug for a in parsed.analyses]
        self.messages: list[ProfilerMessage] = [m for _, parsed in loaded.debug for m in parsed.messages]
        self.entries: list[Entry] = entries(loaded)
        self.user_frames: list[Frame | None] = [user_frame(e.record.frames) for e in self.entries]
        self._structures: dict[tuple[int, str], str] = {}

    def structure(self, entry: Entry) -> str | None:
        """The structure key of an entry's graph, computed once per distinct body."""
        key = (id(entry.file), entry.record.digest)
        if key not in self._structures:
            nodes = entry.nodes()
            self._structures[key] = graph_diff.structure_key(nodes) if nodes else ""
        return self._structures[key] or None

    def counter(self, name: str) -> int | None:
        if self.snapshot is None or name not in self.snapshot.counters:
            return None
        return self.snapshot.counters[name].value

    def steps_run(self) -> int | None:
        """Steps the run has taken: MarkStep counter, else the series length, else the debug log."""
        marks = self.counter("MarkStep")
        if marks:
            return marks
        if self.series is not None and self.series.x_label == "step":
            return len(self.series.steps)
        ends = sum(1 for a in self.analyses if a.ends_step)
        return ends or None

    def per_step(self, metric_names: Sequence[str]) -> tuple[dict[int, float], str] | None:
        """Samples of the first present metric added in each step, from the series."""
        if self.series is None or self.series.x_label != "step":
            return None
        for name in metric_names:
            if name in self.series.metric_names():
                return dict(zip(self.series.steps, self.series.delta_samples(name))), name
        return None

    def forced_executions(self) -> Tally[Frame]:
        """User frames that made the runtime execute early to read a value on the host."""
        frames: Tally[Frame] = Tally()
        for a in self.analyses:
            if a.kind == "execution" and a.cause.startswith(FORCED_EXECUTION_CAUSE):
                frame = user_frame(a.frames)
                if frame is not None:
                    frames[frame] += 1
        if not frames:
            for e in self.entries:
                if not e.record.ends_step and e.record.frames:
                    frame = user_frame(e.record.frames)
                    if frame is not None:
                        frames[frame] += 1
        return frames

    def messages_of(self, kind: str, metric: str | None = None) -> list[ProfilerMessage]:
        return [m for m in self.messages if m.kind == kind and (metric is None or m.metric == metric)]

    def sources(self, *kinds: str) -> list[str]:
        """The files of these kinds ("metrics", "debug", "graphs"), as the UI names them."""
        out = []
        for kind in kinds:
            out.extend(file.label for file, _ in getattr(self.loaded, kind))
        return out

    @functools.cached_property
    def shape_families(self) -> list[ShapeFamily]:
        """Families of distinct graphs that differ only in tensor sizes (the dynamic-shape finding
        lists them, the recompilation finding points to them)."""
        first_of_key: dict[str, Entry] = {}
        for entry in self.entries:
            first_of_key.setdefault(entry.record.key, entry)
        families: dict[str, list[Entry]] = {}
        for entry in first_of_key.values():
            nodes = entry.nodes()
            if not nodes or not any(n.shape for n in nodes):
                continue
            families.setdefault(graph_diff.structure_key(nodes), []).append(entry)
        out = []
        for members in families.values():
            if len(members) < 2:
                continue
            diffs = []
            for previous, current in zip(members, members[1:]):
                result = graph_diff.compare(previous.nodes(), current.nodes())
                if result is None or not result.shape_changes:
                    continue
                diffs.append(
                    XlaFindingDiff(
                        a=previous.index,
                        b=current.index,
                        summary=(
                            f"{previous.record.key[:12]} (step {previous.record.step}) → {current.record.key[:12]} "
                            f"(step {current.record.step}): {plural(len(result.shape_changes), 'node')} changed shape"
                        ),
                        same_structure=True,
                        origins=result.origins[:MAX_DIFF_ORIGINS],
                    )
                )
            if diffs:
                out.append(ShapeFamily(members, diffs))
        return out
