"""Issue 41 on the Chrome reader: a repeated top-level `traceEvents` key (the last one wins, as
`json` and `JSON.parse` decide) and a gzip stream whose only damage is in its header or trailer.

Built from a real Kineto trace (bert_small) wherever the damage can be put into one."""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path
from typing import Any

import fsspec
import pytest

from profscope.errors import UnreadableProfile
from profscope.formats.chrome import helper as chrome_helper
from profscope.formats.chrome import reader as chrome_json
from tests.support import DATA_DIR

pytestmark = pytest.mark.stack_independent

BERT = DATA_DIR / "kineto" / "bert_small.pt.trace.json.gz"
DECOY = {"ph": "X", "name": "decoy", "pid": 1, "tid": 1, "ts": 0, "dur": 1}


def read(path: Path) -> Any:
    return chrome_json.read(str(path), fsspec.filesystem("file"))


def bert_text() -> str:
    return gzip.decompress(BERT.read_bytes()).decode()


def names(trace: Any) -> list[str]:
    return [trace.strings[i] for i in trace.ev_name.tolist()]


@pytest.mark.parametrize("parallel", [False, True])
def test_repeated_trace_events_key_reads_the_last_array(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parallel: bool
) -> None:
    text = bert_text()
    expected = read(BERT)
    # One decoy event first, the real array after it: json.loads keeps the real one.
    first_decoy = '{"traceEvents": [' + json.dumps(DECOY) + "], " + text.lstrip()[1:]
    # The real array first, one decoy event after it: json.loads keeps the decoy.
    last_decoy = text.rstrip()[:-1] + ', "traceEvents": [' + json.dumps(DECOY) + "]}"
    assert json.loads(first_decoy)["traceEvents"] == json.loads(text)["traceEvents"]
    assert len(json.loads(last_decoy)["traceEvents"]) == 1
    later_seen_by_helper: list[int | None] = []
    if parallel:  # a helper process decodes the second part of the file (`chrome.helper`)
        monkeypatch.setattr(chrome_json, "PARALLEL_MIN_BYTES", 0)
        result = chrome_helper.HelperProcess.result

        def spy(self: chrome_helper.HelperProcess) -> chrome_helper.TailResult:
            tail = result(self)
            later_seen_by_helper.append(tail.later_events_at)
            return tail

        monkeypatch.setattr(chrome_helper.HelperProcess, "result", spy)
    (tmp_path / "first.json").write_text(first_decoy)
    (tmp_path / "last.json").write_text(last_decoy)

    trace = read(tmp_path / "first.json")
    assert trace.num_events == expected.num_events
    assert "decoy" not in names(trace)
    assert any("'traceEvents' appears more than once" in w for w in trace.warnings), trace.warnings

    later_seen_by_helper.clear()
    trace = read(tmp_path / "last.json")
    assert names(trace) == ["decoy"]
    assert any("'traceEvents' appears more than once" in w for w in trace.warnings), trace.warnings
    if parallel:  # the repeated key lies in the helper's part: it tells the reader
        assert later_seen_by_helper[0] == last_decoy.rindex('"traceEvents"') + len('"traceEvents": ')


def test_three_trace_events_arrays_read_the_third(tmp_path: Path) -> None:
    events = [dict(DECOY, name=f"array{i}", ts=i) for i in range(3)]
    text = "{" + ", ".join(f'"traceEvents": [{json.dumps(e)}]' for e in events) + "}"
    (tmp_path / "t.json").write_text(text)
    assert names(read(tmp_path / "t.json")) == ["array2"]


def test_single_trace_events_key_gives_no_repeat_warning() -> None:
    assert not any("more than once" in w for w in read(BERT).warnings)


def with_trailer(packed: bytes, crc_delta: int = 0, size_delta: int = 0) -> bytes:
    """`packed` (one gzip member) with its CRC-32 and/or ISIZE changed."""
    crc, size = struct.unpack("<II", packed[-8:])
    return packed[:-8] + struct.pack("<II", (crc + crc_delta) % 2**32, (size + size_delta) % 2**32)


@pytest.mark.parametrize(
    ("crc_delta", "size_delta", "message"),
    [
        (1, 0, "CRC-32 does not match: the data may be damaged"),
        (0, 1, "does not match the length of the data"),
    ],
)
def test_gzip_trailer_damage_keeps_every_event(
    tmp_path: Path, crc_delta: int, size_delta: int, message: str
) -> None:
    expected = read(BERT)
    path = tmp_path / "bert.pt.trace.json.gz"
    path.write_bytes(with_trailer(BERT.read_bytes(), crc_delta, size_delta))
    trace = read(path)
    assert trace.num_events == expected.num_events
    assert any(message in w for w in trace.warnings), trace.warnings
    assert not any("truncated" in w for w in trace.warnings), trace.warnings
    assert not any("events before the damage" in w for w in trace.warnings), trace.warnings


def test_gzip_trailer_damage_in_the_first_member_reads_the_next(tmp_path: Path) -> None:
    text = bert_text().encode()
    half = text.index(b"},", len(text) // 2) + 2
    path = tmp_path / "two.pt.trace.json.gz"
    path.write_bytes(with_trailer(gzip.compress(text[:half]), crc_delta=7) + gzip.compress(text[half:]))
    trace = read(path)
    assert trace.num_events == read(BERT).num_events
    assert any("CRC-32 does not match" in w for w in trace.warnings), trace.warnings


@pytest.mark.parametrize("cut", [2, 5, 9])
def test_gzip_cut_inside_its_header_says_so(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "cut.pt.trace.json.gz"
    path.write_bytes(BERT.read_bytes()[:cut])
    with pytest.raises(UnreadableProfile) as caught:
        read(path)
    assert "gzip header is cut" in caught.value.reason, caught.value.reason
    assert "whitespace" not in caught.value.reason
