"""Events that need no pairing into the builder: complete events, instants and counter values.

Complete events and instants go in chunk by chunk, in file order, their args texts as ranges of the
temporary file (`spill.FileRange`). What flows need later is kept per event that carries it, never
per event: the Kineto ids of launches and annotations go to the temporary file as link records
(`Links`: id, builder index, start, on a device or not), already split into the buckets their
joins take, the flow v2 bindings stay in memory (`Binds`). `SimpleEvents` also collects the
`ProfilerStep#N` spans of the host. Counter values go in per chunk as one series per track.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from profscope.formats.chrome import columns as cc
from profscope.formats.chrome.clock import Clock
from profscope.formats.chrome.decode import Damage
from profscope.formats.chrome.parts import Chunk, Parts, prefetched, select_args, string_table
from profscope.formats.chrome.spill import ChunkRef, SpillFile
from profscope.formats.chrome.tracks import Layout
from profscope.model import arrays
from profscope.model.columns import TraceBuilder

_STEP_NAME = re.compile(r"^ProfilerStep#\d+$")
LINK_KINDS = ("corr", "ext")


class Links:
    """Link records of one kind (Kineto `correlation` or `External id`), in file order, in chunks
    of the temporary file: `value` (id digits), `index` (builder index), `start`, `device`.

    Made by `flows.new_links`, which knows before the first record how many buckets the
    joins take and how ids compare: with more than one, each chunk's records are split by bucket
    as they come (`split` gives each row's bucket, and the columns to write), so that a bucket is
    read back alone."""

    def __init__(
        self,
        spill: SpillFile,
        numeric: bool,
        buckets: int,
        split: Callable[[dict[str, np.ndarray]], tuple[np.ndarray, dict[str, np.ndarray]]],
    ) -> None:
        self.spill = spill
        self.numeric = numeric  # ids compared as numbers (see `flows`)
        self.buckets = buckets
        self._split = split
        self.refs: list[list[ChunkRef]] = [[] for _ in range(buckets)]
        self.rows = self.host_rows = self.device_rows = 0
        self.width = 0  # widest id text, as decoded

    def add(self, value: np.ndarray, index: np.ndarray, start: np.ndarray, device: np.ndarray) -> None:
        self.width = max(self.width, value.dtype.itemsize)
        if not value.shape[0]:
            return
        columns = {"value": value, "index": index, "start": start, "device": device}
        if self.buckets == 1:
            ref = ChunkRef()
            ref.rows["link"] = value.shape[0]
            self.spill.write({"link": columns}, ref)
            self.refs[0].append(ref)
        else:
            which, columns = self._split(columns)
            self.spill.write_by_bucket("link", columns, which, self.refs)
        self.rows += value.shape[0]
        on_device = int(device.sum())
        self.device_rows += on_device
        self.host_rows += value.shape[0] - on_device

    def chunks(self, bucket: int = 0) -> Iterator[dict[str, np.ndarray]]:
        """The records of one bucket chunk by chunk, each given back to the system once read
        (read once)."""
        for ref in self.refs[bucket]:
            records = self.spill.read(ref, "link", tuple(ref.columns["link"]))
            self.spill.release(ref, "link")
            yield records


class Binds:
    """Flow v2 bindings (`bind_id` with `flow_in` / `flow_out`) in file order, with the builder
    index and start of the event each is on (-1 until known: B halves get theirs when paired)."""

    def __init__(self) -> None:
        self.groups: list[dict[str, np.ndarray]] = []
        # (part, B/E row) of the B halves that carry a binding → position in groups.
        self.on_begin: dict[tuple[int, int], tuple[int, int]] = {}

    COLUMNS = ("kind", "local", "id", "in", "out")

    def add(self, c: Chunk, b: dict[str, np.ndarray], ev_index: np.ndarray, ev_start: np.ndarray) -> None:
        """The bindings `b` (the chunk's `bind` table, `COLUMNS`) of chunk `c`."""
        index = np.full(b["kind"].shape[0], -1, np.int64)
        start = np.zeros(b["kind"].shape[0], np.int64)
        on_ev = np.flatnonzero(b["kind"] == cc.BIND_EV)
        if on_ev.shape[0]:
            local = b["local"][on_ev] - c.ref.base["ev"]
            index[on_ev], start[on_ev] = ev_index[local], ev_start[local]
        g = len(self.groups)
        for k in np.flatnonzero(b["kind"] == cc.BIND_BE).tolist():
            self.on_begin[(c.part, int(b["local"][k]))] = (g, k)
        self.groups.append({"id": b["id"], "in": b["in"], "out": b["out"], "index": index, "start": start})

    def set_begin(self, place: tuple[int, int], index: int, start: int) -> None:
        """The B half at `place` (part, B/E row) opened the slice at builder `index`."""
        g, k = self.on_begin[place]
        self.groups[g]["index"][k] = index
        self.groups[g]["start"][k] = start


class _Read:
    """What `SimpleEvents` reads of one chunk (by `parts.prefetched`'s thread): the bindings, the
    complete events and instants with their time from zero and in-range mask, their link ids, and
    their args texts in memory where some events are dropped or `in_memory` (else None: lent)."""

    def __init__(self, c: Chunk, clock: Clock, in_memory: bool) -> None:
        self.bind = c.read("bind", *Binds.COLUMNS) if c.has("bind") else None
        self.ev: dict[str, np.ndarray] | None = None
        self.args: bytes | None = None
        if not c.has("ev"):
            return
        self.ev = c.read("ev", "us", "frac", "track", "dur", "name", "cat", "alen")
        self.links = {kind: c.read(kind, "event", "value") for kind in LINK_KINDS if c.has(kind)}
        self.start, self.ok = clock.to_ps(self.ev["us"], self.ev["frac"])
        self.dropped = int(self.ok.shape[0] - self.ok.sum())
        if self.dropped or in_memory:
            self.args = c.args("ev")


class SimpleEvents:
    """Complete events and instants into the builder, chunk by chunk; the Kineto ids of launches
    and annotations go to `links` (one `Links` per kind of `LINK_KINDS`)."""

    def __init__(
        self,
        builder: TraceBuilder,
        ids: Parts,
        clock: Clock,
        layout: Layout,
        damage: Damage,
        links: dict[str, Links],
    ) -> None:
        self.end_ps = 0
        self.links = links
        self.binds = Binds()
        steps: list[dict[str, Any]] = []
        step_ids = [sid for text, sid in builder.string_ids.items() if _STEP_NAME.match(text)]
        is_step_name = string_table(len(builder.string_ids), step_ids)

        def reading(c: Chunk) -> Callable[[], _Read]:
            # Args texts are read in memory where the builder keeps them so (it has not spilled).
            return functools.partial(_Read, c, clock, not builder.spilled)

        for c, got in prefetched(ids.chunks(), reading):
            bind = got.bind
            if got.ev is None:
                if bind is not None:
                    self.binds.add(c, bind, np.zeros(0, np.int64), np.zeros(0, np.int64))
                c.release("bind")
                continue
            e, links, start, ok, dropped = got.ev, got.links, got.start, got.ok, got.dropped
            n = e["us"].shape[0]
            # The args texts of every event kept go to the builder as their range of the file
            # (copied file to file once it spills); those of some events are picked in memory.
            args = got.args if got.args is not None else c.lend_args("ev")
            # Read alone, and in memory now (but lent args, released once copied): the pages go
            # back before the builder's writes of this chunk, which land on them.
            c.release("ev", *LINK_KINDS, "bind")
            if dropped:
                damage.skipped["events more than 25 days away from the rest of the trace"] += dropped
            keys = c.kmap[e["track"]]
            name = c.smap[e["name"]]
            # Every event kept (the usual case): views, not copies.
            kept: slice | np.ndarray = slice(None) if not dropped else np.flatnonzero(ok)
            cat = c.smap[e["cat"][kept]]
            first = builder.add_events(
                layout.tracks_of(keys[kept], cat),
                start[kept],
                e["dur"][kept],
                name[kept],
                cat,
                args_blob=select_args(args, e["alen"], ok) if dropped else args,
                args_lengths=e["alen"][kept],
            )
            if dropped:
                index = np.full(n, -1, np.int64)
                index[kept] = first + np.arange(n - dropped)
            else:
                index = first + np.arange(n, dtype=np.int64)
            if n - dropped:
                self.end_ps = max(self.end_ps, int((start[kept] + e["dur"][kept]).max()))
            if step_ids:
                named = np.flatnonzero(is_step_name[name])  # few: the rest is checked on these alone
                named = named[ok[named] & ~layout.device_key[keys[named]]]
                for i in named.tolist():
                    steps.append(
                        {"name": ids.strings[name[i]], "start_ps": int(start[i]), "dur_ps": int(e["dur"][i])}
                    )
            for kind, link in links.items():
                local = link["event"] - c.ref.base["ev"]
                found = index[local]
                sel = np.flatnonzero(found >= 0)
                local = local[sel]
                self.links[kind].add(
                    link["value"][sel], found[sel], start[local], layout.device_key[keys[local]]
                )
            if bind is not None:
                self.binds.add(c, bind, index, start)
        steps.sort(key=lambda s: (s["start_ps"], s["name"]))
        self.profiler_steps = steps


def add_counters(builder: TraceBuilder, ids: Parts, clock: Clock, layout: Layout, damage: Damage) -> None:
    """Counter values into the builder: per chunk, one series per counter track, in file order
    within it (the builder's stable sort by time keeps that order for equal times)."""
    for c in ids.chunks("ctr"):
        cols = c.read("ctr", "us", "frac", "track", "value")
        c.release("ctr")
        ts, ok = clock.to_ps(cols["us"], cols["frac"])
        track = layout.track_of_key[c.kmap[cols["track"]]]
        value = cols["value"]
        dropped = int((~ok).sum())
        if dropped:
            damage.skipped["counter values more than 25 days away from the rest of the trace"] += dropped
        track, ts, value = track[ok], ts[ok], value[ok]
        order = arrays.stable_argsort(track)
        track, ts, value = track[order], ts[order], value[order]
        bounds = np.flatnonzero(np.diff(track)) + 1
        for lo, hi in zip(
            np.concatenate(([0], bounds)).tolist(), np.concatenate((bounds, [track.shape[0]])).tolist()
        ):
            if hi > lo:
                builder.add_counter(int(track[lo]), ts[lo:hi], value[lo:hi])
