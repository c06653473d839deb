"""A Kineto thread's Python frames (`with_stack`) on a track of their own beside the thread's, so a
viewer can hide them: on the real bert_small trace, and on hand-written files for the cases it
lacks (begin / end events, a name that already says Python)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest

from profscope.formats.chrome import reader as chrome_json
from profscope.formats.chrome.tracks import PYTHON_SUFFIX
from tests.support import DATA_DIR

pytestmark = pytest.mark.stack_independent

BERT = DATA_DIR / "kineto" / "bert_small.pt.trace.json.gz"


def read(path: Path) -> Any:
    return chrome_json.read(str(path), fsspec.filesystem("file"))


def write(tmp_path: Path, events: list[dict[str, Any]]) -> Any:
    path = tmp_path / "w.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return read(path)


def categories_by_track(trace: Any) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for track, cat in zip(trace.ev_track.tolist(), trace.ev_cat.tolist()):
        found.setdefault(trace.tracks[track].name, set()).add(trace.strings[cat])
    return found


def test_bert_frames_leave_the_op_thread_for_the_track_below_it() -> None:
    trace = read(BERT)
    names = [t.name for t in trace.tracks]
    cats = categories_by_track(trace)
    thread = names.index("thread 19392 (python3)")
    python = trace.tracks[thread + 1]
    assert python.name == "thread 19392 (python3)" + PYTHON_SUFFIX
    assert (python.section, python.sort_index, python.kind) == (
        trace.tracks[thread].section,
        trace.tracks[thread].sort_index,
        "thread",
    )
    assert cats[python.name] == {"python_function"}
    assert "python_function" not in cats["thread 19392 (python3)"]
    assert {"cpu_op", "cuda_runtime", "user_annotation"} <= cats["thread 19392 (python3)"]
    # Every frame moved, none lost: 1,380 on the op thread, 5 on a thread of frames alone.
    on_python = np.isin(trace.ev_track, [t.id for t in trace.tracks if t.name.endswith(PYTHON_SUFFIX)])
    is_frame = np.asarray(trace.ev_cat) == trace.strings.index("python_function")
    assert np.array_equal(on_python, is_frame) and int(is_frame.sum()) == 1385


def test_bert_ops_nest_under_their_step_once_the_frames_are_gone() -> None:
    """In the mixed thread the frames, which overlap the ops without nesting, hid the step marker
    from the ops' ancestors and took 39 rows; the op thread alone nests cleanly in a few."""
    trace = read(BERT)
    thread = [t.name for t in trace.tracks].index("thread 19392 (python3)")
    on_thread = np.flatnonzero(np.asarray(trace.ev_track) == thread)
    depth = np.asarray(trace.ev_depth)[on_thread]
    assert int(depth.max()) <= 6
    step = next(i for i in on_thread.tolist() if trace.strings[trace.ev_name[i]] == "ProfilerStep#6")
    assert trace.ev_depth[step] == 0
    start, end = int(trace.ev_start_ps[step]), int(trace.ev_start_ps[step] + trace.ev_dur_ps[step])
    inside = on_thread[
        (np.asarray(trace.ev_start_ps)[on_thread] > start)
        & (np.asarray(trace.ev_start_ps + trace.ev_dur_ps)[on_thread] <= end)
    ]
    assert inside.shape[0] > 100 and (np.asarray(trace.ev_depth)[inside] >= 1).all()


def test_a_thread_of_frames_alone_is_one_track_named_once(tmp_path: Path) -> None:
    frames = [
        {
            "ph": "X",
            "cat": "python_function",
            "name": "train.py(3): main",
            "pid": 1,
            "tid": 2,
            "ts": 0,
            "dur": 10,
        },
        {
            "ph": "X",
            "cat": "python_function",
            "name": "train.py(9): step",
            "pid": 1,
            "tid": 2,
            "ts": 1,
            "dur": 5,
        },
    ]
    trace = write(tmp_path, frames)
    assert [t.name for t in trace.tracks] == ["thread 2" + PYTHON_SUFFIX]
    named = {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main" + PYTHON_SUFFIX}}
    # As our export writes the track back: read again, it keeps its name.
    assert [t.name for t in write(tmp_path, [named, *frames]).tracks] == ["main" + PYTHON_SUFFIX]


def test_begin_end_ops_keep_a_thread_track_beside_the_frames(tmp_path: Path) -> None:
    """Begin / end events are not among the categories seen before the layout: a thread whose
    complete events are all frames keeps its own track for them."""
    trace = write(
        tmp_path,
        [
            {"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 2, "ts": 0, "dur": 10},
            {"ph": "B", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 2},
            {"ph": "E", "pid": 1, "tid": 2, "ts": 4},
        ],
    )
    assert categories_by_track(trace) == {
        "thread 2": {"cpu_op"},
        "thread 2" + PYTHON_SUFFIX: {"python_function"},
    }


def test_frames_on_a_device_stream_stay_there(tmp_path: Path) -> None:
    trace = write(
        tmp_path,
        [
            {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 0, "dur": 10},
            {"ph": "X", "cat": "python_function", "name": "f", "pid": 0, "tid": 7, "ts": 20, "dur": 1},
        ],
    )
    assert categories_by_track(trace) == {"stream 7 (kernels)": {"kernel", "python_function"}}
