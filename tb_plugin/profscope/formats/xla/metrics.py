"""PyTorch/XLA and X10 runtime metrics reports (`metrics_report()`, `XLA_METRICS_FILE`) → dataclasses.

Both runtimes print the same text: `Metric:` blocks (TotalSamples, Accumulator — `Counter:` before
late 2019 —, ValueRate, Rate, Percentiles; XRT blocks add Mean/StdDev) and `Counter:` blocks (Value).
Users paste these reports into logs, so the parser accepts them glued to other output, with launcher
prefixes on every line (timestamps, host, `[rank]`), several reports in one file and the
`[MetricsData; step=N]` headers that `XLA_METRICS_FILE` writes before each per-step snapshot.

Values are converted to the units `torch_xla.debug.metrics.metric_data()` returns: nanoseconds for
times, bytes for sizes, plain numbers otherwise. The C++ time formatter rounds every non-final part
(`ms`, `s`, …) to the nearest integer but subtracts only its floor, so `070ms564.310us` stands for
69.564310 ms; `parse_time_ns` undoes that, otherwise percentiles come out non-monotone.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re

import fsspec

from profscope.formats.xla.text import LineParser

UNIT_TIME = "ns"
UNIT_BYTES = "B"
UNIT_NUMBER = ""

_TIME_SCALE_NS = {
    "d": 86400 * 10**9,
    "h": 3600 * 10**9,
    "m": 60 * 10**9,
    "s": 10**9,
    "ms": 10**6,
    "us": 1000,
    "ns": 1,
}
_TIME_ORDER = ("d", "h", "m", "s", "ms", "us", "ns")
_TIME_PART = re.compile(r"(\d+(?:\.\d*)?)(ms|us|ns|d|h|m|s)")
_BYTES = re.compile(r"([-+]?(?:\d+(?:\.\d*)?|nan|inf))(B|KB|MB|GB|TB|PB)", re.IGNORECASE)
_BYTE_SCALE = {"B": 1.0, "KB": 1024.0, "MB": 1024.0**2, "GB": 1024.0**3, "TB": 1024.0**4, "PB": 1024.0**5}
_NUMBER = re.compile(r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|infinity)", re.IGNORECASE)

_STEP_HEADER = re.compile(r"\[MetricsData;\s*step=(-?\d{1,18})\]")
# No value the runtime prints is this long; longer text is not parsed (regexes and int() of
# thousands of digits cost time or raise).
_MAX_VALUE_CHARS = 200
_KEYS = "Metric|Counter|TotalSamples|Accumulator|ValueRate|Rate|Mean|StdDev|Percentiles|Value"
# A key starts the line or follows a launcher prefix that ends in a blank, `]`, `:`, `>` or `|`.
# No match starts after two blanks (one starting a blank earlier is the same match): otherwise
# every position of a long run of blanks would scan the rest of it.
_KEY_LINE = re.compile(
    rf"(?:^|(?<=[\s\]:>|)]))(?<![ \t][ \t])(?P<indent>[ \t]*)(?P<key>{_KEYS}):(?P<rest>.*)$"
)
_NAME = re.compile(r"\S+")


@dataclasses.dataclass(frozen=True)
class Value:
    """One printed value: `value` in the metric's unit, `resolution` = one unit of the last printed digit."""

    value: float
    unit: str | None  # UNIT_TIME, UNIT_BYTES, UNIT_NUMBER; None for an empty field (an old zero)
    resolution: float
    text: str
    corrected: bool = False  # a rounded-up time part was brought back down


@dataclasses.dataclass
class Metric:
    """One `Metric:` block. Percentiles cover only the runtime's recent-sample window (1024 by default)."""

    name: str
    line: int
    total_samples: int | None = None
    accumulator: Value | None = None
    value_rate: Value | None = None  # per second
    rate: Value | None = None  # samples per second
    mean: Value | None = None  # XRT blocks only
    stddev: Value | None = None  # XRT blocks only
    percentiles: list[tuple[float, Value]] = dataclasses.field(default_factory=list)
    legacy_counter_field: bool = False  # accumulator printed as `Counter:` (reports before late 2019)
    indent: int = 0

    @property
    def unit(self) -> str | None:
        """The unit the block's values are printed in (None when every value is empty)."""
        for v in (
            self.accumulator,
            self.mean,
            self.stddev,
            self.value_rate,
            *(p[1] for p in self.percentiles),
        ):
            if v is not None and v.unit is not None:
                return v.unit
        return None


