"""`benchmarks/make_real_kineto.py`: a real Kineto capture repeated in time, every copy whole."""

from __future__ import annotations

import collections
import gzip
import importlib.util
import json
from pathlib import Path
from typing import Any

import fsspec
import pytest

from profscope.formats.chrome import reader as chrome_json
from tests.support import DATA_DIR, REPO

DATA = DATA_DIR / "kineto"
# The H100 capture has Python stacks and `ProfilerStep#N`; the A100 one integer epoch `ts`.
SOURCES = ("bert_small.pt.trace.json.gz", "alexnet.pt.trace.json.gz")
_RENUMBERED = {
    "correlation",
    "External id",
    "Python id",
    "Python parent id",
    "Ev Idx",
    "Record function id",
    "Sequence number",
    "wait_on_cuda_event_record_corr_id",
}


def _maker() -> Any:
    spec = importlib.util.spec_from_file_location(
        "make_real_kineto", REPO / "benchmarks" / "make_real_kineto.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _launch_flows(trace: Any) -> list[tuple[int, int]]:
    return sorted(
        (int(trace.ev_start_ps[s]), int(trace.ev_start_ps[d]))
        for s, d in zip(trace.flow_src.tolist(), trace.flow_dst.tolist())
    )


@pytest.mark.parametrize("name", SOURCES)
def test_each_copy_is_the_capture_shifted_with_its_own_ids(tmp_path: Path, name: str) -> None:
    source = DATA / name
    doc = json.loads(gzip.decompress(source.read_bytes()))
    out = tmp_path / "big.json"
    inflated = len(gzip.decompress(source.read_bytes()))
    size, n, copies = _maker().make(str(source), str(out), inflated + 1)
    big = json.loads(out.read_bytes())
    by_phase = collections.Counter(e["ph"] for e in doc["traceEvents"])
    per_copy = len(doc["traceEvents"]) - by_phase["M"]
    assert copies == 2 and n == len(big["traceEvents"]) == 2 * per_copy + by_phase["M"]
    assert size == out.stat().st_size
    assert {k: v for k, v in big.items() if k != "traceEvents"} == {
        k: v for k, v in doc.items() if k != "traceEvents"
    }
    body = [e for e in doc["traceEvents"] if e["ph"] != "M"]
    second = big["traceEvents"][by_phase["M"] + per_copy :]
    shifts = set()
    for old, new in zip(body, second):
        assert new.keys() == old.keys()
        shifts.add(float(new["ts"]) - float(old["ts"]))
        args, new_args = old.get("args", {}), new.get("args", {})
        assert new_args.keys() == args.keys()
        assert {k: new_args[k] for k in args.keys() - _RENUMBERED} == {
            k: args[k] for k in args.keys() - _RENUMBERED
        }
        for key in args.keys() & _RENUMBERED:
            value = args[key]
            if isinstance(value, int) and value >= 0:
                assert new_args[key] > value
            else:  # no id (Python parent id null)
                assert new_args[key] == value
        if "id" in old:
            assert new["id"] > old["id"]
    assert len(shifts) == 1 and shifts.pop() > 0
    steps = [{e["name"] for e in copy if e["name"].startswith("ProfilerStep#")} for copy in (body, second)]
    assert not steps[0] & steps[1]
    # Read back: twice the events, and twice the launch → kernel flows (ids kept apart per copy).
    one = chrome_json.read(str(source), fsspec.filesystem("file"))
    two = chrome_json.read(str(out), fsspec.filesystem("file"))
    assert two.num_events == 2 * one.num_events
    assert len(_launch_flows(two)) == 2 * len(_launch_flows(one))
