"""Tell which profile format a file holds from its name and its first few KB, without parsing it.

Discovery calls this for every candidate file on each re-scan of the logdir, so it only ever
reads a small head (decompressed when gzip) and decides with cheap markers. Readers do the real
validation; this module only routes a file to the right reader and reports files it cannot read.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import zlib
from collections.abc import Sequence

import fsspec

from profscope.formats import registry
from profscope.formats.registry import CHROME_TRACE, XLA_DEBUG, XLA_GRAPHS, XLA_METRICS, XPLANE

# Decompressed bytes examined. Kineto files may open with a long `deviceProperties` list, so a
# little more than one KB helps the device-data hint; still one small ranged read per file.
HEAD_BYTES = 4096
# Compressed bytes fetched for a .gz head: enough to inflate HEAD_BYTES of JSON comfortably.
GZIP_HEAD_BYTES = 16384


# Markers whose first occurrence in a text head decides the XLA log kind.
_XLA_MARKERS: tuple[tuple[re.Pattern[bytes], str], ...] = (
    (re.compile(rb"^\[MetricsData; step=\d+\]", re.M), XLA_METRICS),
    (re.compile(rb"^(?:Metric|Counter): \S", re.M), XLA_METRICS),
    (re.compile(rb"^(?:Post )?Compilation Analysis: ", re.M), XLA_DEBUG),
    (re.compile(rb"^Execution Analysis: ", re.M), XLA_DEBUG),
    (re.compile(rb"^pt-xla-profiler: ", re.M), XLA_DEBUG),
    (re.compile(rb"^\[ScheduleSyncTensorsGraph\]", re.M), XLA_GRAPHS),
    (re.compile(rb"^TensorsGraphInfo:", re.M), XLA_GRAPHS),
    (re.compile(rb"^## BEGIN_GRAPH", re.M), XLA_GRAPHS),
)

_CHROME_OBJECT_MARKERS = (b'"traceEvents"', b'"schemaVersion"', b'"displayTimeUnit"')
_KINETO_MARKERS = (b'"schemaVersion"', b'"deviceProperties"')
_EMPTY_DEVICE_PROPERTIES = re.compile(rb'"deviceProperties"\s*:\s*\[\s*\]')
# XSpace fields 1-5 (planes, errors, warnings, hostnames, …) are all length-delimited.
_XSPACE_FIRST_TAGS = frozenset({0x0A, 0x12, 0x1A, 0x22, 0x2A})


@dataclasses.dataclass(frozen=True)
class NameMatch:
    """What a file's name alone says: candidate format (None = decide from content) and host."""

    format: str | None
    host: str
    ordinal: int | None = None


@dataclasses.dataclass(frozen=True)
class Detection:
    """Outcome of sniffing one file: a format id, or None when it is not a profile we read."""

    format: str | None
    host: str
    ordinal: int | None = None
    device_data: bool = False
    error: str | None = None


@functools.lru_cache(maxsize=65536)
def match_name(name: str, *, in_session: bool) -> NameMatch | None:
    """Classify a base file name; None when the name rules the file out.

    `in_session` says the file lies in `plugins/profile/<session>/`, where any `*.json[.gz]` may be a
    Chrome trace; elsewhere only `*.pt.trace.json[.gz]` is taken as one.
    """
    base, ordinal = registry.split_ordinal(name)
    for fmt in registry.FORMATS:
        stem = base if fmt.text_log else name
        for suffix in fmt.suffixes:
            if stem.endswith(suffix) and len(stem) > len(suffix):
                if suffix.startswith(".trace") and not in_session:
                    # Only PyTorch's own `*.pt.trace.json` names a trace outside a session folder.
                    return None
                return NameMatch(fmt.id, stem[: -len(suffix)], ordinal if fmt.text_log else None)
    if base.endswith(registry.TEXT_SUFFIXES):
        return NameMatch(None, "xla", ordinal)
    if in_session:
        for suffix in (".json", ".json.gz"):
            if name.endswith(suffix) and len(name) > len(suffix):
                return NameMatch(None, name[: -len(suffix)])
    return None


def _head_span(path: str, size: int | None) -> int:
    """How many bytes from the start of `path` to fetch for sniffing (more for gzip)."""
    want = GZIP_HEAD_BYTES if path.endswith(".gz") else HEAD_BYTES
    return want if size is None else min(want, size)


def _inflate_head(path: str, raw: bytes) -> bytes:
    """The first HEAD_BYTES of a fetched head, inflated when the file is gzip; OSError when it cannot."""
    if not path.endswith(".gz"):
        return raw[:HEAD_BYTES]
    if raw[:2] != b"\x1f\x8b":
        raise OSError("not gzip data although the name ends in .gz")
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, HEAD_BYTES)
    except zlib.error as e:
        raise OSError(f"corrupt gzip data: {e}") from e


