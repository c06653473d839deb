"""The on-disk cache of ingested traces: one directory of memory-mappable `.npy` columns per source.

A source file is parsed once; the server then only memory-maps the columns, so reopening is fast
and its memory stays small whatever the trace size. Entries are keyed by a fingerprint of the
source (canonical URL, size, mtime or etag) and the cache format version, written into a temporary
directory and renamed into place: a directory under `v<FORMAT_VERSION>/` is complete or absent,
never half-written. `meta.json` is written last and checked on open.
"""

from __future__ import annotations

import builtins
import concurrent.futures
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import numpy as np

from profscope.columns import Section, Trace, Track

# Bump whenever the layout of an entry or the meaning of a column changes: old entries are ignored.
FORMAT_VERSION = 3

META_FILE = "meta.json"
EXTRA_DIR = "lod"
TMP_DIR = "tmp"

# Trace columns stored one `.npy` each, with the dtype every reader of the cache can rely on.
COLUMNS: dict[str, type] = {
    "ev_start_ps": np.int64,
    "ev_dur_ps": np.int64,
    "ev_track": np.int32,
    "ev_depth": np.int32,
    "ev_name": np.int32,
    "ev_cat": np.int32,
    "ev_args": np.int64,
    "args_off": np.int64,
    "args_event": np.int64,
    "args_blob": np.uint8,
    "flow_src": np.int64,
    "flow_dst": np.int64,
    "flow_name": np.int32,
    "ctr_track": np.int32,
    "ctr_time_ps": np.int64,
    "ctr_value": np.float64,
}


class CacheError(Exception):
    """A cache entry exists but cannot be used (unreadable, foreign, or from another format version)."""


def default_cache_root() -> str:
    """`$XDG_CACHE_HOME/profscope`, else `~/.cache/profscope`: a per-user place outside any logdir."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "profscope")


def fingerprint(url: str, size: int, version_tag: str) -> str:
    """Hex key of one version of one source: a changed size, mtime or etag gives a new entry."""
    payload = json.dumps([url, int(size), str(version_tag), FORMAT_VERSION])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def entry_dir(cache_root: str, key: str) -> str:
    """Directory that holds (or will hold) the entry for fingerprint `key`."""
    return os.path.join(cache_root, f"v{FORMAT_VERSION}", key[:32])


def read_meta(path: str) -> dict[str, Any] | None:
    """The entry's metadata when `path` is a complete entry of this format version, else None."""
    try:
        with builtins.open(os.path.join(path, META_FILE), "rb") as f:
            meta = msgspec.json.decode(f.read())
    except (OSError, msgspec.DecodeError):
        return None
    if not isinstance(meta, dict) or meta.get("format_version") != FORMAT_VERSION:
        return None
    return meta


def lookup(cache_root: str, key: str) -> str | None:
    """Path of the valid entry for `key`, or None when it has to be (re)built."""
    path = entry_dir(cache_root, key)
    meta = read_meta(path)
    if meta is None or meta.get("fingerprint") != key:
        return None
    return path


def write(
    trace: Trace,
    cache_root: str,
    key: str,
    extra: Mapping[str, np.ndarray] | None = None,
    extra_meta: Mapping[str, Any] | None = None,
    compute_extra: Callable[[], tuple[Mapping[str, np.ndarray], Mapping[str, Any]]] | None = None,
) -> str:
    """Store `trace` (and derived arrays such as the level-of-detail index) as the entry for `key`.

    Everything goes to `<cache_root>/tmp/<uuid>/` first and is renamed into place in one step, so
    a crash or a concurrent writer never exposes a partial entry. `compute_extra`, when given, makes
    (`extra`, `extra_meta`) in this thread while another writes the columns: file writes release
    the GIL, so indexing and writing overlap. Returns the entry path.
    """
    final = entry_dir(cache_root, key)
    if lookup(cache_root, key) is not None:
        return final
    tmp = os.path.join(cache_root, TMP_DIR, uuid.uuid4().hex)
    os.makedirs(os.path.join(tmp, EXTRA_DIR))

    def write_columns() -> None:
        for name, dtype in COLUMNS.items():
            _save(os.path.join(tmp, name + ".npy"), np.asarray(getattr(trace, name), dtype=dtype))

    try:
        if compute_extra is None:
            write_columns()
        else:
            with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="profscope-store") as pool:
                columns = pool.submit(write_columns)
                try:
                    extra, extra_meta = compute_extra()
                finally:
                    columns.result()
        for name, array in (extra or {}).items():
            _save(os.path.join(tmp, EXTRA_DIR, name + ".npy"), np.asarray(array))
        _write_file(os.path.join(tmp, "strings.json"), msgspec.json.encode(trace.strings))
        meta = {
            "format_version": FORMAT_VERSION,
            "fingerprint": key,
            "source": trace.source,
            "format": trace.format,
            "clock_origin_ns": trace.clock_origin_ns,
            "sections": [_plain(s) for s in trace.sections],
            "tracks": [_plain(t) for t in trace.tracks],
            "warnings": list(trace.warnings),
            "skipped": dict(trace.skipped),
            "metadata": trace.metadata,
            "num_events": trace.num_events,
            "extra": sorted((extra or {}).keys()),
            "extra_meta": dict(extra_meta or {}),
            "written_at": time.time(),
        }
        _write_file(os.path.join(tmp, META_FILE), msgspec.json.encode(meta, enc_hook=str))
        os.makedirs(os.path.dirname(final), exist_ok=True)
        _move_into_place(tmp, final, key)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def open(path: str) -> Trace:
    """Memory-map the entry at `path` as a `Trace` (columns are read-only `np.memmap`s)."""
    return _open_trace(path, _complete_meta(path))


