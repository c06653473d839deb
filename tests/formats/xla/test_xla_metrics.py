"""Metrics report parser: real PyTorch/XLA reports checked against `metric_data()`, and every older variant."""

from __future__ import annotations

import json
import math
import pathlib

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from profscope.errors import UnreadableProfile
from profscope.formats.xla import metrics as xla_metrics
from tests.support import DATA_DIR

pytestmark = pytest.mark.stack_independent

DATA = DATA_DIR / "xla"
RUN = DATA / "pytorch_xla_cpu_recompile"

_PARTS = (
    ("d", 86400e9, 2, 0),
    ("h", 3600e9, 2, 0),
    ("m", 60e9, 2, 0),
    ("s", 1e9, 2, 0),
    ("ms", 1e6, 3, 0),
    ("us", 1e3, 7, 3),
)


def runtime_time_text(ns: float) -> tuple[str, bool]:
    """What PyTorch/XLA's `MetricFnTime` prints for `ns`: each part rounded by printf, only its floor
    subtracted. Also says whether a part sat within 1 ns of a rounding tie (ambiguous to read back)."""
    text, count, tie = "", 0, False
    for i, (suffix, scale, width, precision) in enumerate(_PARTS):
        ctime = ns / scale
        if ctime >= 1.0 or count > 0 or i == len(_PARTS) - 1:
            text += f"{ctime:0{width}.{precision}f}{suffix}"
            if precision == 0 and abs((ctime - math.floor(ctime)) - 0.5) * scale < 1.0:
                tie = True
            ns -= math.floor(ctime) * scale
            count += 1
    return text, tie


def read_text(text: str, name: str = "report.txt") -> xla_metrics.MetricsFile:
    return xla_metrics.read(name, text=text)


# -- values ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("000.070us", 70.0),
        ("218.036us", 218_036.0),
        ("001ms32.778us", 1_032_778.0),  # 2019 layout: 3-wide microseconds
        ("070ms564.310us", 69_564_310.0),  # printed ms rounded up from 69
        ("069ms102.875us", 69_102_875.0),
        ("05s009ms965.807us", 5_008_965_807.0),
        ("06m09s401ms746.001us", (6 * 60 + 9) * 1e9 + 400_746_001.0),
        ("02h42m54s489ms109.977us", ((1 * 60 + 41) * 60 + 54) * 1e9 + 489_109_977.0),
        ("01d00h00m00s000ms000.500us", 86400e9 + 500.0),
    ],
)
def test_time_values(text: str, ns: float) -> None:
    value = xla_metrics.parse_value(text)
    assert value.unit == xla_metrics.UNIT_TIME
    assert value.value == pytest.approx(ns, abs=1e-6)


def test_time_correction_is_flagged() -> None:
    assert xla_metrics.parse_value("070ms564.310us").corrected
    assert not xla_metrics.parse_value("069ms102.875us").corrected


@given(st.floats(min_value=0.0, max_value=3e14, allow_nan=False))
def test_time_round_trip(ns: float) -> None:
    text, tie = runtime_time_text(ns)
    assume(not tie)
    assert xla_metrics.parse_value(text).value == pytest.approx(ns, abs=0.5 + 1e-9 * ns)


@given(st.lists(st.floats(min_value=0.0, max_value=1e13, allow_nan=False), min_size=2, max_size=12))
def test_percentiles_stay_monotone(values: list[float]) -> None:
    values.sort()
    printed = [runtime_time_text(v) for v in values]
    assume(not any(tie for _, tie in printed))
    parsed = [xla_metrics.parse_value(text).value for text, _ in printed]
    assert all(b >= a - 1.0 for a, b in zip(parsed, parsed[1:]))


def test_naive_reading_would_not_be_monotone() -> None:
    texts = [runtime_time_text(ms * 1e6)[0] for ms in (68.224061, 68.564310, 68.785400, 69.102875)]
    assert texts == ["068ms224.061us", "069ms564.310us", "069ms785.400us", "069ms102.875us"]
    parsed = [xla_metrics.parse_value(t).value for t in texts]
    assert parsed == sorted(parsed)


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("1.54MB", 1.54 * 1024**2, "B"),
        ("4.00B", 4.0, "B"),
        ("9.57KB", 9.57 * 1024, "B"),
        ("1794.00", 1794.0, ""),
        ("7.09983", 7.09983, ""),
        ("1.2e+06", 1.2e6, ""),
        ("3.07125e-05", 3.07125e-05, ""),
    ],
)
def test_bytes_and_numbers(text: str, value: float, unit: str) -> None:
    parsed = xla_metrics.parse_value(text)
    assert parsed.unit == unit
    assert parsed.value == pytest.approx(value)