def sniff(name: str, head: bytes, match: NameMatch) -> Detection:
    """Decide the format of a file from its name match and its head bytes."""
    if match.format == XPLANE:
        return _sniff_xplane(head, match)
    if match.format == CHROME_TRACE or (match.format is None and name.endswith((".json", ".json.gz"))):
        return _sniff_chrome(name, head, match)
    return _sniff_xla(head, match)


def detect_many(
    fs: fsspec.AbstractFileSystem, items: Sequence[tuple[str, NameMatch, int | None]]
) -> list[Detection]:
    """Sniff (path, name match, size) items with one batched ranged read of their heads.

    `cat_ranges` fetches concurrently on object stores (gs://, s3://), so a first scan of a remote
    logdir costs a few round trips rather than one per file. A failure becomes `Detection.error`.
    """
    results: list[Detection | None] = [None] * len(items)
    to_read = []
    for i, (_, match, size) in enumerate(items):
        if size == 0:
            error = None if match.format is None else "file is empty"
            results[i] = Detection(match.format, match.host, match.ordinal, error=error)
        else:
            to_read.append(i)
    if to_read:
        paths = [items[i][0] for i in to_read]
        ends = [_head_span(items[i][0], items[i][2]) for i in to_read]
        raws = fs.cat_ranges(paths, [0] * len(paths), ends, on_error="return")
        for i, raw in zip(to_read, raws):
            path, match, _ = items[i]
            try:
                if isinstance(raw, Exception):
                    raise OSError(str(raw) or type(raw).__name__)
                head = _inflate_head(path, raw)
            except OSError as e:
                error = f"cannot read the file head: {e}"
                results[i] = Detection(match.format, match.host, match.ordinal, error=error)
                continue
            results[i] = sniff(path.rsplit("/", 1)[-1], head, match)
    return [r for r in results if r is not None]


def _sniff_xplane(head: bytes, match: NameMatch) -> Detection:
    if not head:
        return Detection(XPLANE, match.host, error="file is empty")
    if head[0] not in _XSPACE_FIRST_TAGS:
        return Detection(
            XPLANE,
            match.host,
            error=f"does not start like an XPlane (XSpace protobuf) file: it starts with {describe_start(head)}",
        )
    # Cheap rule, documented in the README: every XPlane may carry device planes, so it gets roofline.
    return Detection(XPLANE, match.host, device_data=True)


def _sniff_chrome(name: str, head: bytes, match: NameMatch) -> Detection:
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    named_trace = match.format == CHROME_TRACE
    looks_json = text[:1] in (b"{", b"[")
    if not looks_json:
        if named_trace:
            return Detection(
                CHROME_TRACE, match.host, error=f"not JSON: it starts with {describe_start(text)}"
            )
        return Detection(None, match.host)
    if text[:1] == b"[":
        is_trace = named_trace or b'"ph"' in text or text[1:].lstrip()[:1] == b"]"
    else:
        is_trace = named_trace or any(m in text for m in _CHROME_OBJECT_MARKERS)
    if not is_trace:
        return Detection(None, match.host)
    return Detection(CHROME_TRACE, match.host, device_data=_chrome_has_device_data(name, text))


def describe_start(head: bytes) -> str:
    """What kind of byte a file starts with, in words: messages about a file that is not a profile
    describe it and never quote it (it may be any file, e.g. one a link points to)."""
    if not head:
        return "nothing (only whitespace)"
    first = head[:1]
    if head[:2] == b"\x1f\x8b":
        what = "gzip data (a .gz name is missing?)"
    elif first.isalpha():
        what = "a letter"
    elif first.isdigit():
        what = "a digit"
    elif first == b"<":
        what = "markup (an HTML or XML page?)"
    elif first[0] < 0x20 or first[0] == 0x7F:
        what = "a control byte"
    elif first[0] >= 0x80:
        what = "a non-ASCII byte"
    else:
        what = "a punctuation mark"
    return f"{what}; the content is not shown"


def _chrome_has_device_data(name: str, text: bytes) -> bool:
    """Roofline applies to PyTorch profiler (Kineto) traces unless the head shows no devices."""
    if _EMPTY_DEVICE_PROPERTIES.search(text):
        return False
    if b'"deviceProperties"' in text:
        return True
    return ".pt.trace.json" in name or any(m in text for m in _KINETO_MARKERS)


def _sniff_xla(head: bytes, match: NameMatch) -> Detection:
    best: tuple[int, str] | None = None
    for pattern, fmt in _XLA_MARKERS:
        found = pattern.search(head)
        if found and (best is None or found.start() < best[0]):
            best = (found.start(), fmt)
    if best is None:
        if match.format is not None:
            return Detection(
                match.format,
                match.host,
                match.ordinal,
                error=f"named like an {match.format} log but its first {len(head)} bytes hold no "
                "PyTorch/XLA marker (Metric:/Counter:, Compilation Analysis:, [ScheduleSyncTensorsGraph])",
            )
        return Detection(None, match.host, match.ordinal)
    fmt = match.format or best[1]
    return Detection(fmt, match.host, match.ordinal)
