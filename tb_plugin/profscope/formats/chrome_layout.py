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
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from profscope import arrays
from profscope.columns import TraceBuilder
from profscope.formats import chrome_columns as cc
from profscope.formats.chrome_meta import ProcessInfo, is_int
from profscope.formats.chrome_parts import Parts

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
        if not p.device_pairs:
            continue
        local = np.fromiter(p.device_pairs, np.int64, len(p.device_pairs))
        pairs = arrays.unique(
            kmap[local >> 32].astype(np.int64) << 32 | smap[local & 0xFFFFFFFF].astype(np.int64)
        )
        for pair in pairs.tolist():
            cat_name = ids.strings[pair & 0xFFFFFFFF].lower()
            if cat_name in GPU_CATEGORIES:
                found.setdefault(pair >> 32, set()).add(cat_name)
    return found


def _async_keys(ids: Parts, num_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """Per track key: whether it is an async key holding one slice (one begin and one end, or one
    begin or instant alone), and the builder string id of the name of its first async event in
    file order (-1 for keys with none), which names its track.

    Read from the chunks, not kept while decoding: a dict entry per async id would cost more
    than its events when every request of a serving trace has an id of its own."""
    counts = np.zeros((3, num_keys), np.int64)
    first_name = np.full(num_keys, -1, np.int64)
    for c in ids.chunks("asy"):
        f = c.read("asy", "track", "phase", "name")
        key = c.kmap[f["track"]]
        for row, code in enumerate((cc.ASYNC_BEGIN, cc.ASYNC_END, cc.ASYNC_INSTANT)):
            counts[row] += np.bincount(key[f["phase"] == code], minlength=num_keys)
        present, first = np.unique(key, return_index=True)  # chunks come in file order
        new = first_name[present] < 0
        first_name[present[new]] = c.smap[f["name"][first[new]]]
    begins, ends, instants = counts
    single = ((begins == 1) & (ends <= 1) & (instants == 0)) | ((begins == 0) & (ends == 0) & (instants == 1))
    return single, first_name


class Layout:
    """Sections per pid and tracks per key, named and sorted the way Kineto users expect.

    `track_of_key` maps the reader's track keys to builder tracks; `device_key` marks the keys
    that are device streams (the device side of launch and annotation flows).
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
        single_slice, first_async_name = _async_keys(ids, len(keys))

        self.device_key = np.zeros(len(keys), bool)
        specs = []  # (key index, section, name, kind, sort index, builder track key)
        # Single-slice async keys by the track they share: one spec each, not one per key.
        shared: dict[tuple[int, str], list[int]] = {}
        for k, key in enumerate(keys):
            kind = key[0]
            if kind == cc.GLOBAL:
                section = builder.section("Global", "other", 2**31 - 1, key=("global",))
                specs.append((k, section, "global events", "other", 0, ("key", k)))
                continue
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
                specs.append((k, section, *spec, ("key", k)))
            elif kind == cc.PROCESS:
                specs.append((k, section, "process events", "other", -(2**31), ("key", k)))
            elif kind == cc.ASYNC:
                first = int(first_async_name[k])
                name = ids.strings[first] if first >= 0 else ""
                name = name or f"{key[2] or 'async'} {key[3].decode(errors='replace')}"
                if single_slice[k]:
                    shared.setdefault((section, name), []).append(k)
                else:
                    specs.append((k, section, name, "async", 2**30, ("key", k)))
            else:
                name, ident, series = key[2], key[3], key[4]
                label = name + (f" {ident.decode(errors='replace')}" if ident else "")
                if len(counter_series[key[1:4]]) > 1:
                    label += f" {series}"
                specs.append((k, section, label or "counter", "counter", 2**30 + 1, ("key", k)))
        for (section, name), members in shared.items():
            specs.append((members[0], section, name, "async", 2**30, ("async", section, name)))
        self.track_of_key = np.zeros(len(keys), np.int32)
        # Ties in (section, sort index, name) keep key order, a shared track at its first key's place.
        for k, section, name, tkind, sort, track_key in sorted(specs, key=lambda s: (s[1], s[4], s[2], s[0])):
            track = builder.track(section, name, tkind, sort, key=track_key)
            if track_key[0] == "async":
                self.track_of_key[shared[(section, name)]] = track
            else:
                self.track_of_key[k] = track

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
