"""The XLA view's main answer: summary cards, the metrics and counters tables, per-step series, the
PT_XLA_DEBUG digest and the findings, for one host (and device ordinal) of a run.

The tables show one report — the snapshot: the last report of a file printed without step headers
(`metrics_report()` at the end of training), else the last `[MetricsData; step=N]` report — and the
charts show the per-step series when one exists. Values are in nanoseconds, bytes or plain numbers, as
`torch_xla.debug.metrics.metric_data()` gives them, each with the resolution it was printed at.
"""

from __future__ import annotations

import math
from collections import Counter as Tally
from collections.abc import Sequence

from tensorboard import errors as tb_errors

from profscope.formats.xla.metrics import Metric, MetricsFile, Report, Value
from profscope.tools.xla import graph_list, provenance, rules
from profscope.tools.xla.answers import (
    XlaCauseCount,
    XlaCounter,
    XlaDebugDigest,
    XlaDiff,
    XlaFallbackOp,
    XlaGraph,
    XlaGraphCounts,
    XlaGraphList,
    XlaMessageCount,
    XlaMetric,
    XlaPercentile,
    XlaReport,
    XlaSnapshot,
    XlaSummary,
    XlaTransfer,
    XlaValue,
)
from profscope.tools.xla.rules.context import TRANSFER_FROM_DEVICE, TRANSFER_TO_DEVICE, WARMUP_STEPS
from profscope.tools.xla.series import Series, series_of
from profscope.xla_logs import Loaded, XlaFile, load

METRIC_DESCRIPTIONS = {
    "CompileTime": "Time XLA spent compiling graphs; one sample per compilation.",
    "ExecuteTime": "Time executing compiled graphs on the device; one sample per execution.",
    "TransferToDeviceTime": "Time copying tensors from the host to the device.",
    "TransferToServerTime": "Time copying tensors from the host to the device (XRT runtime).",
    "TransferFromDeviceTime": "Time copying tensors from the device to the host.",
    "TransferFromServerTime": "Time copying tensors from the device to the host (XRT runtime).",
    "InboundData": "Bytes copied from the device to the host.",
    "OutboundData": "Bytes copied from the host to the device.",
    "DeviceLockWait": "Time waiting for the device lock before running work.",
    "TensorsGraphSize": "IR nodes in each graph handed to the runtime; one sample per sync.",
    "InputOutputAliasCount": "Input buffers reused as outputs in each compiled graph.",
    "LazyTracing": "Time tracing PyTorch ops into the lazy IR.",
}
COUNTER_DESCRIPTIONS = {
    "CachedCompile": "Graphs found in the compilation cache (no compilation needed).",
    "UncachedCompile": "Graphs compiled because they were not in the cache.",
    "MarkStep": "Step boundaries (mark_step / torch_xla.sync).",
    "CreateXlaTensor": "XLA tensors created.",
    "DestroyXlaTensor": "XLA tensors destroyed.",
    "ExecuteComputation": "Compiled graphs executed.",
}


def _printed(value: Value | None) -> XlaValue | None:
    """JSON cannot hold NaN: a `nan` in the report becomes value null with its text kept."""
    if value is None:
        return None
    return XlaValue(
        value=value.value if math.isfinite(value.value) else None,
        text=value.text,
        resolution=value.resolution,
        corrected=value.corrected,
        unit=value.unit,
    )


def _percentile(p: float, value: Value) -> XlaPercentile:
    return XlaPercentile(
        p=p,
        value=value.value if math.isfinite(value.value) else None,
        text=value.text,
        resolution=value.resolution,
        corrected=value.corrected,
        unit=value.unit,
    )


def metric_row(metric: Metric) -> XlaMetric:
    return XlaMetric(
        name=metric.name,
        unit=metric.unit,
        description=METRIC_DESCRIPTIONS.get(metric.name),
        line=metric.line,
        total_samples=metric.total_samples,
        accumulator=_printed(metric.accumulator),
        value_rate=_printed(metric.value_rate),
        rate=_printed(metric.rate),
        mean=_printed(metric.mean),
        stddev=_printed(metric.stddev),
        percentiles=[_percentile(p, v) for p, v in metric.percentiles],
        corrected=any(v.corrected for _, v in metric.percentiles)
        or any(v is not None and v.corrected for v in (metric.accumulator, metric.value_rate, metric.mean)),
        legacy_counter_field=metric.legacy_counter_field,
    )


