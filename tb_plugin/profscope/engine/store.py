"""The on-disk cache of ingested traces: one directory of memory-mappable `.npy` columns per source.

A source file is parsed once; the server then only opens the columns, so reopening is fast and its
memory stays small whatever the trace size. Entries are keyed by a fingerprint of the source
(canonical URL, size, mtime or etag, a hash of its head and tail) and the cache format version,
written into a temporary directory and renamed into place: a directory under `v<FORMAT_VERSION>/`
is complete or absent, never half-written. `meta.json` is written last and checked on open.

Integrity: `meta.json` carries its own CRC-32 and, for every array file, its size, dtype, shape,
header length and one CRC-32 per block of `CHECK_BLOCK_BYTES`. Opening an entry checks the sizes, the
`.npy` headers and the invariants between columns and metadata before anything is mapped. Arrays
up to `COPY_MAX_BYTES` are read whole, checked whole and served from a sealed anonymous memory file
(Linux `memfd`: nobody can shrink it, so no truncation of the cache can fault on them); larger
ones, and the args blob (search streams it from its file), are memory-mapped from the cache file
after their first and last blocks are checked, and `verify` checks all their blocks later (the
engine does it in the background). What remains: a large array truncated in place *while it is
mapped* can still end the server with SIGBUS, and a same-size change to one is noticed only when
`verify` runs; any damage found makes the entry unusable (`CacheError`), and it is rebuilt.
`strings.json` and `tracks.json` have their CRC-32 in `meta.json` and are checked whole when the
entry is opened. `Trace.attachments` (an XPlane's HloProtos) are files `attachments/<name>` with one size and CRC-32
each in `meta.json`: none is read at open, each is read whole and checked when looked up, and
`verify` checks them all.

Each write gives the entry a new `entry_id` (in `meta.json`): what the server serves from an entry
(tiles and their ETags, analyses) is keyed by it, so nothing of a damaged entry is mistaken for its
rebuild under the same fingerprint. `discard` remembers the ids opened from the entry it removes,
and `discarded` tells the server to drop everything it keeps of them.
"""

from __future__ import annotations

import builtins
import concurrent.futures
import contextlib
import hashlib
import io
import json
import math
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import msgspec
import numpy as np

from profscope.engine import resident
from profscope.model.column_types import COLUMN_DTYPES
from profscope.model.columns import Section, Trace, Track
from profscope.model.spill import budget as spill_budget

# Bump whenever the layout of an entry or the meaning of a column changes: old entries are ignored.
FORMAT_VERSION = 8

META_FILE = "meta.json"
STRINGS_FILE = "strings.json"
# The tracks are a file of their own, written a batch of `TRACK_BATCH` at a time: a million threads
# make 100 MB of JSON, which inside `meta.json` cost 300 MB at once to encode and seal with its CRC.
TRACKS_FILE = "tracks.json"
TRACK_BATCH = 1 << 16
EXTRA_DIR = "lod"
# `Trace.attachments` are stored as the files `attachments/<name>`, checksummed like the arrays.
ATTACHMENTS_DIR = "attachments"
TMP_DIR = "tmp"
# Arrays are checksummed per block of this many bytes of their `.npy` file (each record keeps its
# own block size): opening checks two blocks of a mapped array, so smaller blocks open faster.
CHECK_BLOCK_BYTES = 1 << 20
# Arrays up to this size are copied into memory when an entry is opened (and checked whole).
COPY_MAX_BYTES = 4 << 20
# Arrays read through their file by search (`query._windows`): always mapped from the cache file.
STREAMED = frozenset({"args_blob"})
# `meta.json` ends with this member: the CRC-32 of the document without it.
_META_CRC = b',"meta_crc":"%08x"}'
_META_CRC_LEN = len(_META_CRC % 0)
# The `entry_id`s this process opened, by entry directory, and those of entries it discarded.
_ids_lock = threading.Lock()
_opened_ids: dict[str, set[str]] = {}
_discarded_ids: set[str] = set()

# Trace columns stored one `.npy` each, with the dtype every reader of the cache can rely on.
COLUMNS: dict[str, type] = COLUMN_DTYPES


