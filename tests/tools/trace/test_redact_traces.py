"""Redacted exports of every real trace of the repository (tests/data's Kineto traces, trace logdirs
and XPlanes, the demo logdir's traces): no host name, user name, path or address the source holds
survives, and what is neither (architecture, dtypes, device names, op and kernel names) does.

What identifies the source is found here, in the source itself, without the redaction's patterns:
the host and user fields of its metadata (Kineto's top-level fields, `metadata.system.uname.node`
and `env`; an XSpace's `hostnames`), the host name the export is made for, absolute folders and
the users of home folders anywhere in the file, IPv4 addresses and e-mail addresses. `EXPECTED`
pins what must be found in some files, so the search cannot silently find nothing.
"""

from __future__ import annotations

import gzip
import json
import pathlib
import re
from typing import Any

import fsspec
import numpy as np
import pytest

from profscope.engine.lod import index as lod
from profscope.engine.timeline import HostTrace, Timeline
from profscope.formats.chrome import reader as chrome_json
from profscope.formats.xplane import reader as xplane
from profscope.model import args as model_args
from profscope.model.columns import Trace
from profscope.tools.trace import export
from profscope.tools.trace.redact import MIN_HOST_NAME, RedactOptions
from tests.support import DATA_DIR, DEMO_LOGDIR, REPO