def test_nan_bytes_and_empty_zero() -> None:
    nan = xla_metrics.parse_value("nanB")
    assert nan.unit == "B" and math.isnan(nan.value)
    empty = xla_metrics.parse_value("")
    assert empty.value == 0.0 and empty.unit is None


def test_garbage_value_raises() -> None:
    with pytest.raises(ValueError):
        xla_metrics.parse_value("12 apples")
    with pytest.raises(ValueError):
        xla_metrics.parse_value("01ms02s")  # parts out of order


# -- real reports ----------------------------------------------------------------------------------
def test_real_report_every_block() -> None:
    parsed = xla_metrics.read(str(RUN / "xla_metrics_report.txt"))
    assert parsed.skipped == {} and parsed.warnings == []
    [report] = parsed.reports
    assert report.step is None
    assert len(report.metrics) == 14
    assert len(report.counters) == 45
    compile_time = report.metrics["CompileTime"]
    assert compile_time.total_samples == 9
    assert compile_time.accumulator is not None and compile_time.accumulator.value == pytest.approx(
        5_008_965_807.0
    )
    assert compile_time.unit == "ns"
    assert [p for p, _ in compile_time.percentiles] == [1, 5, 10, 20, 50, 80, 90, 95, 99]
    assert compile_time.percentiles[4][1].value == pytest.approx(643_089_656.0)  # "643ms089.656us"
    assert compile_time.percentiles[0][1].value == pytest.approx(148_817_608.0)  # "149ms817.608us"
    outbound = report.metrics["OutboundData"]
    assert outbound.unit == "B" and outbound.percentiles[-1][1].value == 8 * 1024
    assert report.metrics["TensorsGraphSize"].unit == ""
    assert report.metrics["TransferFromDeviceTime"].rate is not None
    assert report.metrics["TransferFromDeviceTime"].rate.value == pytest.approx(2.74798)
    assert report.counters["aten::nonzero"].value == 3
    assert report.counters["xla::_propagate_xla_data"].value == 220
    # `Metric:` blocks after `Counter:` blocks stay in the same report
    assert report.metrics["CompileTime"].line > report.counters["xla::zero_"].line


def test_real_per_step_file_is_a_series() -> None:
    parsed = xla_metrics.read(str(RUN / "xla_metrics_per_step.txt"))
    assert [r.step for r in parsed.reports] == list(range(10))
    assert [r.metrics["CompileTime"].total_samples for r in parsed.reports] == [1, 2, 4, 4, 4, 4, 4, 5, 8, 9]
    assert parsed.reports[0].counters["MarkStep"].value == 1
    assert "InputOutputAliasCount" in parsed.reports[0].metrics
    assert parsed.reports[0].metrics["InputOutputAliasCount"].value_rate is None


@pytest.mark.parametrize("stem", ["crosscheck_default", "crosscheck_custom_percentiles"])
def test_values_equal_metric_data(stem: str) -> None:
    """Every value equals what `torch_xla.debug.metrics.metric_data()` gave at the same moment,
    within the precision the report prints (captured by tests/data/xla/capture_crosscheck.py)."""
    expected = json.loads((DATA / f"{stem}.json").read_text())
    [report] = xla_metrics.read(str(DATA / f"{stem}.txt")).reports
    assert set(report.metrics) == set(expected["metrics"])
    assert {n: c.value for n, c in report.counters.items()} == expected["counters"]
    corrected = 0
    for name, want in expected["metrics"].items():
        metric = report.metrics[name]
        assert metric.total_samples == want["total_samples"], name
        values = [(metric.accumulator, want["accumulator"])]
        values += [(v, w) for (_, v), (_, w) in zip(metric.percentiles, want["percentiles"])]
        assert [p for p, _ in metric.percentiles] == pytest.approx([p for p, _ in want["percentiles"]])
        for got, exact in values:
            assert got is not None
            assert abs(got.value - exact) <= got.resolution / 2 + 1e-6, (name, got.text, exact)
            corrected += got.corrected
        if "value_rate" in want:
            # metric_data() gives sample times as float seconds (~0.2 µs apart at today's epoch), so
            # rates recomputed from them are good to about 1e-7 relative.
            assert metric.value_rate is not None and metric.rate is not None
            assert metric.value_rate.value == pytest.approx(
                want["value_rate"], rel=1e-7, abs=metric.value_rate.resolution
            )
            assert metric.rate.value == pytest.approx(want["rate"], rel=5e-6)
    assert corrected > 0  # the capture has rounded-up parts; reading them naively would be off by one unit


