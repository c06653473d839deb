"""Per-step series from consecutive metrics reports (`XLA_METRICS_FILE`, or reports printed in a log).

Every report is cumulative since the process started (or since `met.clear_all()`), so what happened
*in* a step is the difference between consecutive reports. A metric or counter missing from a report
has not been observed yet (the runtime prints only non-zero ones), which counts as zero for the
difference and is shown as "not observed". A value that goes down means the metrics were cleared;
that step's difference is then the new value itself and the step is listed in `resets`.
"""

from __future__ import annotations

import dataclasses

from profscope.formats.xla.metrics import MetricsFile, Report
from profscope.tools.xla.answers import XlaSeries, XlaSeriesCounter, XlaSeriesMetric


@dataclasses.dataclass
class Series:
    """Reports of one file in order; `steps` holds their `step=N` numbers, or report positions."""

    source: str
    x_label: str  # "step" when the file has `[MetricsData; step=N]` headers, else "report"
    steps: list[int]
    reports: list[Report]

    def metric_samples(self, name: str) -> list[int | None]:
        """Cumulative TotalSamples of `name` per report (None: not in that report)."""
        return [r.metrics[name].total_samples if name in r.metrics else None for r in self.reports]

    def metric_accumulator(self, name: str) -> list[float | None]:
        """Cumulative Accumulator of `name` per report, in the metric's unit."""
        out: list[float | None] = []
        for r in self.reports:
            m = r.metrics.get(name)
            out.append(m.accumulator.value if m is not None and m.accumulator is not None else None)
        return out

    def counter_values(self, name: str) -> list[int | None]:
        return [r.counters[name].value if name in r.counters else None for r in self.reports]

    def delta_samples(self, name: str) -> list[float]:
        """Samples of `name` added in each step."""
        return deltas(self.metric_samples(name))

    def delta_accumulator(self, name: str) -> list[float]:
        """Accumulator added in each step (time in ns, bytes, or a count)."""
        return deltas(self.metric_accumulator(name))

    def delta_counter(self, name: str) -> list[float]:
        return deltas(self.counter_values(name))

    def resets(self) -> list[int]:
        """Steps at which some cumulative value went down (metrics cleared)."""
        out = set()
        names = {n for r in self.reports for n in r.metrics}
        for name in names:
            values = self.metric_samples(name)
            out.update(self.steps[i] for i in _reset_positions(values))
        counters = {n for r in self.reports for n in r.counters}
        for name in counters:
            out.update(self.steps[i] for i in _reset_positions(self.counter_values(name)))
        return sorted(out)

    def metric_names(self) -> list[str]:
        return sorted({n for r in self.reports for n in r.metrics})

    def counter_names(self) -> list[str]:
        return sorted({n for r in self.reports for n in r.counters})

    def answer(self) -> XlaSeries:
        """Everything the per-step charts need: cumulative values and per-step differences."""
        metrics = {}
        for name in self.metric_names():
            unit = next((r.metrics[name].unit for r in self.reports if name in r.metrics), None)
            metrics[name] = XlaSeriesMetric(
                unit=unit,
                samples=self.metric_samples(name),
                accumulator=self.metric_accumulator(name),
                delta_samples=self.delta_samples(name),
                delta_accumulator=self.delta_accumulator(name),
            )
        counters = {
            name: XlaSeriesCounter(values=self.counter_values(name), deltas=self.delta_counter(name))
            for name in self.counter_names()
        }
        return XlaSeries(
            source=self.source,
            x_label=self.x_label,
            steps=self.steps,
            resets=self.resets(),
            metrics=metrics,
            counters=counters,
        )


def _reset_positions(values: list[int | None] | list[float | None]) -> list[int]:
    out = []
    previous = 0.0
    for i, v in enumerate(values):
        current = 0.0 if v is None else float(v)
        if current < previous:
            out.append(i)
        previous = current
    return out


def deltas(values: list[int | None] | list[float | None]) -> list[float]:
    """Differences between consecutive cumulative values; a drop counts as a reset."""
    out = []
    previous = 0.0
    for v in values:
        current = 0.0 if v is None else float(v)
        out.append(current if current < previous else current - previous)
        previous = current
    return out


def series_of(files: list[MetricsFile]) -> Series | None:
    """The per-step series to chart: the file with the most `step=N` reports, else the file with the
    most reports when it has at least two; None when no file holds more than one report."""
    stepped = [f for f in files if any(r.step is not None for r in f.reports)]
    if stepped:
        best = max(stepped, key=lambda f: sum(1 for r in f.reports if r.step is not None))
        reports = [r for r in best.reports if r.step is not None]
        return Series(best.path, "step", [r.step for r in reports if r.step is not None], reports)
    many = [f for f in files if len(f.reports) > 1]
    if not many:
        return None
    best = max(many, key=lambda f: len(f.reports))
    return Series(best.path, "report", list(range(len(best.reports))), list(best.reports))
