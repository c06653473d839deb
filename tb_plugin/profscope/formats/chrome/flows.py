"""Flows of a Chrome trace: host → device links rebuilt from Kineto ids, Chrome flow events.

Kineto tags a kernel launch and the kernel it started with one `correlation` id, and the host and
device annotations of one range with one `External id`; those become flows by joining the ids
(the innermost host event of an id launched it). Kineto's own launch flow events (`ac2g`, legacy
`async`/`launch`) are then redundant and left out. Other Chrome flow events (`s`/`t`/`f`) become
flow points bound by the builder to their enclosing or next slice; flow v2 (`bind_id` with
`flow_out` / `flow_in`) links each source to the next sink in time.

Joins need every record of an id at once, wherever in the file it is. So that memory stays bounded,
the link records and the flow points are split by id into B buckets, B = ceil(bytes /
LINK_BUDGET_BYTES), each written once to the temporary file and then joined one at a time: records
of one id, and all points of one flow, always fall in one bucket. B is known from the decoded
chunks before the first link record is made (`new_links`), so link records are written split as
they come; flow points are split when the joins begin. The bucket of an id is its number modulo B
where ids are compared as numbers (digit ids, at most 19 digits), else a hash of its text modulo
B; the numbers are parsed once, when records are split, and written beside (flow points) or
instead of (link records) the text. With one bucket (every trace below a few GB) flows come out in
the same order as from one join; with more, the same flows in bucket order.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator

import numpy as np

from profscope.formats.chrome.clock import Clock
from profscope.formats.chrome.decode import Damage
from profscope.formats.chrome.events import LINK_KINDS, Binds, Links
from profscope.formats.chrome.parts import Parts, string_table
from profscope.formats.chrome.spill import ChunkRef, SpillFile
from profscope.formats.chrome.tracks import Layout
from profscope.model import arrays
from profscope.model.columns import TraceBuilder
from profscope.model.spill import budget as spill_budget

# Flow categories Kineto writes for host launch → device work; these are rebuilt from correlation ids.
_LAUNCH_FLOW_CATEGORIES = frozenset({"ac2g"})
_LEGACY_LAUNCH_FLOW = ("async", "launch")
# Bytes of link records or flow points held at once (their sorts take about three times more);
# inside an ingest at most 1 / LINK_SHARE of the reader's budget, so the sorts fit in its share.
# Every bucket past the first costs a pass that splits and rewrites all records: the 1.1 GB
# benchmark trace (76 MB of flow points) needed two at 64 MB and 1/8, and its assembly took 0.7 s
# longer for it.
LINK_BUDGET_BYTES = 128 << 20
LINK_SHARE = 4
_MIN_LINK_BUDGET_BYTES = 1 << 20
# Bytes per link record and per flow point besides the id text (a flow point's id parsed as a
# number included).
_LINK_ROW_BYTES = 17
_POINT_ROW_BYTES = 47


def _numeric(width: int) -> bool:
    """Whether ids of this text width are compared as numbers (digits below 10**19)."""
    return width <= 19


def _buckets(nbytes: int) -> int:
    budget = LINK_BUDGET_BYTES
    config = spill_budget.current()
    if config is not None and config.reader_bytes:
        budget = max(_MIN_LINK_BUDGET_BYTES, min(budget, config.reader_bytes // LINK_SHARE))
    return max(1, math.ceil(nbytes / budget))


def _text_hash(values: np.ndarray) -> np.ndarray:
    """A hash of each byte string (NUL padding adds nothing, so any width gives the same)."""
    n, width = values.shape[0], values.dtype.itemsize
    h = np.zeros(n, np.uint64)
    if n == 0 or width == 0:
        return h
    chars = np.ascontiguousarray(values).view(np.uint8).reshape(n, width).astype(np.uint64)
    weight = np.uint64(1)
    with np.errstate(over="ignore"):
        for k in range(width):
            h += chars[:, k] * weight
            weight *= np.uint64(1099511628211)
    return h ^ (h >> np.uint64(29))


def _bucket_index(bucket: np.ndarray, buckets: int) -> np.ndarray:
    """Bucket numbers in the narrowest type: a stable sort of bytes is a radix sort."""
    return bucket.astype(np.uint8 if buckets <= 256 else np.int64)


def _split_links(cols: Columns, numeric: bool, buckets: int) -> tuple[np.ndarray, Columns]:
    """Each link record's bucket; ids compared as numbers are parsed here, once, and written
    as numbers."""
    if not numeric:
        return _bucket_index(_text_hash(cols["value"]) % np.uint64(buckets), buckets), cols
    number = _digit_numbers(cols["value"])
    return _bucket_index(number % np.uint64(buckets), buckets), {**cols, "value": number}


def _split_points(cols: Columns, numeric: bool, buckets: int) -> tuple[np.ndarray, Columns]:
    """Flow points in the bucket of the link records they could be redundant with: decimal ids
    by their number (kept beside the text, for `_member`), the others by a hash of their text."""
    if not numeric:
        return _bucket_index(_text_hash(cols["id"]) % np.uint64(buckets), buckets), cols
    decimal, number = _decimal_numbers(cols["id"])
    bucket = number % np.uint64(buckets)
    other = np.flatnonzero(~decimal)
    if other.shape[0]:
        bucket[other] = _text_hash(cols["id"][other]) % np.uint64(buckets)
    return _bucket_index(bucket, buckets), {**cols, "decimal": decimal, "number": number}


def _ids_as(values: np.ndarray, numeric: bool, width: int) -> np.ndarray:
    if values.dtype.kind == "u":  # parsed when split into buckets
        return values
    return _digit_numbers(values) if numeric else values.astype(f"S{width}")


_POW10 = 10 ** np.arange(20, dtype=np.uint64)


def _digit_numbers(values: np.ndarray) -> np.ndarray:
    """uint64 of texts of 1 to 19 digits (link ids), NUL padded: Horner's rule over the columns
    with NUL as 0, then a division by 10 per NUL. Twice as fast as `astype(np.uint64)`."""
    n, width = values.shape[0], values.dtype.itemsize
    if n == 0:
        return np.zeros(0, np.uint64)
    chars = np.ascontiguousarray(values).view(np.uint8).reshape(n, width)
    digits = np.maximum(chars, np.uint8(48)) - np.uint8(48)
    number = np.zeros(n, np.uint64)
    for k in range(width):
        number *= np.uint64(10)
        number += digits[:, k]
    return number // _POW10[width - np.count_nonzero(chars, axis=1)]


Columns = dict[str, np.ndarray]


class _Buckets:
    """Records (dicts of columns, chunk by chunk, in file order) split into buckets: with one
    bucket the source as it is; with more, each chunk's records of each bucket (as `split` gives
    them, with the bucket of each row) are written once to the temporary file, so a bucket is
    read back without going through the others."""

    def __init__(
        self,
        source: Callable[[], Iterator[Columns]],
        split: Callable[[Columns], tuple[np.ndarray, Columns]],
        buckets: int,
        spill: SpillFile,
    ) -> None:
        self.buckets = buckets
        self._source = source
        self._spill = spill
        self._refs: list[list[ChunkRef]] | None = None
        if buckets == 1:
            return
        self._refs = [[] for _ in range(buckets)]
        for cols in source():
            which, cols = split(cols)
            spill.write_by_bucket("r", cols, which, self._refs)

    def chunks(self, bucket: int) -> Iterator[Columns]:
        if self._refs is None:
            yield from self._source()
            return
        for ref in self._refs[bucket]:
            records = self._spill.read(ref, "r", tuple(ref.columns["r"]))
            self._spill.release(ref, "r")
            yield records


class _Side:
    """The host and device link records of one bucket."""

    def __init__(self, records: Iterator[Columns], numeric: bool, width: int) -> None:
        host_v, host_t, host_i, dev_v, dev_i = [], [], [], [], []
        for rec in records:
            value, index, start, device = rec["value"], rec["index"], rec["start"], rec["device"]
            host_v.append(value[~device])
            host_t.append(start[~device])
            host_i.append(index[~device])
            dev_v.append(value[device])
            dev_i.append(index[device])
        width = max(width, 1)
        self.hv = _ids_as(_cat(host_v, f"S{width}"), numeric, width)
        self.ht, self.hi = _cat(host_t, np.int64), _cat(host_i, np.int64)
        self.dv = _ids_as(_cat(dev_v, f"S{width}"), numeric, width)
        self.di = _cat(dev_i, np.int64)


def _cat(parts: list[np.ndarray], dtype: object) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def _join(builder: TraceBuilder, side: _Side, name: int) -> np.ndarray:
    """Link every device record to the host record of the same id; returns the linked ids.

    Several host events may share an id (a runtime call and the driver call inside it): sorted
    by (id, start), the last of a run is the innermost, the one that launched.
    """
    if not side.hv.shape[0] or not side.dv.shape[0]:
        return side.dv[:0]
    order = np.lexsort((side.ht, side.hv))
    hv, hi = side.hv[order], side.hi[order]
    pos = np.searchsorted(hv, side.dv, side="right") - 1
    found = (pos >= 0) & (hv[np.maximum(pos, 0)] == side.dv)
    builder.add_flows(hi[pos[found]], side.di[found], name)
    return arrays.unique(side.dv[found])


def new_links(ids: Parts, spill: SpillFile) -> dict[str, Links]:
    """Empty link records of each kind (`SimpleEvents` fills them), split into the buckets their
    joins will take as they come. Their numbers, and how ids compare, follow from what the decoded
    chunks hold: rows and id widths per kind, flow points (which go by the buckets of `corr`)."""
    rows = dict.fromkeys(LINK_KINDS, 0)
    width = dict.fromkeys(LINK_KINDS, 0)
    for c in ids.chunks():
        for kind in LINK_KINDS:
            if c.has(kind):
                rows[kind] += c.ref.rows[kind]
                width[kind] = max(width[kind], np.dtype(c.ref.columns[kind]["value"][1]).itemsize)
    flow_rows = sum(p.rows["flow"] for p in ids.parts)
    id_width = max((np.dtype(c.ref.columns["flow"]["id"][1]).itemsize for c in ids.chunks("flow")), default=0)
    buckets = {
        "corr": max(
            _buckets(rows["corr"] * (width["corr"] + _LINK_ROW_BYTES)),
            _buckets(flow_rows * (id_width + _POINT_ROW_BYTES)),
        ),
        "ext": _buckets(rows["ext"] * (width["ext"] + _LINK_ROW_BYTES)),
    }
    links = {}
    for kind in LINK_KINDS:
        numeric, count = _numeric(width[kind]), buckets[kind]
        split = functools.partial(_split_links, numeric=numeric, buckets=count)
        links[kind] = Links(spill, numeric, count, split)
    return links


def host_device_flows(
    builder: TraceBuilder, ids: Parts, clock: Clock, layout: Layout, links: dict[str, Links], damage: Damage
) -> tuple[int, int]:
    """Host → device flows joined on Kineto ids: launches on correlation ids ("launch"), host →
    device annotations of one range on External ids ("annotation"); then the Chrome flow points,
    less Kineto launch flows whose correlation id was linked. `links` come from `new_links`.

    Returns the number of correlation ids linked and of annotation flows.
    """
    corr = links["corr"]
    numeric, buckets = corr.numeric, corr.buckets
    flow_rows = sum(p.rows["flow"] for p in ids.parts)
    launch = builder.intern("launch") if corr.host_rows and corr.device_rows else -1
    linked = 0
    points = None
    if flow_rows:
        points = _Buckets(
            lambda: _point_columns(ids, clock, layout, damage),
            lambda cols: _split_points(cols, numeric, buckets),
            buckets,
            corr.spill,
        )
    for bucket in range(buckets):
        found = np.zeros(0, np.uint64)
        if launch >= 0:
            found = _join(builder, _Side(corr.chunks(bucket), numeric, corr.width), launch)
            linked += int(found.shape[0])
        if points is not None:
            _flow_points(builder, points.chunks(bucket), found, damage)
    ext = links["ext"]
    annotations = 0
    if ext.host_rows and ext.device_rows:
        name = builder.intern("annotation")
        for bucket in range(ext.buckets):
            side = _Side(ext.chunks(bucket), ext.numeric, ext.width)
            annotations += int(_join(builder, side, name).shape[0])
    return linked, annotations


_POINT_FIELDS = ("ok", "ts", "track", "name", "cat", "id", "phase", "next")


def _flow_points(
    builder: TraceBuilder, chunks: Iterator[Columns], linked: np.ndarray, damage: Damage
) -> None:
    """Chrome flow events (s/t/f) of one bucket, except Kineto launch flows already rebuilt from
    correlations. Points of every chunk are considered together: a flow may start in one chunk
    (or decoding process) and end in another."""
    chunks = list(chunks)
    if not chunks:
        return
    ok, ts, track, name, cat, ident, phase, bind_next = (
        np.concatenate([c[k] for c in chunks]) for k in _POINT_FIELDS
    )
    if linked.shape[0]:
        ids_known = builder.string_ids
        launch_cats = [ids_known[c] for c in _LAUNCH_FLOW_CATEGORIES if c in ids_known]
        is_launch = string_table(len(ids_known), launch_cats)[cat]
        legacy_cat, legacy_name = (ids_known.get(x, -1) for x in _LEGACY_LAUNCH_FLOW)
        is_launch |= (cat == legacy_cat) & (name == legacy_name)
        parsed = None
        if "number" in chunks[0]:  # parsed when split into buckets
            parsed = tuple(np.concatenate([c[k] for c in chunks]) for k in ("decimal", "number"))
        ok &= ~(is_launch & _member(ident, linked, parsed))
    # A flow is identified by (category, name, id). An id seen once cannot link anything: count
    # it here instead of binding it.
    sel = np.flatnonzero(ok)
    flow = _flow_ids(cat[sel].astype(np.int64) << 32 | name[sel], ident[sel])
    single = np.bincount(flow)[flow] == 1 if flow.shape[0] else np.zeros(0, bool)
    if single.any():
        damage.skipped["flow with a single endpoint"] += int(single.sum())
    sel, flow = sel[~single], flow[~single]
    if sel.shape[0]:
        builder.add_flow_points(flow, name[sel], phase[sel], track[sel], ts[sel], bind_next[sel])


def _point_columns(ids: Parts, clock: Clock, layout: Layout, damage: Damage) -> Iterator[Columns]:
    """The flow points of each chunk: in-range mask, time from zero, builder track, name and
    category ids, id text, phase, whether they bind to the next slice."""
    for c in ids.chunks("flow"):
        f = c.read("flow", "us", "frac", "track", "name", "cat", "id", "phase", "next")
        c.release("flow")
        ts, ok = clock.to_ps(f["us"], f["frac"])
        dropped = int((~ok).sum())
        if dropped:
            damage.skipped["flow events more than 25 days away from the rest of the trace"] += dropped
        yield {
            "ok": ok,
            "ts": ts,
            "track": layout.track_of_key[c.kmap[f["track"]]],
            "name": c.smap[f["name"]],
            "cat": c.smap[f["cat"]],
            "id": f["id"],
            "phase": f["phase"],
            "next": f["next"],
        }


def _member(
    values: np.ndarray, members: np.ndarray, parsed: tuple[np.ndarray, np.ndarray] | None = None
) -> np.ndarray:
    """values ∈ members, compared as texts: `values` are byte strings, `members` sorted byte
    strings or sorted numbers (uint64) that stand for their decimal text without leading zeros.
    `parsed`: `_decimal_numbers(values)` where it is known."""
    if members.dtype.kind == "u":
        # Only a text written the way a number prints can equal one: compare those as numbers.
        decimal, number = _decimal_numbers(values) if parsed is None else parsed
        found = np.zeros(values.shape[0], bool)
        if members.shape[0] and decimal.any():
            number = number[decimal]
            at = np.minimum(np.searchsorted(members, number), members.shape[0] - 1)
            found[decimal] = members[at] == number
        return found
    width = max(values.dtype.itemsize, members.dtype.itemsize)
    values, members = values.astype(f"S{width}"), np.sort(members.astype(f"S{width}"))
    pos = np.minimum(np.searchsorted(members, values), members.shape[0] - 1)
    return members[pos] == values


def _decimal_numbers(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mask, uint64 value) of the byte strings that are a number below 10**19 written in decimal
    without leading zeros ("0", "17"); value 0 where the mask is False."""
    n, width = values.shape[0], values.dtype.itemsize
    number = np.zeros(n, np.uint64)
    if n == 0 or width == 0:
        return np.zeros(n, bool), number
    chars = np.ascontiguousarray(values).view(np.uint8).reshape(n, width)
    digit = chars - np.uint8(ord("0"))  # wraps for bytes below "0"
    length = (chars != 0).sum(axis=1)
    ok = (length > 0) & (length <= 19) & ((chars[:, 0] != ord("0")) | (length == 1))
    for k in range(width):  # digits exactly up to the length, then only the NUL padding
        inside = k < length
        ok &= (digit[:, k] <= 9) == inside
        number = np.where(inside, number * np.uint64(10) + digit[:, k], number)
    number[~ok] = 0
    return ok, number


