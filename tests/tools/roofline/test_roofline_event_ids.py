"""The events a Kineto op row carries to the Trace tab: exactly the device activities its time comes
from (checked by hand against the raw JSON), on the timeline's ids."""

from __future__ import annotations

import gzip
import json

import fsspec

from profscope.formats.chrome import reader as chrome_json
from profscope.tools.roofline import analysis, kineto
from profscope.tools.roofline.model import OpCost
from tests.support import DATA_DIR

RESNET = DATA_DIR / "kineto" / "worker0.1623143089861.pt.trace.json.gz"
OP = "aten::cudnn_convolution_backward_input(fp32[32, 1024, 14, 14], fp32[1024, 256, 1, 1])"
PS_PER_US = 1_000_000


def test_a_row_carries_the_kernels_its_time_comes_from() -> None:
    events = json.loads(gzip.decompress(RESNET.read_bytes()))["traceEvents"]
    ops = [
        e
        for e in events
        if e.get("cat") == "Operator"
        and e["name"] == "aten::cudnn_convolution_backward_input"
        and e["args"]["Input Dims"][1:3] == [[32, 1024, 14, 14], [1024, 256, 1, 1]]
    ]
    ids = {e["args"]["External id"] for e in ops}
    kernels = [
        e
        for e in events
        if e.get("cat") in ("Kernel", "Memset", "Memcpy") and e["args"].get("external id") in ids
    ]
    trace = chrome_json.read(str(RESNET), fsspec.filesystem("file"))
    row = next(c for c in kineto.op_costs(trace) if c.name == OP)
    assert len(row.event_ids) == len(kernels) == 72
    names = {trace.strings[int(trace.ev_name[i])] for i in row.event_ids}
    assert names == {e["name"] for e in kernels}
    assert sum(int(trace.ev_dur_ps[i]) for i in row.event_ids) == sum(e["dur"] for e in kernels) * PS_PER_US
    starts = [int(trace.ev_start_ps[i]) for i in row.event_ids]
    assert starts == sorted(starts)


def test_ids_name_the_host_on_a_merged_timeline_and_merge_capped() -> None:
    cost = OpCost("op", "kernel", 1, 1, 1, None, None, "profile", "op", event_ids=(5, 7))
    assert analysis._timeline_ids([cost], 2)[0].event_ids == (2 * 2**32 + 5, 2 * 2**32 + 7)
    many = OpCost("op", "kernel", 1, 1, 1, None, None, "profile", "op", event_ids=tuple(range(150)))
    assert len(analysis._merge([many, many])[0].event_ids) == 200