class CacheError(Exception):
    """A cache entry exists but cannot be used (unreadable, foreign, or from another format version)."""


def default_cache_root() -> str:
    """`$XDG_CACHE_HOME/profscope`, else `~/.cache/profscope`: a per-user place outside any logdir."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "profscope")


def fallback_cache_root(requested: str) -> str:
    """The temporary cache used while `requested` cannot be written: one per user and requested
    directory, reused by the next server run (its entries are served again, and runs do not pile
    up copies of the same traces). A directory of that name that is not the user's own, private
    one (another user made it first) is not trusted: a fresh one is made instead."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    digest = hashlib.sha256(os.path.abspath(requested).encode("utf-8")).hexdigest()[:16]
    path = os.path.join(tempfile.gettempdir(), f"profscope-cache-{uid}-{digest}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    found = os.lstat(path)
    if stat.S_ISDIR(found.st_mode) and found.st_uid == uid and not found.st_mode & 0o077:
        return path
    return tempfile.mkdtemp(prefix="profscope-cache-")


def fingerprint(url: str, size: int, version_tag: str, content_tag: str = "") -> str:
    """Hex key of one version of one source: a changed size, mtime, etag or content tag (a hash
    of the file's head and tail, which notices a same-size replacement that kept the mtime) gives
    a new entry."""
    payload = json.dumps([url, int(size), str(version_tag), str(content_tag), FORMAT_VERSION])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def entry_dir(cache_root: str, key: str) -> str:
    """Directory that holds (or will hold) the entry for fingerprint `key`."""
    return os.path.join(cache_root, f"v{FORMAT_VERSION}", key[:32])


def read_meta(path: str) -> dict[str, Any] | None:
    """The entry's metadata when `path` is a complete entry of this format version, else None."""
    try:
        with builtins.open(os.path.join(path, META_FILE), "rb") as f:
            raw = f.read()
        body = raw[:-_META_CRC_LEN] + b"}"
        if raw[-_META_CRC_LEN:] != _META_CRC % zlib.crc32(body):
            return None  # edited or damaged: the entry cannot be trusted
        meta = msgspec.json.decode(raw)
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
    tmp: str | None = None,
) -> str:
    """Store `trace` (and derived arrays such as the level-of-detail index) as the entry for `key`.

    Everything goes to `<cache_root>/tmp/<uuid>/` first (or `tmp`, a directory `tmp_name` named
    there, where a spilled builder already wrote its columns) and is renamed into place in one
    step, so a crash or a concurrent writer never exposes a partial entry. Arrays that are already
    their entry file (a memory map of `<tmp>/<name>.npy`) stay where they are and get their CRCs
    from a streamed read; the rest is written. `compute_extra`, when given, makes (`extra`,
    `extra_meta`) in this thread while another writes the columns: file writes release the GIL, so
    indexing and writing overlap. Returns the entry path.
    """
    final = entry_dir(cache_root, key)
    if lookup(cache_root, key) is not None:
        return final
    if tmp is None:
        tmp = os.path.join(cache_root, TMP_DIR, tmp_name(key))
        os.makedirs(os.path.join(tmp, EXTRA_DIR))
    else:
        os.makedirs(os.path.join(tmp, EXTRA_DIR), exist_ok=True)
    arrays: dict[str, dict[str, Any]] = {}

    def write_columns() -> None:
        for name, dtype in COLUMNS.items():
            arrays[name] = _store(os.path.join(tmp, name + ".npy"), getattr(trace, name), np.dtype(dtype))

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
            arrays[f"{EXTRA_DIR}/{name}"] = _store(os.path.join(tmp, EXTRA_DIR, name + ".npy"), array, None)
        strings = msgspec.json.encode(trace.strings)
        _write_file(os.path.join(tmp, STRINGS_FILE), strings)
        tracks_crc = _write_tracks(os.path.join(tmp, TRACKS_FILE), trace.tracks)
        attachments = _save_attachments(tmp, trace.attachments)
        spill_budget.remove_scratch(tmp)  # after the attachments: a spilled builder keeps them in scratch
        meta = {
            "format_version": FORMAT_VERSION,
            "fingerprint": key,
            "source": trace.source,
            "format": trace.format,
            "clock_origin_ns": trace.clock_origin_ns,
            "sections": trace.sections,
            "warnings": list(trace.warnings),
            "skipped": dict(trace.skipped),
            "metadata": trace.metadata,
            "num_events": trace.num_events,
            "extra": sorted((extra or {}).keys()),
            "extra_meta": dict(extra_meta or {}),
            "written_at": time.time(),
            "entry_id": uuid.uuid4().hex,
            "arrays": arrays,
            "strings_crc": zlib.crc32(strings),
            "tracks_crc": tracks_crc,
            "attachments": attachments,
        }
        body = msgspec.json.encode(meta, enc_hook=str)
        _write_file(os.path.join(tmp, META_FILE), body[:-1] + _META_CRC % zlib.crc32(body))
        os.makedirs(os.path.dirname(final), exist_ok=True)
        _move_into_place(tmp, final, key)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def open(path: str) -> Trace:
    """The entry at `path` as a `Trace` (columns are read-only `np.memmap`s, see the module doc);
    CacheError when it is incomplete, damaged or inconsistent."""
    return _open_trace(path, _complete_meta(path))