def counter_category(name: str) -> str:
    if name.startswith("aten::"):
        return "cpu_fallback"
    if "::" in name:
        return "op"
    return "runtime"


def counter_description(name: str) -> str | None:
    if name.startswith("aten::"):
        return "Calls of this op that ran on the CPU (no XLA lowering, or a value read on the host)."
    if name.startswith(("xla::", "lazy::")):
        return "Calls of this PyTorch op traced into the XLA graph."
    return COUNTER_DESCRIPTIONS.get(name)


def choose_snapshot(files: Sequence[tuple[XlaFile, MetricsFile]]) -> tuple[XlaFile, Report] | None:
    """The report the tables show: a report printed on its own wins over the per-step series."""
    standalone = [
        (f, p.reports[-1]) for f, p in files if p.reports and all(r.step is None for r in p.reports)
    ]
    if standalone:
        return max(standalone, key=lambda fr: (_marks(fr[1]), len(fr[1].metrics) + len(fr[1].counters)))
    stepped = [(f, p.reports[-1]) for f, p in files if p.reports]
    if not stepped:
        return None
    return max(stepped, key=lambda fr: (_marks(fr[1]), fr[1].step or 0))


def _marks(report: Report) -> int:
    counter = report.counters.get("MarkStep")
    return counter.value or 0 if counter is not None else 0


def _first(report: Report, names: Sequence[str]) -> Metric | None:
    return next((report.metrics[n] for n in names if n in report.metrics), None)


def _acc(metric: Metric | None) -> float | None:
    if metric is None or metric.accumulator is None or not math.isfinite(metric.accumulator.value):
        return None
    return metric.accumulator.value


def _transfer(report: Report, time_names: Sequence[str], bytes_name: str) -> XlaTransfer:
    metric = _first(report, time_names)
    return XlaTransfer(
        metric=metric.name if metric else None,
        transfers=metric.total_samples if metric else None,
        time_ns=_acc(metric),
        bytes=_acc(report.metrics.get(bytes_name)),
    )


def summary_cards(report: Report | None) -> XlaSummary | None:
    """The numbers on top of the view; None entries are shown as "not observed"."""
    if report is None:
        return None
    counters = report.counters
    compile_metric = report.metrics.get("CompileTime")
    execute_metric = report.metrics.get("ExecuteTime")
    fallbacks = sorted(
        (XlaFallbackOp(name=n, value=c.value) for n, c in counters.items() if n.startswith("aten::")),
        key=lambda op: -(op.value or 0),
    )
    return XlaSummary(
        uncached_compiles=counters["UncachedCompile"].value if "UncachedCompile" in counters else None,
        cached_compiles=counters["CachedCompile"].value if "CachedCompile" in counters else None,
        compilations=compile_metric.total_samples if compile_metric else None,
        compile_time_ns=_acc(compile_metric),
        executions=execute_metric.total_samples if execute_metric else None,
        execute_time_ns=_acc(execute_metric),
        to_device=_transfer(report, TRANSFER_TO_DEVICE, "OutboundData"),
        from_device=_transfer(report, TRANSFER_FROM_DEVICE, "InboundData"),
        cpu_fallback_calls=sum(op.value or 0 for op in fallbacks) if fallbacks else None,
        cpu_fallback_ops=fallbacks,
        steps=counters["MarkStep"].value if "MarkStep" in counters else None,
    )