FS = fsspec.filesystem("file")
TRACES = sorted(
    [
        *DATA_DIR.glob("kineto/*.json.gz"),
        *DATA_DIR.glob("trace/logdir/**/*.json.gz"),
        *DATA_DIR.glob("trace/logdir/**/*.xplane.pb"),
        *DATA_DIR.glob("trace_view/logdir/**/*.json.gz"),
        *DATA_DIR.glob("xplane/*.xplane.pb"),
        *DEMO_LOGDIR.glob("**/*.json.gz"),
        *DEMO_LOGDIR.glob("**/*.xplane.pb"),
    ]
)
# Keys (lowercased) of metadata fields that hold a host or a user name, as the sources name them.
HOST_FIELDS = {"hostname", "host_name", "hostnames", "node"}
USER_FIELDS = {"user", "username", "tw_user", "logname"}
HOME_FIELDS = {"home", "pwd"}
# Absolute folders: a "/" that does not continue a word, a relative path or a URL's "//". The
# patterns start with the character they must start with and look behind it from there: the same
# matches as a leading look-behind, but the regex engine then skips to those characters instead of
# trying every position (4–8 × faster on the 35 MB Kineto texts).
NOT_PATH_START = rb"(?<![A-Za-z0-9_.~/<>-])"
FOLDER = re.compile(rb"/(?<![A-Za-z0-9_.~/<>-]/)(?:[A-Za-z0-9_.@+~-]+/)+")
HOME_USER = re.compile(rb"/(?:home|Users)/([A-Za-z0-9_.-]+)")
IPV4 = re.compile(rb"[0-9](?<![0-9.=-][0-9])[0-9]{0,2}\.(?:[0-9]{1,3}\.){2}[0-9]{1,3}(?![0-9.-])")
EMAIL = re.compile(rb"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
EXPECTED = {
    "bert_small.pt.trace.json.gz": {"a39ca6b8f513", "/root", "/app/moca/", "/tmp/tmpnscmpj6q/"},
    "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz": {
        "twshared39868.02.pnb3.facebook.com",
        "sraikund",
        "mast_hpc",
    },
    "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz": {"mojif", "/tmp/"},
    "worker0.1623143089861.pt.trace.json.gz": {"yangu", "/home/yangu/"},
    "gpu_8x_tf_training.xplane.pb": {"34.83.195.179"},
    "mi300_jax_conv.xplane.pb": {"tw003", "/workspace/traces/"},
    "vm.xplane.pb": {"vm"},
}
# Words that name no machine, person or path: kept wherever the source has them.
KEPT_WORDS = ("x86_64", "bfloat16", "float", "NVIDIA H100 80GB HBM3", "TPU v6 Lite", "aten::", "Memcpy")


def host_name(path: pathlib.Path) -> str:
    return path.name.split(".")[0]


def read(path: pathlib.Path) -> Trace:
    reader = xplane if path.name.endswith(".xplane.pb") else chrome_json
    return reader.read(str(path), FS)


def raw_text(path: pathlib.Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def read_text(trace: Trace) -> bytes:
    """What the reader got out of a file: its args, strings and metadata."""
    return b"\n".join(
        [
            model_args.record_texts(trace, np.arange(model_args.record_count(trace)))[1].tobytes(),
            *(s.encode() for s in trace.strings),
            json.dumps(trace.metadata).encode(),
        ]
    )


def source_text(path: pathlib.Path, trace: Trace) -> bytes:
    """The source as text: a JSON file as it is; an XPlane's strings as its reader decoded them
    (in the protobuf a string follows its length, a byte that may look like "/" or a digit)."""
    return raw_text(path) if not path.name.endswith(".xplane.pb") else read_text(trace)


def source_metadata(path: pathlib.Path, trace: Trace) -> Any:
    """The source's own metadata: a Kineto file's fields beside `traceEvents`, an XSpace's hostnames."""
    if path.name.endswith(".xplane.pb"):
        return {"hostnames": trace.metadata.get("hostnames", [])}
    doc = json.loads(raw_text(path))
    return {k: v for k, v in doc.items() if k != "traceEvents"} if isinstance(doc, dict) else {}


def identifiers(path: pathlib.Path, trace: Trace) -> tuple[set[str], set[str]]:
    """(words, texts) that identify the source: host and user names (checked as words), and
    folders, addresses, e-mails (checked as texts)."""
    words, texts = {host_name(path)}, set()

    def walk(value: Any, key: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, str(k).lower())
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str) and value.strip():
            if key in HOST_FIELDS or key in USER_FIELDS:
                words.add(value)
            elif key in HOME_FIELDS:
                texts.add(value)

    walk(source_metadata(path, trace), "")
    raw = source_text(path, trace)
    texts.update(m.decode() for m in FOLDER.findall(raw))
    words.update(m.decode() for m in HOME_USER.findall(raw))
    texts.update(m.decode() for m in IPV4.findall(raw) + EMAIL.findall(raw))
    return words, texts


def strings_of(value: Any) -> list[str]:
    """Every string of a JSON value, keys included."""
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings_of(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings_of(v)]
    return [value] if isinstance(value, str) else []


def as_word(word: str) -> re.Pattern[bytes]:
    return re.compile(rb"(?<![A-Za-z0-9_])" + re.escape(word.encode()) + rb"(?![A-Za-z0-9_])")


@pytest.mark.parametrize("path", TRACES, ids=lambda p: str(p.relative_to(REPO)))
def test_a_redacted_export_keeps_no_host_user_path_or_address_of_its_source(path, tmp_path):
    trace = read(path)
    words, texts = identifiers(path, trace)
    found = words | texts
    for known in EXPECTED.get(path.name, ()):
        assert any(known in f for f in found), f"{known!r} not found in {path.name}"
    host = host_name(path)
    timeline = Timeline([HostTrace(host, trace, lod.build(trace), key=str(path))])
    subject = export.Subject("run", "session", [host])
    exporter = export.Exporter(timeline, subject, export.ExportRange(), RedactOptions(enabled=True))
    out = tmp_path / "redacted.json.gz"
    export.write(exporter, str(out))
    text = gzip.decompress(out.read_bytes())
    doc = json.loads(text)
    strings = set(strings_of(doc))

    # Each pattern is searched only where its text occurs at all (a fast substring test first).
    for word in words:
        assert word not in strings, f"{word!r} kept as a value"
        if len(word) >= MIN_HOST_NAME and word.encode() in text:
            assert not as_word(word).search(text), f"{word!r} kept in {path.name}"
    for leak in texts:
        if leak.encode() in text:
            assert not re.search(NOT_PATH_START + re.escape(leak.encode()), text), (
                f"{leak!r} kept in {path.name}"
            )

    kept_text = read_text(trace)
    for kept in KEPT_WORDS:
        if kept.encode() in kept_text:
            assert kept.encode() in text, f"{kept!r} lost from {path.name}"
    exported_names = {ev["name"] for ev in doc["traceEvents"] if ev["ph"] in ("X", "i")}
    for sid in set(trace.ev_name.tolist()):
        name = trace.strings[sid]
        if name not in exported_names:
            assert any(w in name for w in words) or FOLDER.search(name.encode()), f"{name!r} changed"
    redacted = doc["profscope_export"]["hosts"][0]["metadata"]
    for field in ("deviceProperties", "distributedInfo", "devices"):
        assert redacted.get(field) == json.loads(json.dumps(trace.metadata.get(field))), field