def open_with_extra(path: str) -> tuple[Trace, dict[str, np.ndarray], dict[str, Any], str]:
    """The entry's trace, its derived arrays and their metadata, as `write` got them as `extra`
    and `extra_meta`, and its `entry_id`: what the server needs to serve an entry, one meta read.
    The id is remembered with `path`, so that a `discard` of the entry marks it `discarded`."""
    meta = _complete_meta(path)
    extra = {name: _load(path, f"{EXTRA_DIR}/{name}", meta) for name in meta["extra"]}
    trace = _open_trace(path, meta)
    # Entries written before ids were stored: their meta CRC differs between two writes too.
    entry_id = str(meta.get("entry_id") or meta["meta_crc"])
    with _ids_lock:
        _opened_ids.setdefault(os.path.normpath(path), set()).add(entry_id)
    return trace, extra, dict(meta["extra_meta"]), entry_id


def discarded(entry_id: str) -> bool:
    """Whether the entry opened as `entry_id` was found damaged and discarded in this process:
    nothing read from it may be served again (its rebuild has another id)."""
    return entry_id in _discarded_ids


def load_array(path: str, name: str) -> np.ndarray:
    """One stored column (`name`) or derived array (`lod/<name>`), checked and opened read-only."""
    return _load(path, name if name in COLUMNS else f"{EXTRA_DIR}/{name}", _complete_meta(path))


def verify(path: str) -> list[str]:
    """Check every block of every array of the entry at `path` against its CRCs, reading through
    the files (nothing is mapped, so a truncation ends a read, not the process). Returns what is
    wrong, one line per damaged array; empty when the entry is intact."""
    meta = read_meta(path)
    if meta is None:
        return [f"{META_FILE} is missing, damaged or from another format version"]
    damaged = []
    for rel, record in meta["arrays"].items():
        try:
            with builtins.open(_array_file(path, rel), "rb", buffering=0) as f:
                _check_blocks(f, rel, record, range(len(record["crc"])))
        except (OSError, CacheError, KeyError, TypeError, ValueError) as e:
            damaged.append(f"array {rel}: {e}" if not isinstance(e, CacheError) else str(e))
    for name in meta.get("attachments", {}):
        try:
            read_attachment(path, name, meta)
        except CacheError as e:
            damaged.append(str(e))
    return damaged


def mapped_arrays(path: str) -> list[str]:
    """The arrays of an entry that `open` maps from their files (so only `verify` checks whole)."""
    meta = read_meta(path) or {}
    return [rel for rel, record in meta.get("arrays", {}).items() if not _copied(rel, record)]