def test_custom_percentile_labels() -> None:
    [report] = xla_metrics.read(str(DATA / "crosscheck_custom_percentiles.txt")).reports
    assert [p for p, _ in report.metrics["CompileTime"].percentiles] == [0.1, 25, 33.3, 50, 75, 99.9]


# -- older and messier variants (hand-written in the runtime's formats, invented numbers) -----------
LEGACY_2019 = """\
2019-07-18 17:15:45,048: ** ** * Saving fine-tuned model ** ** *
Metric: CompileTime
  TotalSamples: 12
  Counter: 03s402ms118.207us
  ValueRate: 211ms503.119us / second
  Rate: 0.74312 / second
  Percentiles: 1%=051ms012.400us; 5%=051ms012.400us; 10%=060ms93.117us; 50%=204ms620.871us; 99%=01s2ms5.118us
Metric: InboundData
  TotalSamples: 40
  Counter: 160.00B
  ValueRate: 9.97B / second
  Rate: 2.49 / second
  Percentiles: 1%=4.00B; 50%=4.00B; 99%=4.00B
Counter: CachedSyncTensors
  Value: 395
Counter: aten::nonzero
  Value: 33
"""


def test_2019_counter_accumulator_and_narrow_microseconds() -> None:
    [report] = read_text(LEGACY_2019).reports
    compile_time = report.metrics["CompileTime"]
    assert compile_time.legacy_counter_field
    assert compile_time.accumulator is not None
    assert compile_time.accumulator.value == pytest.approx(3_402_118_207.0)
    assert compile_time.percentiles[2][1].value == pytest.approx(60_093_117.0)
    assert compile_time.percentiles[-1][1].value == pytest.approx(1_002_005_118.0)
    assert report.metrics["InboundData"].accumulator.value == 160.0  # type: ignore[union-attr]
    assert report.counters["CachedSyncTensors"].value == 395
    assert report.counters["aten::nonzero"].value == 33


XRT = """\
Counter: XrtSessionCount
  Value: 11
Counter: aten::_local_scalar_dense
  Value: 2412
Metric: XrtAllocateFromTensor
  TotalSamples: 5442
  Accumulator: 24s310ms901.010us
  Mean: 004ms467.200us
  StdDev: 901.330us
  Rate: 6.2e+01 / second
  Percentiles: 25%=004ms110.207us; 50%=004ms306.117us; 80%=005ms954.763us; 99%=006ms403.459us
Metric: XrtExecutorEvict
  TotalSamples: 0
  Accumulator: nanB
  Mean: nanB
  StdDev: nanB
  Percentiles:\x20
"""


def test_xrt_blocks_mean_stddev_nan_and_empty_percentiles() -> None:
    [report] = read_text(XRT).reports
    alloc = report.metrics["XrtAllocateFromTensor"]
    assert alloc.mean is not None and alloc.mean.value == pytest.approx(4_467_200.0)
    assert alloc.stddev is not None and alloc.stddev.value == pytest.approx(901_330.0)
    assert alloc.rate is not None and alloc.rate.value == 62.0
    assert [p for p, _ in alloc.percentiles] == [25, 50, 80, 99]
    evict = report.metrics["XrtExecutorEvict"]
    assert evict.total_samples == 0
    assert evict.accumulator is not None and math.isnan(evict.accumulator.value)
    assert evict.percentiles == []
    assert evict.mean is not None and math.isnan(evict.mean.value)
    assert report.counters["XrtSessionCount"].value == 11


def test_empty_value_is_an_old_zero() -> None:
    text = "Metric: DeviceLockWait\n  TotalSamples: 3\n  Accumulator: \n  Percentiles: 1%=; 50%=; 99%=001.250us\n"
    [report] = read_text(text).reports
    metric = report.metrics["DeviceLockWait"]
    assert metric.accumulator is not None and metric.accumulator.value == 0.0
    assert [v.value for _, v in metric.percentiles] == [0.0, 0.0, 1250.0]
    assert metric.unit == "ns"


PREFIXED = """\
[rank0]: 2024-03-02 10:11:12.345 host-a INFO step 10 loss 2.31
[rank0]: Metric: ExecuteTime
[rank0]:   TotalSamples: 20
[rank0]:   Accumulator: 01s200ms000.000us
[rank0]:   Percentiles: 50%=060ms000.000us
I0302 10:11:12.346000 140 host-a] Counter: MarkStep
I0302 10:11:12.346100 140 host-a]   Value: 20
  0%|          | 1/310 [00:03<17:26,  3.39s/it]\rMetric: CompileTime
  TotalSamples: 2
  Accumulator: 10s000ms000.000us
  Percentiles: 50%=05s000ms000.000us
[default0]:Counter: aten::nonzero
[default0]:  Value: 4
"""


