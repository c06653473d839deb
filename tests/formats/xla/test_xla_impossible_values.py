"""Impossible values in PyTorch/XLA logs are counted as skipped, never loaded silently (issue 41):
negative sample counts and sizes, percentiles out of order, times past float range, NUL bytes,
graphs whose END_GRAPH is missing. The damage is put into the real logs of one run."""

from __future__ import annotations

import pytest

from profscope.formats.xla import debug as xla_debug
from profscope.formats.xla import graphs as xla_graphs
from profscope.formats.xla import metrics as xla_metrics
from profscope.formats.xla import text as xla_text
from tests.support import DATA_DIR

pytestmark = pytest.mark.stack_independent

RUN = DATA_DIR / "xla" / "pytorch_xla_cpu_recompile"
REPORT = (RUN / "xla_metrics_report.txt").read_text()
DEBUG = (RUN / "pt_xla_debug.txt").read_text()
GRAPHS = (RUN / "xla_graphs.txt.0").read_text()


def metric_names(parsed: xla_metrics.MetricsFile) -> set[str]:
    return {name for report in parsed.reports for name in report.metrics}


def test_real_logs_hold_nothing_impossible() -> None:
    assert xla_metrics.read("m.txt", text=REPORT).skipped == {}
    assert xla_debug.read("d.txt", text=DEBUG).skipped == {}
    assert xla_graphs.read("g.txt", text=GRAPHS).skipped == {}


def test_negative_total_samples_drops_the_metric() -> None:
    parsed = xla_metrics.read("m.txt", text=REPORT.replace("TotalSamples: 32", "TotalSamples: -32", 1))
    assert "DeviceLockWait" not in metric_names(parsed)
    assert parsed.skipped == {"Metric blocks with a negative TotalSamples (dropped)": 1}
    assert any("DeviceLockWait" in w for w in parsed.warnings)


def test_negative_counter_value_drops_the_counter() -> None:
    counter = next(line for line in REPORT.splitlines() if line.startswith("Counter:"))
    value_line = REPORT.splitlines()[REPORT.splitlines().index(counter) + 1]
    text = REPORT.replace(f"{counter}\n{value_line}", f"{counter}\n  Value: -7", 1)
    parsed = xla_metrics.read("m.txt", text=text)
    assert counter.split(":", 1)[1].strip() not in {n for r in parsed.reports for n in r.counters}
    assert parsed.skipped == {"CounterValue blocks with a negative value (dropped)": 1}


def test_percentiles_out_of_order_are_dropped() -> None:
    text = REPORT.replace("1%=000.861us; 5%=001.262us", "1%=900.861us; 5%=001.262us", 1)
    parsed = xla_metrics.read("m.txt", text=text)
    assert parsed.reports[0].metrics["DeviceLockWait"].percentiles == []
    assert parsed.skipped == {"Percentiles lines out of order (dropped)": 1}
    assert xla_metrics.percentiles_in_order(
        xla_metrics.read("m.txt", text=REPORT).reports[0].metrics["DeviceLockWait"].percentiles
    )


def test_time_past_float_range_in_a_debug_message_is_counted() -> None:
    text = DEBUG + "pt-xla-profiler: CompileTime too slow: longest instance took 1e400s\n"
    parsed = xla_debug.read("d.txt", text=text)
    assert parsed.messages[-1].kind == "too_slow" and parsed.messages[-1].duration_ns is None
    assert parsed.skipped == {"unreadable time in a 'too slow' message (kept without it)": 1}


def test_negative_graph_inputs_and_impossible_sizes_are_counted() -> None:
    first = DEBUG.replace("Number of Graph Inputs: 12", "Number of Graph Inputs: -12", 1)
    first = first.replace("Graph input size: 0.000009 GB", "Graph input size: -1e400 GB", 1)
    parsed = xla_debug.read("d.txt", text=first)
    assert parsed.analyses[0].num_inputs is None
    assert parsed.analyses[0].post is not None and parsed.analyses[0].post.input_bytes is None
    assert parsed.skipped == {"unreadable Number of Graph Inputs": 1, "unreadable post-compilation size": 1}


@pytest.mark.parametrize("where", ["inside", "after"])
def test_nul_bytes_are_removed_and_counted(tmp_path, where: str) -> None:
    nuls = "\0" * (8 << 20)
    text = (
        REPORT.replace("Metric: LazyTracing", nuls + "Metric: LazyTracing")
        if where == "inside"
        else REPORT + nuls
    )
    path = tmp_path / "xla_metrics_report.txt"
    path.write_text(text)
    for parsed in (xla_metrics.read(str(path)), xla_metrics.read("m.txt", text=text)):
        assert metric_names(parsed) == metric_names(xla_metrics.read("m.txt", text=REPORT))
        assert parsed.skipped == {xla_text.NUL_BYTES: 1}


def test_unclosed_graphs_are_each_a_record() -> None:
    record = GRAPHS[: GRAPHS.index("## END_GRAPH")]
    parsed = xla_graphs.read("g.txt", text=record * 2000)
    assert len(parsed.records) == 2000
    assert parsed.skipped == {"graph without END_GRAPH (kept, truncated)": 2000}
    whole = xla_graphs.read("g.txt", text=GRAPHS)
    assert parsed.records[0].num_nodes == whole.records[0].num_nodes