def read_attachment(path: str, name: str, meta: Mapping[str, Any] | None = None) -> bytes:
    """One attachment of the entry at `path` (`Trace.attachments[name]` as written), read whole
    and checked against its size and CRC-32; CacheError when it is missing or damaged."""
    record = (meta or _complete_meta(path)).get("attachments", {}).get(name)
    if record is None:
        raise CacheError(f"{path}: no record of attachment {name} in {META_FILE}")
    try:
        with builtins.open(os.path.join(path, ATTACHMENTS_DIR, *name.split("/")), "rb") as f:
            data = f.read()
    except OSError as e:
        raise CacheError(f"{path}: attachment {name} unreadable ({e})") from e
    if len(data) != int(record["bytes"]) or zlib.crc32(data) != int(record["crc"]):
        raise CacheError(f"{path}: attachment {name} damaged (size or checksum mismatch)")
    return data


class EntryAttachments(Mapping[str, bytes]):
    """`Trace.attachments` of an opened entry: names from its metadata, each file read (and
    checked) when looked up, so opening an entry reads none of them."""

    def __init__(self, path: str, records: Mapping[str, Any]) -> None:
        self._path = path
        self._meta = {"attachments": dict(records)}

    def __getitem__(self, name: str) -> bytes:
        if name not in self._meta["attachments"]:
            raise KeyError(name)
        return read_attachment(self._path, name, self._meta)

    def __iter__(self) -> Iterator[str]:
        return iter(self._meta["attachments"])

    def __len__(self) -> int:
        return len(self._meta["attachments"])


def _complete_meta(path: str) -> dict[str, Any]:
    meta = read_meta(path)
    if meta is None:
        raise CacheError(f"{path} is not a complete profscope cache entry of format v{FORMAT_VERSION}")
    return meta


def _open_trace(path: str, meta: dict[str, Any]) -> Trace:
    columns = {name: _load(path, name, meta) for name in COLUMNS}
    strings = _read_checked(path, STRINGS_FILE, meta.get("strings_crc"), list[str])
    tracks = _read_checked(path, TRACKS_FILE, meta.get("tracks_crc"), list[Track])
    try:
        trace = Trace(
            source=meta["source"],
            format=meta["format"],
            clock_origin_ns=meta["clock_origin_ns"],
            sections=[Section(**s) for s in meta["sections"]],
            tracks=tracks,
            strings=strings,
            warnings=list(meta["warnings"]),
            skipped=dict(meta["skipped"]),
            metadata=dict(meta["metadata"]),
            attachments=EntryAttachments(path, meta["attachments"]),
            **columns,
        )
    except (KeyError, TypeError) as e:
        raise CacheError(f"{path}: metadata does not describe a trace ({e})") from e
    _check_consistency(path, meta, trace)
    return trace


def _check_consistency(path: str, meta: dict[str, Any], trace: Trace) -> None:
    """Invariants between columns and metadata that cost O(1): lengths, ends, id ranges of the
    sorted track column. A violated one means the entry was edited or damaged."""
    n = int(meta.get("num_events", -1))
    problems = []
    if any(getattr(trace, name).shape != (n,) for name in COLUMNS if name.startswith("ev_")):
        problems.append(f"event columns do not all hold num_events={n} values")
    records = trace.args_event.shape[0]
    if trace.args_off.shape != (records + 1,) or (int(trace.args_off[-1]) != trace.args_blob.shape[0]):
        problems.append("args offsets do not match the args records and blob")
    frags = trace.args_frag_off.shape[0]
    if frags and (frags < 2 or int(trace.args_frag_off[-1]) != trace.args_frag_blob.shape[0]):
        problems.append("args fragment offsets do not match the fragment blob")
    if not trace.flow_src.shape == trace.flow_dst.shape == trace.flow_name.shape:
        problems.append("flow columns differ in length")
    if not trace.ctr_track.shape == trace.ctr_time_ps.shape == trace.ctr_value.shape:
        problems.append("counter columns differ in length")
    if n > 0 and not 0 <= int(trace.ev_track[0]) <= int(trace.ev_track[-1]) < len(trace.tracks):
        problems.append(f"events refer to tracks beyond the {len(trace.tracks)} in the metadata")
    if any(not 0 <= t.section < len(trace.sections) for t in trace.tracks):
        problems.append("tracks refer to sections beyond those in the metadata")
    if not trace.strings:
        problems.append("the string table is empty")
    if problems:
        raise CacheError(f"{path}: inconsistent entry: {'; '.join(problems)}")