def test_launcher_prefixes_and_glued_output() -> None:
    [report] = read_text(PREFIXED).reports
    assert report.metrics["ExecuteTime"].total_samples == 20
    assert report.metrics["ExecuteTime"].accumulator.value == pytest.approx(1.2e9)  # type: ignore[union-attr]
    assert report.counters["MarkStep"].value == 20
    assert report.metrics["CompileTime"].accumulator.value == pytest.approx(1e10)  # type: ignore[union-attr]
    assert report.counters["aten::nonzero"].value == 4


def test_reports_printed_one_after_another() -> None:
    one = "Metric: CompileTime\n  TotalSamples: {n}\n  Accumulator: 001ms000.000us\n  Percentiles: 50%=001ms000.000us\nCounter: MarkStep\n  Value: {n}\n"
    text = "epoch 1\n" + one.format(n=1) + "epoch 2 done\n" + one.format(n=2) + one.format(n=3)
    parsed = read_text(text)
    assert [r.counters["MarkStep"].value for r in parsed.reports] == [1, 2, 3]
    assert all(r.step is None for r in parsed.reports)


def test_short_report_repeats_an_aten_counter_in_the_same_report() -> None:
    text = (
        "Metric: CompileTime\n  TotalSamples: 1\n  Accumulator: 001ms000.000us\n  Percentiles: 50%=001ms000.000us\n"
        "Counter: aten::nonzero\n  Value: 7\nCounter: MarkStep\n  Value: 3\nCounter: aten::nonzero\n  Value: 7\n"
    )
    [report] = read_text(text).reports
    assert report.counters["aten::nonzero"].value == 7


def test_step_headers_start_reports() -> None:
    text = "[MetricsData; step=4]\nCounter: MarkStep\n  Value: 5\n\n[MetricsData; step=5]\nCounter: MarkStep\n  Value: 6\n"
    parsed = read_text(text)
    assert [(r.step, r.counters["MarkStep"].value) for r in parsed.reports] == [(4, 5), (5, 6)]


def test_truncated_and_unreadable_blocks_are_reported() -> None:
    text = (
        "Metric: CompileTime\n  TotalSamples: 2\n  Accumulator: 12 parsecs\n  Percentiles: 50%=001ms000.000us; x=1\n"
        "Counter: MarkStep\n  Value: 2\nMetric: ExecuteTime\n"
    )
    parsed = read_text(text)
    [report] = parsed.reports
    assert report.metrics["CompileTime"].accumulator is None
    assert len(report.metrics["CompileTime"].percentiles) == 1
    assert parsed.skipped == {
        "unreadable accumulator": 1,
        "unreadable percentile": 1,
        "Metric block without TotalSamples": 1,
    }
    assert any("12 parsecs" in w for w in parsed.warnings)


def test_bad_utf8_is_replaced_and_counted(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "m.txt"
    path.write_bytes(b"Counter: MarkStep\n  Value: 3\n\xff\xfe garbage\nCounter: CachedCompile\n  Value: 1\n")
    parsed = xla_metrics.read(str(path))
    assert parsed.reports[0].counters["CachedCompile"].value == 1
    assert parsed.skipped == {"lines with invalid UTF-8 (replaced)": 1}


def test_reads_through_fsspec(memory_fs) -> None:  # type: ignore[no-untyped-def]
    memory_fs.pipe_file("/logs/train.xla_metrics.txt.3", (RUN / "xla_metrics_report.txt").read_bytes())
    parsed = xla_metrics.read("/logs/train.xla_metrics.txt.3", memory_fs)
    assert parsed.ordinal == 3
    assert parsed.reports[0].counters["MarkStep"].value == 10


def test_gzip_is_inferred(tmp_path: pathlib.Path) -> None:
    import gzip

    path = tmp_path / "metrics.txt.gz"
    path.write_bytes(gzip.compress((RUN / "xla_metrics_report.txt").read_bytes()))
    assert xla_metrics.read(str(path)).reports[0].counters["MarkStep"].value == 10


def test_no_report_is_unreadable(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("nothing to see\nValue: 3\n")
    with pytest.raises(UnreadableProfile, match="notes.txt.*no PyTorch/XLA metrics report"):
        xla_metrics.read(str(path))
    with pytest.raises(UnreadableProfile, match="file not found"):
        xla_metrics.read(str(tmp_path / "missing.txt"))