@dataclasses.dataclass
class CounterValue:
    """One `Counter:` block."""

    name: str
    line: int
    value: int | None = None
    indent: int = 0


@dataclasses.dataclass
class Report:
    """One metrics report: a `metrics_report()` print or one `[MetricsData; step=N]` snapshot."""

    step: int | None
    first_line: int
    last_line: int = 0
    metrics: dict[str, Metric] = dataclasses.field(default_factory=dict)
    counters: dict[str, CounterValue] = dataclasses.field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.metrics and not self.counters


@dataclasses.dataclass
class MetricsFile:
    """Everything read from one file: reports in file order, what was skipped and why."""

    path: str
    ordinal: int | None
    reports: list[Report]
    skipped: dict[str, int]
    warnings: list[str]


def parse_time_ns(text: str) -> tuple[float, float, bool]:
    """`02h42m54s489ms109.977us` → (nanoseconds, resolution ns, whether a rounded part was corrected).

    Every part but the last is printed rounded to an integer while the formatter subtracts only its
    floor, so when the remainder below a part is at least half of that part's unit, the printed part
    is one too high. Walking from the smallest part up, the exact remainder is known at each step.
    """
    if len(text) > _MAX_VALUE_CHARS:
        raise ValueError(f"not a time: {text[:40]!r}…")
    parts: list[tuple[str, str]] = []
    pos = 0
    last_rank = -1
    # Part by part from where the last one ended (a search from anywhere took quadratic time
    # on a long run of digits).
    while pos < len(text):
        m = _TIME_PART.match(text, pos)
        if m is None:
            raise ValueError(f"not a time: {text!r}")
        rank = _TIME_ORDER.index(m.group(2))
        if rank <= last_rank:
            raise ValueError(f"time parts out of order: {text!r}")
        last_rank = rank
        parts.append((m.group(1), m.group(2)))
        pos = m.end()
    if not parts or pos != len(text):
        raise ValueError(f"not a time: {text!r}")
    # Integer arithmetic in units of the last printed digit keeps `065.502us` at exactly 65502 ns.
    digits, last_unit = parts[-1]
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    per_unit = 10**decimals
    remainder = int(digits.replace(".", ""))
    corrected = False
    for digits, unit in reversed(parts[:-1]):
        scale = _TIME_SCALE_NS[unit] * per_unit // _TIME_SCALE_NS[last_unit]
        if "." in digits:  # never printed by the runtime, but read it as written
            remainder += round(float(digits) * scale)
            continue
        whole = int(digits)
        if whole >= 1 and 2 * remainder >= scale:
            whole -= 1
            corrected = True
        remainder += whole * scale
    ns_per_unit = _TIME_SCALE_NS[last_unit] / per_unit
    return remainder * ns_per_unit, ns_per_unit, corrected


@functools.lru_cache(maxsize=1 << 16)
def parse_value(text: str) -> Value:
    """Parse one printed metric value (time, bytes, plain number, or empty = an old zero).

    ValueError for anything else, also for a number beyond float range (`1e999999`, 400 digits)
    unless it is written `inf` / `nan`: no runtime prints one, and it would break every sum."""
    try:
        value = _parse_value(text)
    except OverflowError:
        value = None
    if value is None or not (math.isfinite(value.value) or _NON_FINITE.search(text)):
        raise ValueError(f"metric value out of range: {text.strip()[:40]!r}")
    return value


_NON_FINITE = re.compile("nan|inf", re.IGNORECASE)