def open_with_extra(path: str) -> tuple[Trace, dict[str, np.ndarray], dict[str, Any]]:
    """The entry's trace, its derived arrays (memory-mapped) and their metadata, as `write` got
    them as `extra` and `extra_meta`: what the server needs to serve an entry, one meta read."""
    meta = _complete_meta(path)
    extra = {name: load_array(path, name) for name in meta["extra"]}
    return _open_trace(path, meta), extra, dict(meta["extra_meta"])


def _complete_meta(path: str) -> dict[str, Any]:
    meta = read_meta(path)
    if meta is None:
        raise CacheError(f"{path} is not a complete profscope cache entry of format v{FORMAT_VERSION}")
    return meta


def _open_trace(path: str, meta: dict[str, Any]) -> Trace:
    columns = {name: load_array(path, name) for name in COLUMNS}
    try:
        with builtins.open(os.path.join(path, "strings.json"), "rb") as f:
            strings = msgspec.json.decode(f.read(), type=list[str])
    except (OSError, msgspec.DecodeError) as e:
        raise CacheError(f"{path}: string table unreadable ({e})") from e
    return Trace(
        source=meta["source"],
        format=meta["format"],
        clock_origin_ns=meta["clock_origin_ns"],
        sections=[Section(**s) for s in meta["sections"]],
        tracks=[Track(**t) for t in meta["tracks"]],
        strings=strings,
        warnings=list(meta["warnings"]),
        skipped=dict(meta["skipped"]),
        metadata=dict(meta["metadata"]),
        **columns,
    )


def load_array(path: str, name: str) -> np.ndarray:
    """One stored column (`name`) or derived array (`lod/<name>`), memory-mapped read-only."""
    file = (
        os.path.join(path, name + ".npy") if name in COLUMNS else os.path.join(path, EXTRA_DIR, name + ".npy")
    )
    try:
        return np.load(file, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as e:
        raise CacheError(f"{path}: array {name} unreadable ({e})") from e


def discard(path: str) -> None:
    """Remove an entry that cannot be used, so that it is built again (readers that still have it
    memory-mapped keep their pages)."""
    doomed = f"{path}.discarded-{uuid.uuid4().hex}"
    try:
        os.replace(path, doomed)
    except OSError:
        return
    shutil.rmtree(doomed, ignore_errors=True)


def clean_tmp(cache_root: str, older_than_s: float = 3600.0) -> int:
    """Remove temporary directories left by crashed writers; returns how many were removed."""
    root = os.path.join(cache_root, TMP_DIR)
    removed = 0
    try:
        names = os.listdir(root)
    except OSError:
        return 0
    cutoff = time.time() - older_than_s
    for name in names:
        path = os.path.join(root, name)
        try:
            if os.stat(path).st_mtime < cutoff:
                shutil.rmtree(path)
                removed += 1
        except OSError:
            continue
    return removed


def _save(file: str, array: np.ndarray) -> None:
    with builtins.open(file, "wb") as f:
        np.lib.format.write_array(f, np.ascontiguousarray(array), allow_pickle=False)


def _write_file(file: str, data: bytes) -> None:
    with builtins.open(file, "wb") as f:
        f.write(data)


def _plain(obj: Any) -> dict[str, Any]:
    return {k: getattr(obj, k) for k in obj.__dataclass_fields__}


def _move_into_place(tmp: str, final: str, key: str) -> None:
    """Rename `tmp` to `final`; a valid entry already there (a concurrent writer won) is kept."""
    for _ in range(2):
        try:
            os.replace(tmp, final)
            return
        except OSError:
            meta = read_meta(final)
            if meta is not None and meta.get("fingerprint") == key:
                return
            if not os.path.exists(final):
                raise
            # An unusable directory sits where the entry goes (damaged by hand, or a 32-hex-digit
            # prefix clash): move it aside, then retry once.
            doomed = f"{tmp}.stale"
            os.replace(final, doomed)
            shutil.rmtree(doomed, ignore_errors=True)
    raise CacheError(f"could not move cache entry into {final}")
