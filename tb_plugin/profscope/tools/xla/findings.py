"""Findings of the XLA view: each a diagnosis with its evidence, the code location and the fix to try.

Inputs are whatever the user captured — a metrics report, a per-step `XLA_METRICS_FILE` series, the
PT_XLA_DEBUG log, the `XLA_SAVE_TENSORS_FILE` graph log — and every finding uses the best evidence
present, saying which. Thresholds follow PyTorch/XLA's own debug tool where it has one (more than
0.5 compilations or device→host transfers per step), and are stated in the finding text.

Findings: recompilation after warm-up, CPU fallbacks (`aten::` counters), frequent device→host
transfers, very long compilations, compilation dominating device time, dynamic shapes (graphs equal
but for tensor sizes, with the nodes where the new size entered), graphs growing step after step
(an unrolled loop), executions inside a compiled region.
"""

from __future__ import annotations

import math
from collections import Counter as Tally
from collections.abc import Sequence
from typing import Any

from profscope.formats.xla_debug import Analysis, Frame, ProfilerMessage
from profscope.formats.xla_metrics import Report
from profscope.tools.xla import graph_diff
from profscope.tools.xla.graph_list import Entry, entries, frames_json, user_frame
from profscope.tools.xla.series import Series
from profscope.xla_logs import Loaded

WARMUP_STEPS = 3  # the forward/backward graph, then the graph with optimizer state: a few steps
PER_STEP_THRESHOLD = 0.5  # PyTorch/XLA's debug tool flags more than 0.5 compilations/transfers per step
SINGLE_REPORT_MIN_STEPS = 10  # without a series, judge rates only after this many steps (as torch_xla does)
LONG_COMPILE_NS = 60e9
GROWTH_MIN_RECORDS = 4
MAX_LISTED = 10  # late compilations described one by one; the rest are counted

TRANSFER_FROM_DEVICE = ("TransferFromDeviceTime", "TransferFromServerTime")
TRANSFER_TO_DEVICE = ("TransferToDeviceTime", "TransferToServerTime")
FORCED_EXECUTION_CAUSE = "most likely user code trying to access tensor value"

FALLBACK_EXPLANATIONS = {
    "aten::_local_scalar_dense": (
        "reads one tensor value on the host: `.item()`, `float(t)`, `int(t)`, `bool(t)`, `if t:` or printing "
        "a tensor. Each read stops tracing, runs the pending graph and copies the value to the CPU."
    ),
    "aten::nonzero": (
        "has an output size that depends on the data, which XLA's static shapes cannot express, so it runs on "
        "the CPU. `torch.nonzero`, `torch.where(cond)` with one argument, boolean-mask indexing `x[mask]` "
        "and `masked_select` all call it."
    ),
}
GENERIC_FALLBACK = (
    "has no XLA lowering in this PyTorch/XLA version, so the tensors go to the CPU, the op runs there and "
    "the result comes back."
)


