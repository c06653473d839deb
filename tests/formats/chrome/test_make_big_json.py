"""`benchmarks/make_big_json.py`: the V100/H100 trace repeated along time, each copy shifted by a
whole number of µs past the previous one, ns digits intact, flows kept per copy."""

from __future__ import annotations

import collections
import importlib.util
from pathlib import Path

import pytest

from tests.formats.chrome.test_chrome_json import BERT, DATA, flow_rows, read, source
from tests.support import REPO

pytestmark = pytest.mark.stack_independent


def test_make_big_json_repeats_a_trace_along_time(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_big_json", REPO / "benchmarks" / "make_big_json.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "big.json"
    size, n, copies = module.make(str(out), str(DATA / BERT), min_bytes=1, min_events=5000)
    doc = source(BERT)
    by_phase = collections.Counter(e["ph"] for e in doc["traceEvents"])
    per_copy = len(doc["traceEvents"]) - by_phase["M"]
    assert copies == 2 and n == 2 * per_copy + by_phase["M"] and size == out.stat().st_size
    big = read(out)
    one = read(DATA / BERT)
    assert big.num_events == 2 * one.num_events
    assert len(flow_rows(big, "launch")) == 2 * len(flow_rows(one, "launch"))
    # The second copy is the first shifted by a whole number of µs past its end, ns digits intact.
    first, second = (
        sorted(big.ev_start_ps.tolist())[: one.num_events],
        sorted(big.ev_start_ps.tolist())[one.num_events :],
    )
    shift = second[0] - first[0]
    assert shift % 1_000_000 == 0 and shift > one.time_span_ps()[1]
    assert [s + shift for s in first] == second
