"""Events that need no pairing into the builder: complete events, instants and counter values.

Complete events and instants go in part by part, each part's columns freed once the builder holds
them; `SimpleEvents` keeps, per part, where each event went (flows point at builder indices) and
collects the `ProfilerStep#N` spans of the host. Counter values go in as one series per track.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from profscope.columns import TraceBuilder
from profscope.formats.chrome_clock import Clock
from profscope.formats.chrome_decode import Damage
from profscope.formats.chrome_layout import Layout
from profscope.formats.chrome_parts import Parts, column, joined, select_args, string_table

_STEP_NAME = re.compile(r"^ProfilerStep#\d+$")


class SimpleEvents:
    """Complete events and instants into the builder, part by part; keeps index maps for flows."""

    def __init__(
        self, builder: TraceBuilder, ids: Parts, clock: Clock, layout: Layout, damage: Damage
    ) -> None:
        self.index: list[np.ndarray] = []  # per part: local event → builder index (-1 dropped)
        self.start: list[np.ndarray] = []
        self.track: list[np.ndarray] = []
        self.end_ps = 0
        steps: list[dict[str, Any]] = []
        step_ids = [sid for text, sid in builder.string_ids.items() if _STEP_NAME.match(text)]
        is_step_name = string_table(len(builder.string_ids), step_ids)
        for p, smap, kmap in zip(ids.parts, ids.smaps, ids.kmaps):
            n = p.num_events
            start, ok = clock.to_ps(column(p.ev, "us", np.int64), column(p.ev, "frac", np.int32))
            dropped = int(n - ok.sum())
            if dropped:
                damage.skipped["events more than 25 days away from the rest of the trace"] += dropped
            keys = kmap[column(p.ev, "track", np.int32)] if n else np.zeros(0, np.int32)
            track = layout.track_of_key[keys]
            dur = column(p.ev, "dur", np.int64)
            name = smap[column(p.ev, "name", np.int32)] if n else np.zeros(0, np.int32)
            cat = smap[column(p.ev, "cat", np.int32)] if n else np.zeros(0, np.int32)
            alen = column(p.ev, "alen", np.int64)
            blob = joined(p.ev_args) if p.ev_args else b""
            index = np.full(n, -1, np.int64)
            kept = np.flatnonzero(ok)
            if kept.shape[0] < n:
                blob = select_args(blob, alen, ok)
            first = builder.add_events(
                track[kept],
                start[kept],
                dur[kept],
                name[kept],
                cat[kept],
                args_blob=blob,
                args_lengths=alen[kept],
            )
            index[kept] = first + np.arange(kept.shape[0])
            if kept.shape[0]:
                self.end_ps = max(self.end_ps, int((start[kept] + dur[kept]).max()))
            if step_ids and n:
                is_step = is_step_name[name] & ok & ~layout.device_key[keys]
                for i in np.flatnonzero(is_step).tolist():
                    steps.append(
                        {"name": ids.strings[name[i]], "start_ps": int(start[i]), "dur_ps": int(dur[i])}
                    )
            self.index.append(index)
            self.start.append(start)
            self.track.append(keys)
            # The builder holds its own copy now: free this part's columns before the next one.
            p.ev = {k: [] for k in p.ev}
            p.ev_args = []
        steps.sort(key=lambda s: (s["start_ps"], s["name"]))
        self.profiler_steps = steps


def add_counters(builder: TraceBuilder, ids: Parts, clock: Clock, layout: Layout, damage: Damage) -> None:
    """Counter values into the builder: one series per counter track, in file order within it."""
    for p, kmap in zip(ids.parts, ids.kmaps):
        if not p.ctr["us"]:
            continue
        ts, ok = clock.to_ps(column(p.ctr, "us", np.int64), column(p.ctr, "frac", np.int32))
        track = layout.track_of_key[kmap[column(p.ctr, "track", np.int32)]]
        value = column(p.ctr, "value", np.float64)
        dropped = int((~ok).sum())
        if dropped:
            damage.skipped["counter values more than 25 days away from the rest of the trace"] += dropped
        track, ts, value = track[ok], ts[ok], value[ok]
        order = np.argsort(track, kind="stable")
        track, ts, value = track[order], ts[order], value[order]
        bounds = np.flatnonzero(np.diff(track)) + 1
        for lo, hi in zip(
            np.concatenate(([0], bounds)).tolist(), np.concatenate((bounds, [track.shape[0]])).tolist()
        ):
            if hi > lo:
                builder.add_counter(int(track[lo]), ts[lo:hi], value[lo:hi])
