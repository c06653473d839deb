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
from typing import Any

from tensorboard import errors as tb_errors

from profscope.formats.xla_metrics import Metric, MetricsFile, Report, Value
from profscope.tools.xla import findings, graph_list
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


def _value_json(value: Value | None) -> dict[str, Any] | None:
    """JSON cannot hold NaN: a `nan` in the report becomes value null with its text kept."""
    if value is None:
        return None
    finite = math.isfinite(value.value)
    return {
        "value": value.value if finite else None,
        "text": value.text,
        "resolution": value.resolution,
        "corrected": value.corrected,
        "unit": value.unit,
    }


def metric_json(metric: Metric) -> dict[str, Any]:
    return {
        "name": metric.name,
        "unit": metric.unit,
        "description": METRIC_DESCRIPTIONS.get(metric.name),
        "line": metric.line,
        "total_samples": metric.total_samples,
        "accumulator": _value_json(metric.accumulator),
        "value_rate": _value_json(metric.value_rate),
        "rate": _value_json(metric.rate),
        "mean": _value_json(metric.mean),
        "stddev": _value_json(metric.stddev),
        "percentiles": [{"p": p, **(_value_json(v) or {})} for p, v in metric.percentiles],
        "corrected": any(v.corrected for _, v in metric.percentiles)
        or any(v is not None and v.corrected for v in (metric.accumulator, metric.value_rate, metric.mean)),
        "legacy_counter_field": metric.legacy_counter_field,
    }


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


def _transfer(report: Report, time_names: Sequence[str], bytes_name: str) -> dict[str, Any]:
    metric = _first(report, time_names)
    data = report.metrics.get(bytes_name)
    return {
        "metric": metric.name if metric else None,
        "transfers": metric.total_samples if metric else None,
        "time_ns": _acc(metric),
        "bytes": _acc(data),
    }


def summary_cards(report: Report | None) -> dict[str, Any] | None:
    """The numbers on top of the view; None entries are shown as "not observed"."""
    if report is None:
        return None
    counters = report.counters
    compile_metric = report.metrics.get("CompileTime")
    execute_metric = report.metrics.get("ExecuteTime")
    fallbacks = sorted(
        ({"name": n, "value": c.value} for n, c in counters.items() if n.startswith("aten::")),
        key=lambda item: -(item["value"] or 0),
    )
    return {
        "uncached_compiles": counters["UncachedCompile"].value if "UncachedCompile" in counters else None,
        "cached_compiles": counters["CachedCompile"].value if "CachedCompile" in counters else None,
        "compilations": compile_metric.total_samples if compile_metric else None,
        "compile_time_ns": _acc(compile_metric),
        "executions": execute_metric.total_samples if execute_metric else None,
        "execute_time_ns": _acc(execute_metric),
        "to_device": _transfer(report, findings.TRANSFER_TO_DEVICE, "OutboundData"),
        "from_device": _transfer(report, findings.TRANSFER_FROM_DEVICE, "InboundData"),
        "cpu_fallback_calls": sum(f["value"] or 0 for f in fallbacks) if fallbacks else None,
        "cpu_fallback_ops": fallbacks,
        "steps": counters["MarkStep"].value if "MarkStep" in counters else None,
    }


def _debug_digest(loaded: Loaded) -> dict[str, Any] | None:
    if not loaded.debug:
        return None
    analyses = [a for _, parsed in loaded.debug for a in parsed.analyses]
    messages = [m for _, parsed in loaded.debug for m in parsed.messages]
    causes = Tally((a.kind, a.cause) for a in analyses)
    distinct: dict[str, dict[str, Any]] = {}
    for m in messages:
        item = distinct.setdefault(m.text, {"text": m.text, "kind": m.kind, "count": 0, "first_line": m.line})
        item["count"] += 1
        item["last_line"] = m.line
    return {
        "compilations": [graph_list.analysis_json(a) for a in analyses if a.kind == "compilation"],
        "executions": sum(1 for a in analyses if a.kind == "execution"),
        "unexpected_executions": sum(1 for a in analyses if a.kind == "unexpected_execution"),
        "causes": [{"kind": k, "cause": c, "count": n} for (k, c), n in causes.most_common()],
        "messages": list(distinct.values()),
    }


def build_report(files: Sequence[XlaFile], ordinal: int | None = None) -> dict[str, Any]:
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


def report_of(loaded: Loaded) -> dict[str, Any]:
    chosen = choose_snapshot(loaded.metrics)
    snapshot = chosen[1] if chosen else None
    series: Series | None = series_of([parsed for _, parsed in loaded.metrics])
    if series is not None:
        series.source = next((f.label for f, p in loaded.metrics if p.path == series.source), series.source)
    graph_entries = graph_list.entries(loaded)
    return {
        "ordinal": loaded.ordinal,
        "ordinals": loaded.ordinals,
        "snapshot": None
        if chosen is None
        else {
            "path": chosen[0].label,
            "step": chosen[1].step,
            "first_line": chosen[1].first_line,
            "last_line": chosen[1].last_line,
        },
        "summary": summary_cards(snapshot),
        "metrics": [metric_json(m) for m in sorted(snapshot.metrics.values(), key=lambda m: m.name)]
        if snapshot
        else [],
        "counters": [
            {
                "name": c.name,
                "value": c.value,
                "category": counter_category(c.name),
                "description": counter_description(c.name),
            }
            for c in sorted(snapshot.counters.values(), key=lambda c: c.name)
        ]
        if snapshot
        else [],
        "series": series.to_json() if series is not None else None,
        "warmup_steps": findings.WARMUP_STEPS,
        "debug": _debug_digest(loaded),
        "graphs": {"records": len(graph_entries), "unique": len({e.record.key for e in graph_entries})}
        if loaded.graphs
        else None,
        "findings": findings.find(loaded, snapshot, series),
        "sources": loaded.sources(),
        "errors": loaded.errors,
    }


def graphs(files: Sequence[XlaFile], ordinal: int | None = None) -> dict[str, Any]:
    """The graph list of one host (see `graph_list.graphs`)."""
    return graph_list.graphs(_loaded_graphs(files, ordinal))


def graph(files: Sequence[XlaFile], index: int, ordinal: int | None = None) -> dict[str, Any]:
    """One graph's text and drawing (see `graph_list.graph`)."""
    return graph_list.graph(_loaded_graphs(files, ordinal), index)


def diff(files: Sequence[XlaFile], a: int, b: int, ordinal: int | None = None) -> dict[str, Any]:
    """Node-by-node comparison of graphs `a` and `b` (see `xla_graph_diff.compare`)."""
    return graph_list.diff(_loaded_graphs(files, ordinal), a, b)


def _loaded_graphs(files: Sequence[XlaFile], ordinal: int | None) -> Loaded:
    if not files:
        raise tb_errors.NotFoundError("no PyTorch/XLA logs for this host")
    return load(files, ordinal)