def _flow_ids(kind: np.ndarray, ident: np.ndarray) -> np.ndarray:
    """Dense id per flow point, equal for points with the same (kind, id)."""
    n = kind.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    order = np.lexsort((ident, kind))
    k, i = kind[order], ident[order]
    new = np.concatenate(([True], (k[1:] != k[:-1]) | (i[1:] != i[:-1])))
    flow = np.empty(n, np.int64)
    flow[order] = np.cumsum(new) - 1
    return flow


def bind_flows(builder: TraceBuilder, binds: Binds, damage: Damage) -> None:
    """Flow v2 (`bind_id` with `flow_out` / `flow_in`): link each source to the next sink in time."""
    points: dict[bytes, list[tuple[int, int, bool, bool]]] = {}
    for g in binds.groups:
        for ident, flow_in, flow_out, index, start in zip(
            g["id"].tolist(), g["in"].tolist(), g["out"].tolist(), g["index"].tolist(), g["start"].tolist()
        ):
            if index >= 0:
                points.setdefault(ident, []).append((start, index, flow_in, flow_out))
    if not points:
        return
    name = builder.intern("flow")
    unmatched = 0
    for chain in points.values():
        chain.sort()
        next_sink: int | None = None  # the first sink after the current point
        targets: list[int | None] = [None] * len(chain)
        for k in range(len(chain) - 1, -1, -1):
            targets[k] = next_sink
            if chain[k][2]:
                next_sink = chain[k][1]
        for (_, src, _, out), dst in zip(chain, targets):
            if not out:
                continue
            if dst is None:
                unmatched += 1
            else:
                builder.add_flow(src, dst, name)
    if unmatched:
        damage.skipped["flow_out events with no later flow_in"] += unmatched