def _debug_digest(loaded: Loaded) -> XlaDebugDigest | None:
    if not loaded.debug:
        return None
    analyses = [a for _, parsed in loaded.debug for a in parsed.analyses]
    messages = [m for _, parsed in loaded.debug for m in parsed.messages]
    causes = Tally((a.kind, a.cause) for a in analyses)
    distinct: dict[str, XlaMessageCount] = {}
    for m in messages:
        item = distinct.setdefault(
            m.text, XlaMessageCount(text=m.text, kind=m.kind, count=0, first_line=m.line, last_line=m.line)
        )
        item.count += 1
        item.last_line = m.line
    return XlaDebugDigest(
        compilations=[graph_list.analysis_info(a) for a in analyses if a.kind == "compilation"],
        executions=sum(1 for a in analyses if a.kind == "execution"),
        unexpected_executions=sum(1 for a in analyses if a.kind == "unexpected_execution"),
        causes=[XlaCauseCount(kind=k, cause=c, count=n) for (k, c), n in causes.most_common()],
        messages=list(distinct.values()),
    )


def build_report(files: Sequence[XlaFile], ordinal: int | None = None) -> XlaReport:
    """Everything the XLA view shows for one host's XLA logs (see the module docstring)."""
    if not files:
        raise tb_errors.NotFoundError(
            "no PyTorch/XLA logs (metrics report, PT_XLA_DEBUG, graph dump) for this host"
        )
    loaded = load(files, ordinal)
    if not (loaded.metrics or loaded.debug or loaded.graphs):
        reasons = "; ".join(f"{e['path']}: {e['error']}" for e in loaded.errors)
        raise tb_errors.NotFoundError(f"no readable PyTorch/XLA log for this host ({reasons})")
    return report_of(loaded)


def report_of(loaded: Loaded) -> XlaReport:
    chosen = choose_snapshot(loaded.metrics)
    snapshot = chosen[1] if chosen else None
    series: Series | None = series_of([parsed for _, parsed in loaded.metrics])
    if series is not None:
        series.source = next((f.label for f, p in loaded.metrics if p.path == series.source), series.source)
    graph_entries = graph_list.entries(loaded)
    return XlaReport(
        ordinal=loaded.ordinal,
        ordinals=loaded.ordinals,
        snapshot=None
        if chosen is None
        else XlaSnapshot(
            path=chosen[0].label,
            step=chosen[1].step,
            first_line=chosen[1].first_line,
            last_line=chosen[1].last_line,
        ),
        summary=summary_cards(snapshot),
        metrics=[metric_row(m) for m in sorted(snapshot.metrics.values(), key=lambda m: m.name)]
        if snapshot
        else [],
        counters=[
            XlaCounter(
                name=c.name,
                value=c.value,
                category=counter_category(c.name),
                description=counter_description(c.name),
            )
            for c in sorted(snapshot.counters.values(), key=lambda c: c.name)
        ]
        if snapshot
        else [],
        series=series.answer() if series is not None else None,
        warmup_steps=WARMUP_STEPS,
        debug=_debug_digest(loaded),
        graphs=XlaGraphCounts(records=len(graph_entries), unique=len({e.record.key for e in graph_entries}))
        if loaded.graphs
        else None,
        findings=rules.find(loaded, snapshot, series),
        sources=provenance.sources(loaded),
        errors=provenance.errors(loaded),
    )


def graphs(files: Sequence[XlaFile], ordinal: int | None = None) -> XlaGraphList:
    """The graph list of one host (see `graph_list.graphs`)."""
    return graph_list.graphs(_loaded_graphs(files, ordinal))


def graph(files: Sequence[XlaFile], index: int, ordinal: int | None = None) -> XlaGraph:
    """One graph's text and drawing (see `graph_list.graph`)."""
    return graph_list.graph(_loaded_graphs(files, ordinal), index)


def diff(files: Sequence[XlaFile], a: int, b: int, ordinal: int | None = None) -> XlaDiff:
    """Node-by-node comparison of graphs `a` and `b` (see `graph_diff.compare`)."""
    return graph_list.diff(_loaded_graphs(files, ordinal), a, b)


def _loaded_graphs(files: Sequence[XlaFile], ordinal: int | None) -> Loaded:
    if not files:
        raise tb_errors.NotFoundError("no PyTorch/XLA logs for this host")
    return load(files, ordinal)
