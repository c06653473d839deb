"""Sections and tracks of a Chrome trace, named and sorted the way Kineto users expect.

A section per pid: a GPU (or TPU) when Kineto's process name or labels say so, or when device
work (kernels, copies, …) runs there, with the device name from `deviceProperties`; else a host
process. A track per track key: threads, and on devices streams labelled with what runs on them;
async tracks per (pid, category, id), except that ids which are one slice (a begin and its end, or
one begin or instant) share one track per process and name, on as many rows as they overlap: a
million request spans are a few rows, not a million tracks of one slice each (Perfetto merges
same-named async tracks likewise); ids with nested events keep a track each, so their nesting is
never drawn under another id's slice. One counter track per series. `M` metadata events give
names and sort indices; without them Kineto's own order holds (hosts by pid, then devices).

A thread's Python frames (Kineto's `python_function` complete events, recorded `with_stack`) get a
track of their own just below the thread's, "<thread> · Python": in the thread they would be 30
levels of stack over the ops, which no track choice could then hide. A thread of Python frames
alone is that track only, its name suffixed once (a trace we exported reads back the same).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from profscope.formats.chrome import columns as cc
from profscope.formats.chrome.meta import ProcessInfo, is_int
from profscope.formats.chrome.parts import Parts
from profscope.model import arrays
from profscope.model.columns import TraceBuilder

# Kineto categories of work that runs on a device (kernels, copies, device-side annotations).
GPU_CATEGORIES = frozenset(
    {
        "kernel",
        "gpu_memcpy",
        "gpu_memset",
        "gpu_user_annotation",
        "gpu_instant_event",
        "cuda_sync",
        "memcpy",
        "memset",
        "mtia_ccp_events",
    }
)
_STREAM_NAME = re.compile(r"^stream\s*(\d{1,9})(?!\d)", re.I)  # longer numbers name no stream
# Kineto's category of Python frames, and what names their track after its thread's.
PYTHON_CATEGORY = "python_function"
PYTHON_SUFFIX = " · Python"
# Spec group of a thread's Python track: past every other group, so it sorts just after its thread.
_PYTHON_GROUP = 2**31
_CATEGORY_LABELS = {
    "kernel": "kernels",
    "gpu_memcpy": "memcpy",
    "memcpy": "memcpy",
    "gpu_memset": "memset",
    "memset": "memset",
    "gpu_user_annotation": "annotations",
    "cuda_sync": "sync",
}


def _process_info(parts: list[cc.ColumnCollector]) -> ProcessInfo:
    """What the metadata events of all parts say, later parts winning."""
    info = ProcessInfo()
    for p in parts:
        info.update(p.info)
    return info


def _device_categories(ids: Parts) -> dict[int, set[str]]:
    """Device work categories (kernels, copies, …) seen on each track key."""
    found: dict[int, set[str]] = {}
    for p, smap, kmap in zip(ids.parts, ids.smaps, ids.kmaps):
        local = p.device_pairs
        cat = smap[local & 0xFFFFFFFF].astype(np.int64)
        names = {c: ids.strings[c].lower() for c in arrays.unique(cat).tolist()}  # a few categories
        device = [c for c, name in names.items() if name in GPU_CATEGORIES]
        on_device = np.isin(cat, np.array(device, np.int64))
        pairs = arrays.unique(kmap[local[on_device] >> 32].astype(np.int64) << 32 | cat[on_device])
        for pair in pairs.tolist():
            found.setdefault(pair >> 32, set()).add(names[pair & 0xFFFFFFFF])
    return found


def _python_keys(ids: Parts, python: int | None) -> tuple[set[int], set[int]]:
    """Track keys with Python frames among their complete events and instants, and those of them
    with nothing else there. With begin / end events in the trace no key counts as Python alone
    (those rows are not in `device_pairs`): the thread then keeps a track of its own."""
    if python is None:
        return set(), set()
    framed, other = [], []
    for p, smap, kmap in zip(ids.parts, ids.smaps, ids.kmaps):
        pairs = p.device_pairs
        is_python = smap[pairs & 0xFFFFFFFF] == python
        keys = kmap[pairs >> 32].astype(np.int64)
        framed.append(keys[is_python])
        other.append(keys[~is_python])
    with_frames = arrays.unique(np.concatenate(framed))
    if any(p.rows["be"] for p in ids.parts):
        return set(with_frames.tolist()), set()
    alone = with_frames[~np.isin(with_frames, np.concatenate(other))]
    return set(with_frames.tolist()), set(alone.tolist())


class Layout:
    """Sections per pid and tracks per key, named and sorted the way Kineto users expect.

    `track_of_key` maps the reader's track keys to builder tracks; `device_key` marks the keys
    that are device streams (the device side of launch and annotation flows); `tracks_of` sends
    a thread's Python frames to their own track.
    """

    def __init__(self, builder: TraceBuilder, ids: Parts, metadata: dict[str, Any]) -> None:
        keys = ids.release_keys()
        info = _process_info(ids.parts)
        device_cats = _device_categories(ids)
        devices = {
            int(dev["id"]): dev
            for dev in metadata.get("deviceProperties") or []
            if isinstance(dev, dict) and is_int(dev.get("id"))
        }
        pids_with_device_work = {keys[k][1] for k in device_cats if keys[k][0] == cc.THREAD}
        self.python_category = builder.string_ids.get(PYTHON_CATEGORY)
        with_frames, frames_alone = _python_keys(ids, self.python_category)

        sections: dict[Any, tuple[int, str, str]] = {}
        for key in keys:
            if key[0] != cc.GLOBAL and key[1] not in sections:
                pid = key[1]
                sections[pid] = self._describe_section(
                    pid,
                    info.names.get(pid),
                    info.labels.get(pid),
                    info.sort.get(pid),
                    pid in pids_with_device_work,
                    devices,
                )
        section_ids: dict[Any, int] = {}
        section_kind: dict[Any, str] = {}
        for pid, (sort, name, kind) in sorted(sections.items(), key=lambda kv: (kv[1][0], kv[1][1])):
            section_ids[pid] = builder.section(name, kind, sort, key=("pid", pid))
            section_kind[pid] = kind

        counter_series: dict[tuple[Any, ...], set[Any]] = {}
        for key in keys:
            if key[0] == cc.COUNTER_TRACK:
                counter_series.setdefault(key[1:4], set()).add(key[4])

        self.device_key = np.zeros(ids.num_keys, bool)
        self.track_of_key = np.zeros(ids.num_keys, np.int32)
        # The Python track of each key with Python frames (-1: none), its own track if it has no more.
        self.python_track_of_key = np.full(ids.num_keys if with_frames else 0, -1, np.int32)
        # (section, sort index, name, key index, kind, async group, -1 or _PYTHON_GROUP): in the order of the tracks
        # as tuples, which `sort` compares with no key made per track (the key index is unique).
        specs: list[tuple[int, int, str, int, str, int]] = []
        for k, key in enumerate(keys):
            kind = key[0]
            if kind == cc.GLOBAL:
                section = builder.section("Global", "other", 2**31 - 1, key=("global",))
                specs.append((section, 0, "global events", k, "other", -1))
                continue
            if kind == cc.ASYNC:
                continue  # a scope of async ids: the ids have the tracks (`_AsyncTracks`)
            pid = key[1]
            section = section_ids[pid]
            if kind == cc.THREAD:
                tid = key[2]
                spec = self._describe_track(
                    section_kind[pid],
                    tid,
                    info.thread_names.get((pid, tid)),
                    info.thread_sort.get((pid, tid)),
                    device_cats.get(k),
                )
                self.device_key[k] = section_kind[pid] in ("gpu", "tpu") and spec[1] == "stream"
                label, tkind, sort = spec
                if k not in frames_alone or tkind != "thread":
                    specs.append((section, sort, label, k, tkind, -1))
                if k in with_frames and tkind == "thread":
                    specs.append((section, sort, label, k, tkind, _PYTHON_GROUP))
            elif kind == cc.PROCESS:
                specs.append((section, -(2**31), "process events", k, "other", -1))
            else:
                name, ident, series = key[2], key[3], key[4]
                label = name + (f" {ident.decode(errors='replace')}" if ident else "")
                if len(counter_series[key[1:4]]) > 1:
                    label += f" {series}"
                specs.append((section, 2**30 + 1, label or "counter", k, "counter", -1))
        async_tracks = _AsyncTracks(builder, ids, keys, section_ids)
        specs.extend(async_tracks.specs)
        # Ties in (section, sort index, name) keep key order, a shared track at its first key's place.
        specs.sort()
        for section, sort, name, k, tkind, group in specs:
            if group == _PYTHON_GROUP:
                named = name if name.endswith(PYTHON_SUFFIX) and k in frames_alone else name + PYTHON_SUFFIX
                self.python_track_of_key[k] = track = builder.new_track(section, named, tkind, sort)
                if k in frames_alone:
                    self.track_of_key[k] = track
                continue
            track = builder.new_track(section, name, tkind, sort)
            if group >= 0:
                async_tracks.group_track[group] = track
            else:
                self.track_of_key[k] = track
        async_tracks.place(self.track_of_key)

    def tracks_of(self, keys: np.ndarray, categories: np.ndarray) -> np.ndarray:
        """The builder track of each event with these track keys and category string ids: its
        key's, or its thread's Python track for a Python frame."""
        tracks = self.track_of_key[keys]
        if self.python_track_of_key.shape[0]:
            frames = np.flatnonzero(categories == self.python_category)
            python = self.python_track_of_key[keys[frames]]
            tracks[frames[python >= 0]] = python[python >= 0]
        return tracks

    @staticmethod
    def _describe_section(
        pid: Any,
        name: str | None,
        label: str | None,
        sort: int | None,
        device_work: bool,
        devices: dict[int, dict[str, Any]],
    ) -> tuple[int, str, str]:
        """(sort index, name, kind) of the section for one pid."""
        text = f"{label or ''} {name or ''}"
        if re.search(r"\bTPU\b", text):
            kind = "tpu"
        elif (
            re.search(r"\bGPU\b", label or "") or re.search(r"^GPU\b|/device:GPU", name or "") or device_work
        ):
            kind = "gpu"
        elif isinstance(pid, int) or label == "CPU":
            kind = "cpu"
        else:
            kind = "other"
        if kind in ("gpu", "tpu"):
            title = (
                label
                if label and re.search(r"\b[GT]PU\b", label)
                else (name if name and "PU" in name else None)
            )
            title = title or f"{kind.upper()} {pid}"
            device = devices.get(pid) if isinstance(pid, int) else None
            if device and isinstance(device.get("name"), str):
                title += f" ({device['name']})"
        elif kind == "cpu":
            title = f"{name} (pid {pid})" if name else f"process {pid}"
        else:
            title = name or _label(pid, "(no pid)")
        if sort is None:
            # Kineto's own order: host processes by pid, then devices, then everything else.
            number = pid if isinstance(pid, int) and 0 <= pid < 2**24 else 2**24 - 1
            sort = {"cpu": number, "gpu": 2**24 + number, "tpu": 2**24 + number}.get(kind, 2**31 - 2)
        return _clamp(sort), title, kind

    @staticmethod
    def _describe_track(
        section_kind: str, tid: Any, name: str | None, sort: int | None, device_cats: set[str] | None
    ) -> tuple[str, str, int]:
        """(name, kind, sort index) of the track for one tid."""
        stream = None
        if isinstance(tid, str):
            m = _STREAM_NAME.match(tid)
            stream = int(m.group(1)) if m else None
        elif name and _STREAM_NAME.match(name):
            stream = int(_STREAM_NAME.match(name).group(1))
        elif device_cats and isinstance(tid, int):
            stream = tid
        if section_kind in ("gpu", "tpu") and (stream is not None or device_cats):
            label = f"stream {stream if stream is not None else tid}"
            if device_cats:
                shown = sorted({_CATEGORY_LABELS.get(c, c) for c in device_cats})
                label += f" ({', '.join(shown)})"
            elif name and name.strip() != label:
                label = name.strip()
            order = sort if sort is not None else (stream if stream is not None else 0)
            return label, "stream", _clamp(order)
        label = name or (f"thread {tid}" if isinstance(tid, int) else _label(tid, "(no tid)"))
        if sort is None:
            sort = tid if isinstance(tid, int) else 2**31 - 2
        return label, "thread", _clamp(sort)


def _label(value: Any, missing: str) -> str:
    """A pid / tid as text; missing or empty ones say so."""
    return missing if value is None or value == "" else str(value)


def _clamp(value: int) -> int:
    return max(-(2**31), min(int(value), 2**31 - 1))


# Single-slice async keys are put in their groups this many at a time (a sort's temporaries each).
GROUP_SLICE = 1 << 20


class _AsyncTracks:
    """The tracks of the async keys, with a Python object per track, not per id: an id holding one
    slice shares the track of its (section, name) with the others (a `group`), an id with more
    has a track of its own, named like its first event (else by category and id)."""

    def __init__(
        self, builder: TraceBuilder, ids: Parts, keys: list[tuple[Any, ...]], section_ids: dict[Any, int]
    ) -> None:
        found = ids.async_keys
        self.base = found.base
        scope_section = np.full(max(found.base, 1), -1, np.int64)
        for k, key in enumerate(keys):
            if key[0] == cc.ASYNC:
                scope_section[k] = section_ids[key[1]]
        # A name per key as a string id: its first event's, else "<category> <id>" (an id past the
        # builder's strings when no event has that text).
        name = found.first_name.copy()
        empty = builder.string_ids.get("")
        unnamed = np.flatnonzero((name < 0) | (name == (-1 if empty is None else empty)))
        strings = ids.strings
        extra: dict[str, int] = {}
        for a in unnamed.tolist():
            cat = keys[int(found.scope[a])][2]
            text = f"{cat or 'async'} {bytes(found.ids[a]).decode(errors='replace')}"
            known = builder.string_ids.get(text, len(strings))
            name[a] = known if known < len(strings) else extra.setdefault(text, len(strings) + len(extra))
        extra_texts = list(extra)

        def texts(i: int) -> str:
            return strings[i] if i < len(strings) else extra_texts[i - len(strings)]

        # As `Layout`'s specs: (section, sort index, name, key index, kind, group or -1).
        self.specs: list[tuple[int, int, str, int, str, int]] = []
        nested = np.flatnonzero(~found.single)
        for a, section in zip(nested.tolist(), scope_section[found.scope[nested]].tolist()):
            self.specs.append((section, 2**30, texts(int(name[a])), self.base + a, "async", -1))
        self.single = np.flatnonzero(found.single).astype(np.int32 if ids.num_keys < 2**31 else np.int64)
        # Each single-slice key's group, numbered by first appearance, a slice of keys at a time
        # (groups are few, keys may be tens of millions: no sort of them all at once).
        self.inverse = np.empty(self.single.shape[0], np.int32)
        groups: dict[int, int] = {}  # section << 32 | name → group number
        for lo in range(0, self.single.shape[0], GROUP_SLICE):
            keys_here = self.single[lo : lo + GROUP_SLICE]
            pair = scope_section[found.scope[keys_here]] << 32 | name[keys_here]
            values, first, inverse = np.unique(pair, return_index=True, return_inverse=True)
            number = np.empty(values.shape[0], np.int32)
            for j, (value, at) in enumerate(zip(values.tolist(), first.tolist())):
                if value not in groups:
                    groups[value] = len(groups)
                    key = self.base + int(keys_here[at])
                    self.specs.append(
                        (value >> 32, 2**30, texts(value & 0xFFFFFFFF), key, "async", groups[value])
                    )
                number[j] = groups[value]
            self.inverse[lo : lo + GROUP_SLICE] = number[inverse.reshape(-1)]
        self.group_track = np.zeros(len(groups), np.int32)
        found.release_layout_fields()

    def place(self, track_of_key: np.ndarray) -> None:
        """Each single-slice key's shared track into `track_of_key`."""
        track_of_key[self.base + self.single] = self.group_track[self.inverse]
