"""The format registry: the one table of formats, their labels, readers and the `.N` ordinal rule."""

from __future__ import annotations

import datetime

import pytest

from profscope import logdir
from profscope.formats import detect, registry
from profscope.formats.chrome import reader as chrome_json
from profscope.formats.xla import metrics as xla_metrics
from profscope.formats.xplane import reader as xplane

pytestmark = pytest.mark.stack_independent


def test_every_format_is_listed_once_with_a_label_and_a_reader() -> None:
    ids = [f.id for f in registry.FORMATS]
    assert ids == ["xplane", "chrome_trace", "xla_metrics", "xla_debug", "xla_graphs"]
    assert registry.TRACE_FORMATS == ("xplane", "chrome_trace")
    assert registry.XLA_LOG_FORMATS == ("xla_metrics", "xla_debug", "xla_graphs")
    assert [registry.label(i) for i in ids] == ["XPlane", "Chrome trace", "XLA logs", "XLA logs", "XLA logs"]
    assert registry.label(None) is None and registry.label("nope") is None
    assert registry.reader("xplane") is xplane.read
    assert registry.reader("chrome_trace") is chrome_json.read
    assert registry.reader("xla_metrics") is xla_metrics.read
    with pytest.raises(KeyError):
        registry.reader("nope")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("train.xla_graphs.txt.3", ("train.xla_graphs.txt", 3)),
        ("a/b/x.log.0", ("a/b/x.log", 0)),
        ("train.xla_graphs.txt", ("train.xla_graphs.txt", None)),
        ("worker0.1623143089861.pt.trace.json", ("worker0.1623143089861.pt.trace.json", None)),
        ("host.xplane.pb.2", ("host.xplane.pb.2", None)),
    ],
)
def test_the_ordinal_rule(name: str, expected: tuple[str, int | None]) -> None:
    assert registry.split_ordinal(name) == expected
    assert registry.ordinal_of(name) == expected[1]


def test_hosts_of_ordinals() -> None:
    assert [registry.host_name("train", o) for o in (None, 0, 1, 12)] == [
        "train",
        "train",
        "train.1",
        "train.12",
    ]
    assert registry.split_host_name("train.12") == ("train", 12)
    assert registry.split_host_name("train") == ("train", None)


def test_detection_names_come_from_the_registry() -> None:
    for fmt in registry.FORMATS:
        for suffix in fmt.suffixes:
            match = detect.match_name(f"h{suffix}", in_session=True)
            assert match is not None and (match.format, match.host) == (fmt.id, "h")
    assert detect.match_name("h.xla_graphs.txt.2", in_session=False) == detect.NameMatch("xla_graphs", "h", 2)
    assert (
        detect.match_name("h.trace.json", in_session=False) is None
    )  # only *.pt.trace.json outside sessions


def test_session_labels() -> None:
    expected = datetime.datetime.fromtimestamp(1795998778.414715).strftime("%Y-%m-%d %H:%M:%S")
    assert logdir.session_label("1795998778414715306") == expected  # epoch ns
    assert logdir.session_label("1795998778414") == expected  # epoch ms
    assert logdir.session_label("2026_11_30_00_33_00") == "2026-11-30 00:33:00"  # XProf session folder
    assert logdir.session_label("Apr_03_18_51_38") == "Apr 03 18:51:38"
    assert logdir.session_label("pytorch") == "pytorch"
    assert logdir.session_label("session1") == "session1"