def fmt_ns(ns: float | None) -> str:
    """A duration with its unit (`not observed` when absent)."""
    if ns is None or not math.isfinite(ns):
        return "not observed"
    for unit, scale in (("h", 3600e9), ("min", 60e9), ("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def fmt_bytes(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "not observed"
    for unit, scale in (("GiB", 1024.0**3), ("MiB", 1024.0**2), ("KiB", 1024.0)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} B"


def _plural(n: float, word: str) -> str:
    n_text = f"{n:g}" if isinstance(n, float) else str(n)
    return f"{n_text} {word}" if n == 1 else f"{n_text} {word}s"


def _first_metric(report: Report | None, names: Sequence[str]) -> str | None:
    if report is None:
        return None
    return next((n for n in names if n in report.metrics), None)


def _location(frame: Frame | None, count: int, role: str) -> dict[str, Any] | None:
    out = graph_diff.frame_json(frame)
    return None if out is None else {**out, "count": count, "role": role}


def _locations(frames: Tally[Frame], role: str) -> list[dict[str, Any]]:
    return [loc for f, n in frames.most_common() if (loc := _location(f, n, role)) is not None]


def _steps_text(counts: dict[int, float]) -> str:
    return ", ".join(f"{step} ({n:g})" for step, n in sorted(counts.items()) if n)


class _Evidence:
    """The loaded files plus the derived views every rule needs."""

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
        out = []
        for kind in kinds:
            out.extend(file.label for file, _ in getattr(self.loaded, kind))
        return out


def find(loaded: Loaded, snapshot: Report | None, series: Series | None) -> list[dict[str, Any]]:
    """All findings that apply, most severe first."""
    ev = _Evidence(loaded, snapshot, series)
    dynamic = _dynamic_shape_families(ev)
    found = [
        _recompilation(ev, dynamic),
        _cpu_fallback(ev),
        _device_to_host(ev),
        _long_compiles(ev),
        _dynamic_shapes(ev, dynamic),
        _growing_graphs(ev),
        _unexpected_executions(ev),
        _compile_share(ev),
    ]
    order = {"high": 0, "medium": 1, "info": 2}
    results = sorted((f for f in found if f is not None), key=lambda f: order[f["severity"]])
    full_paths = _full_paths(ev)
    for finding in results:
        finding["locations"] = [_resolve(loc, full_paths) for loc in finding["locations"]]
    return results


def _full_paths(ev: _Evidence) -> dict[str, str]:
    """File name → full path, for names that appear with exactly one directory in the logs' frames.

    IR node locations (`XLA_IR_DEBUG`) carry only the file name; the trigger frames carry full paths.
    """
    seen: dict[str, set[str]] = {}
    frames = [f for a in ev.analyses for f in a.frames] + [f for e in ev.entries for f in e.record.frames]
    for frame in frames:
        if frame.file and "/" in frame.file:
            seen.setdefault(frame.file.rsplit("/", 1)[1], set()).add(frame.file)
    return {name: next(iter(paths)) for name, paths in seen.items() if len(paths) == 1}


def _resolve(location: dict[str, Any], full_paths: dict[str, str]) -> dict[str, Any]:
    file = location.get("file")
    if not file or "/" in file or file not in full_paths:
        return location
    full = full_paths[file]
    label = f"{location['function']} ({full}:{location['line']})"
    return {**location, "file": full, "label": label, "file_as_logged": file}


# -- recompilation ------------------------------------------------------------------------------
def _compiles_per_step(ev: _Evidence) -> tuple[dict[int, float], str] | None:
    per_step = ev.per_step(("CompileTime",))
    if per_step is not None:
        return per_step[0], f"CompileTime samples per step in {ev.series.source if ev.series else ''}"
    compiled = [a for a in ev.analyses if a.kind == "compilation" and a.step is not None]
    if compiled:
        last = max(a.step for a in ev.analyses if a.step is not None)
        counts: dict[int, float] = {s: 0.0 for s in range(last + 1)}
        for a in compiled:
            counts[a.step] = counts.get(a.step, 0.0) + 1  # type: ignore[index]
        return counts, "Compilation Analysis blocks of the PT_XLA_DEBUG log (steps counted from syncs)"
    return None


def _recompilation(ev: _Evidence, dynamic: list[dict[str, Any]]) -> dict[str, Any] | None:
    evidence: list[dict[str, str]] = []
    per_step = _compiles_per_step(ev)
    late_steps: dict[int, float] = {}
    severity = None
    summary = ""
    if per_step is not None:
        counts, source = per_step
        steps = sorted(counts)
        after = steps[WARMUP_STEPS:]
        if after:
            late_steps = {s: counts[s] for s in after if counts[s] > 0}
            total = sum(late_steps.values())
            rate = total / len(after)
            if total:
                severity = "high" if rate > PER_STEP_THRESHOLD else "medium"
                summary = (
                    f"{_plural(int(total), 'compilation')} in the {len(after)} steps after warm-up "
                    f"({rate:.2f} per step; PyTorch/XLA flags more than {PER_STEP_THRESHOLD}). Each one stalls "
                    "training while XLA compiles."
                )
                evidence.append(
                    {"label": "Steps with compilations after warm-up", "value": _steps_text(late_steps)}
                )
                evidence.append(
                    {
                        "label": "Warm-up",
                        "value": f"steps {steps[0]}–{steps[WARMUP_STEPS - 1]}: "
                        f"{_plural(int(sum(counts[s] for s in steps[:WARMUP_STEPS])), 'compilation')}",
                    }
                )
                evidence.append({"label": "Counted from", "value": source})
                if ev.series is not None and "CompileTime" in ev.series.metric_names():
                    times = dict(zip(ev.series.steps, ev.series.delta_accumulator("CompileTime")))
                    evidence.append(
                        {
                            "label": "Compile time after warm-up",
                            "value": fmt_ns(sum(times[s] for s in late_steps)),
                        }
                    )
    elif ev.snapshot is not None and "CompileTime" in ev.snapshot.metrics:
        compiles = ev.snapshot.metrics["CompileTime"].total_samples or 0
        steps_run = ev.steps_run()
        if steps_run and steps_run > SINGLE_REPORT_MIN_STEPS and compiles / steps_run > PER_STEP_THRESHOLD:
            severity = "high"
            summary = (
                f"{_plural(compiles, 'compilation')} in {_plural(steps_run, 'step')} ({compiles / steps_run:.2f} per "
                f"step). Only one report was found, so warm-up compilations are included; capture XLA_METRICS_FILE "
                "for a per-step count."
            )
    for message in ev.messages_of("too_frequent", "CompileTime"):
        evidence.append({"label": "pt-xla-profiler", "value": message.text})
        if severity is None:
            severity = "high"
            summary = f"PyTorch/XLA's debug tool reports: {message.text}"
    if severity is None:
        return None
    locations: Tally[Frame] = Tally()
    diffs: list[dict[str, Any]] = []
    late_compiles = [
        a for a in ev.analyses if a.kind == "compilation" and a.step is not None and a.step in late_steps
    ]
    by_key = {e.record.key: e for e in reversed(ev.entries)}
    listed = 0
    explained: set[str] = set()
    for analysis in late_compiles:
        frame = user_frame(analysis.frames)
        if frame is not None:
            locations[frame] += 1
        if listed >= MAX_LISTED:
            continue
        listed += 1
        text = (
            f"graph {(analysis.graph_hash or '?')[:12]} ({analysis.num_inputs} inputs, {analysis.num_outputs} outputs) "
            f"compiled because: {analysis.cause}"
        )
        entry = by_key.get(analysis.graph_hash or "")
        if entry is not None and entry.record.key not in explained:
            explained.add(entry.record.key)
            change = _explain_new_graph(ev, entry)
            if change is not None:
                text += f"; {change['summary']}"
                diffs.append(change)
        evidence.append({"label": f"Step {analysis.step}", "value": text})
    if len(late_compiles) > listed:
        distinct = len({a.graph_hash for a in late_compiles})
        evidence.append(
            {
                "label": "Not listed",
                "value": f"{len(late_compiles) - listed} more compilations after warm-up ({distinct} distinct graphs "
                "in all); the Graphs tab lists every graph",
            }
        )
    origin_locations = _origin_locations(diffs)
    fix = (
        "Keep every step's graph identical: same tensor shapes, same Python control flow on tensors. "
        "Compare the graph compiled after warm-up with the one it replaced (diff links below) to see what changed."
    )
    if origin_locations:
        fix = (
            "The graphs compiled after warm-up differ only in tensor sizes, and the new sizes enter at the code "
            "location(s) below. Give those tensors a fixed size: pad or bucket variable batches and sequence "
            "lengths, use `drop_last=True` in the DataLoader for a smaller last batch. " + fix
        )
    elif dynamic:
        fix = "Some graphs differ only in tensor sizes (see the dynamic-shapes finding). " + fix
    return {
        "id": "recompilation",
        "severity": severity,
        "title": "Recompiling after warm-up",
        "summary": summary,
        "evidence": evidence,
        "locations": [*origin_locations, *_locations(locations, "triggered the compilation")],
        "steps": sorted(late_steps),
        "diffs": diffs,
        "fix": fix,
        "sources": ev.sources("metrics", "debug", "graphs"),
    }


def _explain_new_graph(ev: _Evidence, entry: Entry) -> dict[str, Any] | None:
    """Compare a newly compiled graph with the closest earlier graph from the same user frame."""
    frame = ev.user_frames[entry.index]
    candidates = [
        e
        for e in ev.entries[: entry.index]
        if e.record.key != entry.record.key and ev.user_frames[e.index] == frame
    ]
    if not candidates:
        return None
    key = ev.structure(entry)
    same = [e for e in candidates if key is not None and ev.structure(e) == key]
    previous = (same or candidates)[-1]
    result = graph_diff.compare(previous.nodes(), entry.nodes())
    if not result.get("aligned"):
        return None
    if result["same_structure"]:
        where = "; ".join(_distinct_origins(result["origins"])[:3])
        summary = (
            f"same graph as {previous.record.key[:12]} (step {previous.record.step}) but "
            f"{_plural(len(result['shape_changes']), 'node')} changed shape; the new size enters at: {where}"
        )
    else:
        summary = (
            f"differs from {previous.record.key[:12]} (step {previous.record.step}): "
            f"{len(result['added'])} nodes added, {len(result['removed'])} removed, "
            f"{len(result['shape_changes'])} changed shape"
        )
    return {
        "a": previous.index,
        "b": entry.index,
        "summary": summary,
        "same_structure": result["same_structure"],
        "origins": result["origins"][:10],
    }


def _distinct_origins(origins: list[dict[str, Any]]) -> list[str]:
    """`op old → new at location`, each once (a size often enters through several identical nodes)."""
    out: list[str] = []
    for o in origins:
        where = o["location"]["label"] if o["location"] else "unknown location"
        text = f"{o['op']} {o['shape_a']} → {o['shape_b']} at {where}"
        if text not in out:
            out.append(text)
    return out


def _origin_locations(diffs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Source lines where a size entered, counted once per graph comparison that shows it."""
    counts: Tally[str] = Tally()
    first: dict[str, dict[str, Any]] = {}
    for d in diffs:
        labels = set()
        for origin in d.get("origins", []):
            loc = origin.get("location")
            if loc is not None:
                labels.add(loc["label"])
                first.setdefault(loc["label"], loc)
        counts.update(labels)
    return [
        {**first[label], "count": n, "role": "a tensor size changed here (count: graph comparisons)"}
        for label, n in counts.most_common()
    ]


# -- CPU fallbacks --------------------------------------------------------------------------------
def _cpu_fallback(ev: _Evidence) -> dict[str, Any] | None:
    counters = {}
    if ev.snapshot is not None:
        counters = {n: c.value or 0 for n, c in ev.snapshot.counters.items() if n.startswith("aten::")}
    not_lowered = ev.messages_of("not_lowered")
    if not counters and not not_lowered:
        return None
    evidence = []
    for name, value in sorted(counters.items(), key=lambda kv: -kv[1]):
        explanation = FALLBACK_EXPLANATIONS.get(name, GENERIC_FALLBACK)
        evidence.append(
            {"label": f"{name} ran {_plural(value, 'time')} on the CPU", "value": f"`{name}` {explanation}"}
        )
        if ev.series is not None and ev.series.x_label == "step" and name in ev.series.counter_names():
            per_step = dict(zip(ev.series.steps, ev.series.delta_counter(name)))
            evidence.append({"label": f"{name} per step", "value": _steps_text(per_step) or "none"})
    if not_lowered:
        evidence.append({"label": "pt-xla-profiler", "value": not_lowered[-1].text})
    ops = set(counters) | {op for m in not_lowered for op in m.ops}
    real_fallbacks = sorted(op for op in ops if op != "aten::_local_scalar_dense")
    forced = ev.forced_executions()
    if forced:
        evidence.append(
            {
                "label": "Early executions to read a value on the host",
                "value": ", ".join(f"{f.label()} ({n}×)" for f, n in forced.most_common()),
            }
        )
    fixes = []
    if "aten::nonzero" in ops:
        fixes.append(
            "Replace data-dependent shapes with fixed-size masks: `torch.where(mask, x, 0)`, `x * mask`, "
            "`masked_fill`, or count with `mask.sum()` kept on the device instead of `nonzero` / `x[mask]`."
        )
    if "aten::_local_scalar_dense" in ops:
        fixes.append(
            "Keep values as tensors inside the step; read them (`.item()`, printing) every N steps after "
            "`torch_xla.sync()`, or in `xm.add_step_closure` so the read does not cut the step's graph."
        )
    others = [op for op in real_fallbacks if op not in FALLBACK_EXPLANATIONS]
    if others:
        fixes.append(
            f"{', '.join(others)}: use an equivalent op that XLA lowers, move it out of the training step, or "
            "ask for a lowering on the PyTorch/XLA issue tracker."
        )
    total = sum(counters.values())
    summary = (
        f"{_plural(total, 'call')} of {_plural(len(counters) or len(ops), 'op')} left the XLA graph for the CPU"
        f" ({', '.join(sorted(ops))})."
    )
    return {
        "id": "cpu_fallback",
        "severity": "high" if real_fallbacks else "medium",
        "title": "Ops falling back to the CPU",
        "summary": summary,
        "evidence": evidence,
        "locations": _locations(forced, "read a tensor value on the host"),
        "steps": [],
        "diffs": [],
        "fix": " ".join(fixes),
        "sources": ev.sources("metrics", "debug"),
    }


# -- device → host transfers -----------------------------------------------------------------------
def _device_to_host(ev: _Evidence) -> dict[str, Any] | None:
    name = _first_metric(ev.snapshot, TRANSFER_FROM_DEVICE)
    messages = [m for n in TRANSFER_FROM_DEVICE for m in ev.messages_of("too_frequent", n)]
    if name is None and not messages:
        return None
    evidence = []
    severity = None
    summary = ""
    steps_run = ev.steps_run()
    per_step = ev.per_step(TRANSFER_FROM_DEVICE)
    if name is not None and ev.snapshot is not None:
        metric = ev.snapshot.metrics[name]
        transfers = metric.total_samples or 0
        inbound = ev.snapshot.metrics.get("InboundData")
        evidence.append(
            {
                "label": name,
                "value": f"{_plural(transfers, 'transfer')}, {fmt_ns(metric.accumulator.value if metric.accumulator else None)} in total",
            }
        )
        if inbound is not None and inbound.accumulator is not None:
            evidence.append({"label": "InboundData", "value": fmt_bytes(inbound.accumulator.value)})
        if steps_run:
            rate = transfers / steps_run
            evidence.append({"label": "Per step", "value": f"{rate:.2f} over {_plural(steps_run, 'step')}"})
            if rate > PER_STEP_THRESHOLD:
                severity = "high"
                summary = (
                    f"{_plural(transfers, 'device→host transfer')} in {_plural(steps_run, 'step')} ({rate:.2f} per step; "
                    f"PyTorch/XLA flags more than {PER_STEP_THRESHOLD}). Each one waits for the device and stops "
                    "the host from tracing ahead."
                )
    if per_step is not None:
        counts, metric_name = per_step
        evidence.append({"label": f"{metric_name} per step", "value": _steps_text(counts) or "none"})
    for message in messages:
        evidence.append({"label": "pt-xla-profiler", "value": message.text})
        if severity is None:
            severity = "high"
            summary = f"PyTorch/XLA's debug tool reports: {message.text}"
    if severity is None:
        return None
    forced = ev.forced_executions()
    return {
        "id": "device_to_host",
        "severity": severity,
        "title": "Frequent device→host transfers",
        "summary": summary,
        "evidence": evidence,
        "locations": _locations(forced, "read a tensor value on the host"),
        "steps": sorted(s for s, n in (per_step[0] if per_step else {}).items() if n),
        "diffs": [],
        "fix": (
            "Values read on the host (`.item()`, `float(loss)`, `print(tensor)`, `tensor.cpu()`, Python `if` on a "
            "tensor) each force an execution and a copy. Accumulate metrics on the device and read them every N "
            "steps after `torch_xla.sync()`, or use `xm.add_step_closure`."
        ),
        "sources": ev.sources("metrics", "debug"),
    }


# -- compile time ------------------------------------------------------------------------------------
def _compile_values(ev: _Evidence) -> list[float]:
    if ev.snapshot is None or "CompileTime" not in ev.snapshot.metrics:
        return []
    metric = ev.snapshot.metrics["CompileTime"]
    return [v.value for _, v in metric.percentiles if math.isfinite(v.value)]


def _long_compiles(ev: _Evidence) -> dict[str, Any] | None:
    values = _compile_values(ev)
    longest = max(values) if values else None
    slow_messages = ev.messages_of("too_slow", "CompileTime")
    message_longest = max((m.duration_ns or 0.0 for m in slow_messages), default=None)
    candidates = [v for v in (longest, message_longest) if v is not None]
    worst = max(candidates) if candidates else None
    if worst is None or worst <= LONG_COMPILE_NS:
        return None
    metric = (
        ev.snapshot.metrics["CompileTime"] if ev.snapshot and "CompileTime" in ev.snapshot.metrics else None
    )
    evidence = [{"label": "Longest compilation", "value": fmt_ns(worst)}]
    if metric is not None and metric.accumulator is not None:
        evidence.append(
            {
                "label": "All compilations",
                "value": f"{_plural(metric.total_samples or 0, 'compilation')}, {fmt_ns(metric.accumulator.value)} in total",
            }
        )
        median = next((v.value for p, v in metric.percentiles if p == 50.0), None)
        if median is not None:
            evidence.append({"label": "Median (recent samples)", "value": fmt_ns(median)})
    for message in slow_messages:
        evidence.append({"label": "pt-xla-profiler", "value": message.text})
    return {
        "id": "long_compile",
        "severity": "medium",
        "title": "Very long compilations",
        "summary": (
            f"A compilation took {fmt_ns(worst)} (threshold {fmt_ns(LONG_COMPILE_NS)}). Percentiles cover the "
            "runtime's recent samples only (1024 by default)."
        ),
        "evidence": evidence,
        "locations": [],
        "steps": [],
        "diffs": [],
        "fix": (
            "Large graphs compile slowly: sync more often to cut the step into smaller graphs, avoid Python loops "
            "that unroll into the graph, and set XLA_PERSISTENT_CACHE_PATH (or `xr.initialize_cache`) so later runs "
            "reuse compiled programs."
        ),
        "sources": ev.sources("metrics", "debug"),
    }


def _compile_share(ev: _Evidence) -> dict[str, Any] | None:
    if ev.snapshot is None:
        return None
    compile_metric = ev.snapshot.metrics.get("CompileTime")
    execute_metric = ev.snapshot.metrics.get("ExecuteTime")
    if compile_metric is None or execute_metric is None:
        return None
    if compile_metric.accumulator is None or execute_metric.accumulator is None:
        return None
    compile_ns, execute_ns = compile_metric.accumulator.value, execute_metric.accumulator.value
    if not compile_ns > execute_ns:
        return None
    return {
        "id": "compile_share",
        "severity": "info",
        "title": "More time compiling than executing",
        "summary": (
            f"Compilation took {fmt_ns(compile_ns)} ({_plural(compile_metric.total_samples or 0, 'compilation')}), "
            f"execution {fmt_ns(execute_ns)} ({_plural(execute_metric.total_samples or 0, 'execution')}). Normal for a "
            "short run; in a long run it means graphs keep changing."
        ),
        "evidence": [
            {"label": "CompileTime", "value": fmt_ns(compile_ns)},
            {"label": "ExecuteTime", "value": fmt_ns(execute_ns)},
        ],
        "locations": [],
        "steps": [],
        "diffs": [],
        "fix": "If the run is long, look at the recompilation and dynamic-shape findings; otherwise nothing to do.",
        "sources": ev.sources("metrics"),
    }


# -- dynamic shapes ----------------------------------------------------------------------------------
def _dynamic_shape_families(ev: _Evidence) -> list[dict[str, Any]]:
    """Families of distinct graphs with identical structure (ops and wiring) but different shapes."""
    first_of_key: dict[str, Entry] = {}
    for entry in ev.entries:
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
            if not result.get("aligned") or not result["shape_changes"]:
                continue
            diffs.append(
                {
                    "a": previous.index,
                    "b": current.index,
                    "summary": (
                        f"{previous.record.key[:12]} (step {previous.record.step}) → {current.record.key[:12]} "
                        f"(step {current.record.step}): {_plural(len(result['shape_changes']), 'node')} changed shape"
                    ),
                    "same_structure": True,
                    "origins": result["origins"][:10],
                }
            )
        if diffs:
            out.append({"members": members, "diffs": diffs})
    return out


def _dynamic_shapes(ev: _Evidence, families: list[dict[str, Any]]) -> dict[str, Any] | None:
    changes = [
        e for e in ev.entries if e.record.change is not None and e.record.change.kind == "different_shape"
    ]
    if not families and not changes:
        return None
    evidence = []
    diffs: list[dict[str, Any]] = []
    trigger_frames: Tally[Frame] = Tally()
    for family in families:
        members: list[Entry] = family["members"]
        frame = user_frame(members[0].record.frames)
        if frame is not None:
            trigger_frames[frame] += len(members)
        # Members share their structure, so a node keeps its name (%N) across them: follow each
        # origin node's size from member to member.
        origin_shapes: dict[str, list[str]] = {}
        for d in family["diffs"]:
            for o in d["origins"]:
                where = o["location"]["label"] if o["location"] else "unknown location"
                shapes = origin_shapes.setdefault(f"{o['op']} {o['a']['name']} at {where}", [o["shape_a"]])
                if shapes[-1] != o["shape_b"]:
                    shapes.append(o["shape_b"])
        evidence.append(
            {
                "label": f"Graph from {frame.label() if frame else 'unknown frame'}",
                "value": f"{len(members)} size variants ("
                + ", ".join(f"{m.record.key[:12]} at step {m.record.step}" for m in members)
                + "); sizes: "
                + "; ".join(
                    f"{where}: {' → '.join(shapes)}" for where, shapes in list(origin_shapes.items())[:4]
                ),
            }
        )
        diffs.extend(family["diffs"])
    change_frames: Tally[Frame] = Tally()
    for entry in changes:
        change = entry.record.change
        assert change is not None
        evidence.append(
            {
                "label": f"Graph change logged at record {entry.index}",
                "value": f"{change.node or '?'}: {change.previous_shape} → {change.current_shape}",
            }
        )
        if change.current_trace:
            change_frames[user_frame(change.current_trace) or change.current_trace[0]] += 1
    locations = [*_origin_locations(diffs), *_locations(change_frames, "built the node whose shape changed")]
    locations.extend(_locations(trigger_frames, "triggered the graph"))
    return {
        "id": "dynamic_shapes",
        "severity": "high",
        "title": "Dynamic shapes: the same graph with different tensor sizes",
        "summary": (
            f"{_plural(len(families) + len(changes), 'graph')} ran with changing tensor sizes; XLA compiles a new "
            "program for every distinct size. The nodes where a size first differs are listed with their source lines."
        ),
        "evidence": evidence,
        "locations": locations,
        "steps": sorted({m.record.step for f in families for m in f["members"] if m.record.step is not None}),
        "diffs": diffs,
        "fix": (
            "Make those sizes constant: pad inputs to a fixed length or to a few bucket sizes, use `drop_last=True` "
            "for the last partial batch, and avoid ops whose output size depends on data (`nonzero`, `x[mask]`, "
            "`unique`)."
        ),
        "sources": ev.sources("graphs"),
    }


# -- growing graphs ------------------------------------------------------------------------------------
def _growing_graphs(ev: _Evidence) -> dict[str, Any] | None:
    by_frame: dict[Frame | None, list[Entry]] = {}
    for entry in ev.entries:
        by_frame.setdefault(user_frame(entry.record.frames), []).append(entry)
    evidence = []
    locations: Tally[Frame] = Tally()
    steps: set[int] = set()
    for frame, group in by_frame.items():
        run = _longest_growth(group)
        if len(run) >= GROWTH_MIN_RECORDS:
            evidence.append(
                {
                    "label": f"Graphs from {frame.label() if frame else 'unknown frame'}",
                    "value": " → ".join(f"{e.record.num_nodes}" for e in run)
                    + f" nodes (records {run[0].index}–{run[-1].index})",
                }
            )
            if frame is not None:
                locations[frame] += len(run)
            steps.update(e.record.step for e in run if e.record.step is not None)
    if (
        ev.series is not None
        and ev.series.x_label == "step"
        and "TensorsGraphSize" in ev.series.metric_names()
    ):
        sizes = ev.series.delta_accumulator("TensorsGraphSize")
        counts = ev.series.delta_samples("TensorsGraphSize")
        means = [(s, a / c) for s, a, c in zip(ev.series.steps, sizes, counts) if c]
        best: list[tuple[int, float]] = []
        current: list[tuple[int, float]] = []
        for item in means[WARMUP_STEPS:]:
            current = current + [item] if current and item[1] > current[-1][1] else [item]
            if len(current) > len(best):
                best = current
        if len(best) >= GROWTH_MIN_RECORDS:
            evidence.append(
                {
                    "label": "Mean TensorsGraphSize per step",
                    "value": ", ".join(f"step {s}: {m:.0f} nodes" for s, m in best),
                }
            )
            steps.update(s for s, _ in best)
    if not evidence:
        return None
    return {
        "id": "growing_graph",
        "severity": "high",
        "title": "Graphs grow step after step",
        "summary": (
            "The same code builds a larger graph every step, so every step compiles a new program. A Python loop "
            "whose trip count grows is being unrolled into the graph, or a tensor keeps accumulating history."
        ),
        "evidence": evidence,
        "locations": _locations(locations, "triggered the growing graph"),
        "steps": sorted(steps),
        "diffs": [],
        "fix": (
            "Sync inside the loop (`torch_xla.sync()`), `.detach()` tensors that carry state across steps "
            "(running sums of the loss), or express the loop with `torch_xla.experimental.fori_loop` / `scan`."
        ),
        "sources": ev.sources("graphs", "metrics"),
    }


def _longest_growth(group: list[Entry]) -> list[Entry]:
    best: list[Entry] = []
    current: list[Entry] = []
    for entry in group:
        if current and entry.record.num_nodes > current[-1].record.num_nodes:
            current.append(entry)
        elif (
            current
            and entry.record.num_nodes == current[-1].record.num_nodes
            and entry.record.key == current[-1].record.key
        ):
            continue
        else:
            current = [entry]
        if len(current) > len(best):
            best = list(current)
    return best


# -- unexpected executions -----------------------------------------------------------------------------
def _unexpected_executions(ev: _Evidence) -> dict[str, Any] | None:
    found = [a for a in ev.analyses if a.kind == "unexpected_execution"]
    if not found:
        return None
    frames: Tally[Frame] = Tally()
    for a in found:
        frame = user_frame(a.frames)
        if frame is not None:
            frames[frame] += 1
    return {
        "id": "unexpected_execution",
        "severity": "high",
        "title": "Execution inside a compiled region",
        "summary": f"{_plural(len(found), 'execution')} happened where PyTorch/XLA did not allow one (torch_xla.compile).",
        "evidence": [{"label": f"Line {a.line}", "value": a.cause} for a in found[:10]],
        "locations": _locations(frames, "forced the execution"),
        "steps": [],
        "diffs": [],
        "fix": "Remove host reads (`.item()`, printing, `.cpu()`) from the compiled function.",
        "sources": ev.sources("debug"),
        "frames": [frames_json(a.frames) for a in found[:3]],
    }