def _parse_value(text: str) -> Value:
    s = text.strip()
    if len(s) > _MAX_VALUE_CHARS:
        raise ValueError(f"not a metric value: {s[:40]!r}…")
    if not s:
        return Value(0.0, None, 0.0, text)
    if s[-1] == "s" and _TIME_PART.match(s):
        ns, resolution, corrected = parse_time_ns(s)
        return Value(ns, UNIT_TIME, resolution, s, corrected)
    m = _BYTES.fullmatch(s)
    if m:
        scale = _BYTE_SCALE[m.group(2).upper()]
        number = m.group(1)
        decimals = len(number.split(".")[1]) if "." in number else 0
        return Value(float(number) * scale, UNIT_BYTES, 10.0**-decimals * scale, s)
    if _NUMBER.fullmatch(s):
        mantissa = s.lower().split("e")[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        exponent = int(s.lower().split("e")[1]) if "e" in s.lower() and "inf" not in s.lower() else 0
        resolution = 10.0 ** max(-400, min(400, exponent - decimals))  # 0 and inf past float range
        return Value(float(s), UNIT_NUMBER, resolution, s)
    raise ValueError(f"not a metric value: {text!r}")


def _parse_rate(text: str) -> Value:
    s = text.strip()
    if s.endswith("/ second"):
        s = s[: -len("/ second")]
    elif s.endswith("/second"):
        s = s[: -len("/second")]
    else:
        raise ValueError(f"not a rate: {text!r}")
    return parse_value(s)


def percentiles_in_order(percentiles: list[tuple[float, Value]]) -> bool:
    """Whether the percentiles are ones a runtime prints: labels rising within 0-100 %, values never
    falling by more than their printed resolution (the runtime rounds each on its own)."""
    labels = [label for label, _ in percentiles]
    if any(not 0 <= label <= 100 for label in labels) or labels != sorted(set(labels)):
        return False
    return all(
        b.value >= a.value - max(a.resolution, b.resolution)
        for (_, a), (_, b) in zip(percentiles, percentiles[1:], strict=False)
    )


def _parse_percentiles(text: str) -> tuple[list[tuple[float, Value]], int]:
    """`1%=000.861us; 5%=…` → [(1.0, Value), …] and the number of unreadable items."""
    out: list[tuple[float, Value]] = []
    bad = 0
    for item in text.split(";"):
        item = item.strip()
        if not item:
            continue
        label, sep, raw = item.partition("=")
        try:
            if not sep or not label.endswith("%"):
                raise ValueError(item)
            out.append((float(label[:-1]), parse_value(raw)))
        except ValueError:
            bad += 1
    return out, bad


class _Parser(LineParser[MetricsFile]):
    """Line-driven state machine; see the module docstring for what it accepts."""

    NOTHING_FOUND = "no PyTorch/XLA metrics report (no `Metric:` or `Counter:` blocks) found"

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.reports: list[Report] = []
        self.report: Report | None = None
        self.block: Metric | CounterValue | None = None
        self.block_impossible: str | None = None  # why the open block holds an impossible value
        self.last_metric_line = 0

    # -- blocks -----------------------------------------------------------------------------
    def _close_block(self) -> None:
        block, self.block = self.block, None
        impossible, self.block_impossible = self.block_impossible, None
        if block is None or self.report is None:
            return
        if impossible is not None:
            self.skipped[f"{type(block).__name__} blocks with {impossible} (dropped)"] += 1
            self.warnings.append(f"{self.path}:{block.line}: {block.name} has {impossible}; dropped")
            return
        if isinstance(block, Metric):
            if block.total_samples is None:
                self.skipped["Metric block without TotalSamples"] += 1
                return
            target = self.report.metrics
        else:
            if block.value is None:
                self.skipped["Counter block without Value"] += 1
                return
            target = self.report.counters
        target[block.name] = block
        if block.line > self.report.last_line:
            self.report.last_line = block.line

    def _close_report(self) -> None:
        self._close_block()
        if self.report is not None and not self.report.empty:
            self.reports.append(self.report)
        self.report = None

    def _start_report(self, step: int | None, line: int) -> None:
        self._close_report()
        self.report = Report(step=step, first_line=line, last_line=line)

    def _open_block(self, block: Metric | CounterValue) -> None:
        self._close_block()
        if self.report is None:
            self._start_report(None, block.line)
        assert self.report is not None
        existing = self.report.metrics if isinstance(block, Metric) else self.report.counters
        if block.name in existing:
            # The same name twice means a new report began without a header (reports printed
            # one after another into a log).
            self._start_report(None, block.line)
        self.block = block

    # -- lines ------------------------------------------------------------------------------
    def feed(self, number: int, line: str) -> None:
        if ":" not in line and "[" not in line:
            return
        step = _STEP_HEADER.search(line)
        if step:
            self._start_report(int(step.group(1)), number)
            return
        m = _KEY_LINE.search(line)
        if not m:
            return
        indent = len(m.group("indent").expandtabs(2))
        key = m.group("key")
        rest = m.group("rest").strip()
        block = self.block
        if key == "Metric":
            name = _NAME.fullmatch(rest)
            if name:
                self._open_block(Metric(name=rest, line=number, indent=indent))
                self.last_metric_line = number
            return
        if key == "Counter":
            if self._is_legacy_accumulator(block, indent, rest):
                assert isinstance(block, Metric)
                self._set_value(block, "accumulator", rest, number)
                block.legacy_counter_field = True
                return
            if _NAME.fullmatch(rest):
                if self._is_repeated_fallback_counter(rest):
                    self._close_block()  # its Value line then finds no block and is dropped
                    return
                self._open_block(CounterValue(name=rest, line=number, indent=indent))
            return
        if isinstance(block, CounterValue):
            if key == "Value" and block.value is None:
                try:
                    block.value = int(float(rest))
                except (ValueError, OverflowError):  # not a number, or nan / inf / 1e999999
                    self.skipped["unreadable Counter value"] += 1
                if block.value is not None and block.value < 0:  # counters only ever count up
                    self.block_impossible = "a negative value"
            return
        if not isinstance(block, Metric):
            return
        if key == "TotalSamples" and block.total_samples is None:
            try:
                block.total_samples = int(rest)
            except ValueError:
                self.skipped["unreadable TotalSamples"] += 1
            if block.total_samples is not None and block.total_samples < 0:
                self.block_impossible = "a negative TotalSamples"
        elif key == "Accumulator" and block.accumulator is None:
            self._set_value(block, "accumulator", rest, number)
        elif key == "Mean" and block.mean is None:
            self._set_value(block, "mean", rest, number)
        elif key == "StdDev" and block.stddev is None:
            self._set_value(block, "stddev", rest, number)
        elif key in ("ValueRate", "Rate") and getattr(block, _RATE_FIELDS[key]) is None:
            try:
                setattr(block, _RATE_FIELDS[key], _parse_rate(rest))
            except ValueError:
                self.skipped[f"unreadable {key}"] += 1
        elif key == "Percentiles" and not block.percentiles:
            block.percentiles, bad = _parse_percentiles(rest)
            if bad:
                self.skipped["unreadable percentile"] += bad
            if not percentiles_in_order(block.percentiles):
                self.skipped["Percentiles lines out of order (dropped)"] += 1
                self.warnings.append(
                    f"{self.path}:{number}: percentiles of {block.name} out of order; dropped"
                )
                block.percentiles = []
        if self.report is not None:
            self.report.last_line = number

    def _is_legacy_accumulator(self, block: Metric | CounterValue | None, indent: int, rest: str) -> bool:
        if not isinstance(block, Metric) or block.accumulator is not None or block.total_samples is None:
            return False
        if indent > block.indent:
            return True
        try:
            parse_value(rest)
        except ValueError:
            return False
        return bool(rest)

    def _is_repeated_fallback_counter(self, name: str) -> bool:
        """`short_metrics_report()` may print an `aten::` counter twice in one report: once among the
        counters asked for and again in its closing list of every `aten::` counter. A repeat with no
        `Metric:` block since the first print belongs to the same report."""
        if self.report is None or not name.startswith("aten::") or name not in self.report.counters:
            return False
        return self.report.counters[name].line > self.last_metric_line

    def _set_value(self, block: Metric, field: str, text: str, line: int) -> None:
        try:
            setattr(block, field, parse_value(text))
        except ValueError:
            self.skipped[f"unreadable {field}"] += 1
            self.warnings.append(f"{self.path}:{line}: unreadable {field} {text.strip()!r} in {block.name}")

    def close(self, last_line: int) -> None:
        self._close_report()

    def result(self) -> MetricsFile:
        for report in self.reports:
            for metric in report.metrics.values():
                units = {
                    v.unit
                    for v in (
                        metric.accumulator,
                        metric.mean,
                        metric.stddev,
                        *(p[1] for p in metric.percentiles),
                    )
                    if v is not None and v.unit is not None
                }
                if len(units) > 1:
                    self.warnings.append(
                        f"{self.path}:{metric.line}: {metric.name} mixes units {sorted(units)}"
                    )
        return MetricsFile(
            path=self.path,
            ordinal=self.ordinal,
            reports=self.reports,
            skipped=dict(self.skipped),
            warnings=self.warnings,
        )

    @staticmethod
    def found(parsed: MetricsFile) -> bool:
        return bool(parsed.reports)


_RATE_FIELDS = {"ValueRate": "value_rate", "Rate": "rate"}


def read(path: str, fs: fsspec.AbstractFileSystem | None = None, text: str | None = None) -> MetricsFile:
    """Parse every metrics report in one file (or in `text`, named `path` in messages).

    Raises `UnreadableProfile` only when the file cannot be opened or holds no report at all.
    """
    return _Parser.read(path, fs, text)