def _array_file(path: str, rel: str) -> str:
    return os.path.join(path, *rel.split("/")) + ".npy"


def _copied(rel: str, record: Mapping[str, Any]) -> bool:
    return rel not in STREAMED and int(record["bytes"]) <= COPY_MAX_BYTES


def _load(path: str, rel: str, meta: Mapping[str, Any]) -> np.ndarray:
    """Open one array after checking it against its record in `meta` (see the module doc)."""
    record = meta.get("arrays", {}).get(rel)
    if record is None:
        raise CacheError(f"{path}: no record of array {rel} in {META_FILE}")
    file = _array_file(path, rel)
    try:
        dtype, shape, offset, size = (
            np.dtype(record["dtype"]),
            tuple(int(d) for d in record["shape"]),
            int(record["offset"]),
            int(record["bytes"]),
        )
        on_disk = os.stat(file).st_size
        if on_disk != size:
            raise CacheError(
                f"{path}: array {rel} is {on_disk} bytes, {size} expected (truncated or rewritten)"
            )
        if offset + dtype.itemsize * math.prod(shape) != size:
            raise CacheError(f"{path}: array {rel}: its record is inconsistent")
        with builtins.open(file, "rb", buffering=0) as f:
            if _copied(rel, record):
                data = f.read()
                _check_crcs(data, 0, rel, record, range(len(record["crc"])))
                _check_header(io.BytesIO(data), rel, dtype, shape, offset)
                sealed = _sealed_map(data, dtype, shape, offset)
                if sealed is not None:
                    return sealed
                return np.frombuffer(data, dtype, math.prod(shape), offset).reshape(shape)
            last = max(0, len(record["crc"]) - 1)
            _check_blocks(f, rel, record, sorted({0, last}))
            f.seek(0)
            _check_header(f, rel, dtype, shape, offset)
        return resident.register(np.memmap(file, dtype=dtype, mode="r", offset=offset, shape=shape))
    except CacheError:
        raise
    except (OSError, ValueError, TypeError, KeyError, EOFError) as e:
        raise CacheError(f"{path}: array {rel} unreadable ({e})") from e


# The header numpy writes for a plain array: {'descr': '<i8', 'fortran_order': False, 'shape': (3,), }
_NPY_HEADER = re.compile(
    rb"\{'descr': '([<>|=][a-zA-Z]\d*)', 'fortran_order': (True|False), 'shape': \(([\d, ]*)\), \} *\n"
)
_HEADER_LOCK = threading.Lock()


def read_npy_header(f: Any) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, fortran order, dtype) of the `.npy` file at `f`'s start, leaving `f` at the data.

    numpy parses the header with `ast.literal_eval`, and CPython 3.11 fails at random ("AST
    constructor recursion depth mismatch", a SystemError) when two threads build ASTs at once, as
    the server's request and validation threads do: the plain headers we write are matched by a
    pattern instead, anything else goes to numpy under a lock."""
    version = np.lib.format.read_magic(f)
    start = f.tell()
    length = int.from_bytes(f.read(2 if version == (1, 0) else 4), "little")
    match = _NPY_HEADER.fullmatch(f.read(length))
    if match is None:
        f.seek(start)
        read = (
            np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        )
        with _HEADER_LOCK:
            shape, fortran, dtype = read(f)
        return tuple(shape), bool(fortran), dtype
    dims = tuple(int(d) for d in match.group(3).split(b",") if d.strip())
    return dims, match.group(2) == b"True", np.dtype(match.group(1).decode())


def _check_header(f: Any, rel: str, dtype: np.dtype, shape: tuple[int, ...], offset: int) -> None:
    got_shape, fortran, got_dtype = read_npy_header(f)
    if got_shape != shape or fortran or got_dtype != dtype or f.tell() != offset:
        raise CacheError(f"array {rel}: its .npy header does not match {META_FILE}")


def _check_blocks(f: Any, rel: str, record: Mapping[str, Any], blocks: Iterable[int]) -> None:
    """Read the given blocks of an array file and compare their CRCs with the record."""
    size = int(record["block"])
    buffer = bytearray(size)
    for block in blocks:
        f.seek(block * size)
        got = f.readinto(buffer)
        _check_crcs(memoryview(buffer)[:got], block, rel, record, [block])


def _check_crcs(data: Any, first: int, rel: str, record: Mapping[str, Any], blocks: Iterable[int]) -> None:
    """`data` holds the file from block `first` on; compare the CRCs of `blocks` of it."""
    expected, size = record["crc"], int(record["block"])
    view = memoryview(data)
    for block in blocks:
        lo = (block - first) * size
        piece = view[lo : lo + size]
        if not 0 <= block < len(expected) or zlib.crc32(piece) != expected[block]:
            raise CacheError(f"array {rel}: block {block} is damaged (checksum mismatch)")


def _sealed_map(data: bytes, dtype: np.dtype, shape: tuple[int, ...], offset: int) -> np.ndarray | None:
    """`data` (a whole `.npy` file) in an anonymous memory file sealed against any change of size
    or content, mapped read-only as the array: a copy nobody can truncate under the server. None
    where the OS has no sealable memory files (the caller keeps a plain copy)."""
    create = getattr(os, "memfd_create", None)
    seals = getattr(os, "MFD_ALLOW_SEALING", None)
    if create is None or seals is None or sys.platform != "linux":
        return None
    import fcntl

    fd = create("profscope-array", os.MFD_CLOEXEC | seals)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        fcntl.fcntl(
            fd,
            fcntl.F_ADD_SEALS,
            fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SEAL,
        )
        with builtins.open(fd, "rb", closefd=False) as f:
            return np.memmap(f, dtype=dtype, mode="r", offset=offset, shape=shape)
    finally:
        os.close(fd)


def discard(path: str) -> None:
    """Remove an entry that cannot be used, so that it is built again (readers that still have it
    memory-mapped keep their pages, so every id opened from it is marked `discarded` first)."""
    with _ids_lock:
        _discarded_ids.update(_opened_ids.pop(os.path.normpath(path), ()))
    doomed = f"{path}.discarded-{uuid.uuid4().hex}"
    try:
        os.replace(path, doomed)
    except OSError:
        return
    shutil.rmtree(doomed, ignore_errors=True)


def tmp_name(key: str) -> str:
    """A writer's temporary directory under `tmp/`: named by the key's prefix, so that a cleanup
    can tell whose it is (`clean_tmp(in_use=...)`)."""
    return f"{key[:32]}.{uuid.uuid4().hex}"


def clean_tmp(
    cache_root: str, older_than_s: float = 3600.0, in_use: Callable[[str], bool] | None = None
) -> int:
    """Remove temporary directories left by crashed writers: those older than `older_than_s`, and
    with `in_use` (key prefix → whether a live ingest holds it) every one nobody holds. Returns how
    many were removed."""
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
            abandoned = in_use is not None and not in_use(name.split(".", 1)[0])
            if abandoned or os.stat(path).st_mtime < cutoff:
                shutil.rmtree(path)
                removed += 1
        except OSError:
            continue
    return removed


def _store(file: str, array: np.ndarray, dtype: np.dtype | None) -> dict[str, Any]:
    """The record of `file` holding `array`: kept when `array` already maps that very `.npy` file,
    else written (`_save`; beside the old file and renamed, so a map of it keeps its pages)."""
    mapped = isinstance(array, np.memmap) and array.filename is not None and os.path.exists(file)
    if mapped and os.path.samefile(array.filename, file):
        record = _file_record(file)
        if (
            (dtype is None or array.dtype == dtype)
            and record is not None
            and record["shape"] == list(array.shape)
        ):
            return record
        record = _save(file + ".rewritten", np.asarray(array, dtype=dtype))
        os.replace(file + ".rewritten", file)
        return record
    return _save(file, np.asarray(array) if dtype is None else np.asarray(array, dtype=dtype))


def _file_record(file: str) -> dict[str, Any] | None:
    """The `_save` record of an existing 1-d `.npy` file, its CRCs from a streamed read; None when
    it is not a plain 1-d array file of the size its header says."""
    with builtins.open(file, "rb", buffering=0) as f:
        try:
            shape, fortran, dtype = read_npy_header(f)
        except ValueError:
            return None
        offset = f.tell()
        size = os.fstat(f.fileno()).st_size
        if fortran or len(shape) != 1 or offset + dtype.itemsize * shape[0] != size:
            return None
        f.seek(0)
        view = memoryview(bytearray(CHECK_BLOCK_BYTES))
        crcs = []
        while True:
            filled = 0
            while filled < CHECK_BLOCK_BYTES:
                got = f.readinto(view[filled:])
                if not got:
                    break
                filled += got
            if not filled:
                break
            crcs.append(zlib.crc32(view[:filled]))
    return {
        "bytes": size,
        "offset": offset,
        "dtype": dtype.str,
        "shape": list(shape),
        "block": CHECK_BLOCK_BYTES,
        "crc": crcs or [0],
    }


def _save(file: str, array: np.ndarray) -> dict[str, Any]:
    """Write `array` as a `.npy` file; returns its record for `meta.json` (size, layout, CRCs).

    The CRCs are computed over the header and the array's own memory, not read back from disk."""
    array = np.ascontiguousarray(array)
    with builtins.open(file, "wb") as f:
        np.lib.format.write_array(f, array, allow_pickle=False)
        size = f.tell()
    offset = size - array.nbytes
    with builtins.open(file, "rb") as f:
        header = f.read(offset)
    return {
        "bytes": size,
        "offset": offset,
        "dtype": array.dtype.str,
        "shape": list(array.shape),
        "block": CHECK_BLOCK_BYTES,
        "crc": _block_crcs((header, array.reshape(-1).view(np.uint8))),
    }


def _block_crcs(pieces: Iterable[Any]) -> list[int]:
    """CRC-32 of each CHECK_BLOCK_BYTES block of the concatenation of `pieces` (buffers)."""
    crcs: list[int] = []
    crc, filled = 0, 0
    for piece in pieces:
        view = memoryview(piece)
        while view:
            take = min(len(view), CHECK_BLOCK_BYTES - filled)
            crc = zlib.crc32(view[:take], crc)
            filled += take
            view = view[take:]
            if filled == CHECK_BLOCK_BYTES:
                crcs.append(crc)
                crc, filled = 0, 0
    if filled or not crcs:
        crcs.append(crc)
    return crcs


def _save_attachments(tmp: str, attachments: Mapping[str, bytes]) -> dict[str, dict[str, int]]:
    """Write each attachment as `attachments/<name>`; returns their records (size, CRC-32)."""
    records = {}
    for name, data in attachments.items():
        file = os.path.join(tmp, ATTACHMENTS_DIR, *name.split("/"))
        os.makedirs(os.path.dirname(file), exist_ok=True)
        _write_file(file, data)
        records[name] = {"bytes": len(data), "crc": zlib.crc32(data)}
    return records


def _write_file(file: str, data: bytes) -> None:
    with builtins.open(file, "wb") as f:
        f.write(data)


def _write_tracks(file: str, tracks: list[Track]) -> int:
    """Write `tracks` as one JSON array, `TRACK_BATCH` at a time (msgspec encodes the dataclasses
    themselves); returns the file's CRC-32."""
    crc = 0
    with builtins.open(file, "wb") as f:

        def put(data: bytes | memoryview) -> None:
            nonlocal crc
            f.write(data)
            crc = zlib.crc32(data, crc)

        put(b"[")
        for lo in range(0, len(tracks), TRACK_BATCH):
            if lo:
                put(b",")
            put(memoryview(msgspec.json.encode(tracks[lo : lo + TRACK_BATCH]))[1:-1])
        put(b"]")
    return crc


def _read_checked(path: str, name: str, crc: Any, kind: Any) -> Any:
    """The JSON file `name` of the entry, checked against `crc` and decoded as `kind`."""
    try:
        with builtins.open(os.path.join(path, name), "rb") as f:
            raw = f.read()
        if zlib.crc32(raw) != crc:
            raise CacheError(f"{path}: {name} damaged (checksum mismatch)")
        return msgspec.json.decode(raw, type=kind)
    except (OSError, msgspec.DecodeError) as e:
        raise CacheError(f"{path}: {name} unreadable ({e})") from e


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
