"""Single-flight ingest of profile files into the cache, in a child process.

Parsing a large profile takes seconds and a lot of transient memory, so the server never does it
itself: `IngestManager.ensure` starts a child process once per source version (forked by a
pre-imported template, `children`) and answers with a `Progress` until the cache entry
exists; after that it only memory-maps the entry. One ingest per fingerprint per server process
(a table under a lock), and one across processes (the child holds an exclusive lock file in the
cache directory while it works; a second child waits for it and then finds the entry). Progress (bytes done / total) travels through a small
JSON file the child rewrites; a failure comes back as a readable message naming the file.

Hygiene: every child watches its parent and exits within `children.ORPHAN_CHECK_S` when
the server is gone (it polls its parent pid: `PR_SET_PDEATHSIG` would fire when the *thread* that
started the child ends, and requests start children from short-lived threads). A child holds a
lock on its log file and the per-fingerprint lock while it works, so a starting manager removes
the temporary entries, progress, error and log files that no live child holds. A cache directory
that cannot be written (or is full) is replaced by a temporary one (one per user and cache
directory, which the next run reuses: `store.fallback_cache_root`), with a warning the trace view
shows; the job spec travels on a pipe, never on a command line (it may name storage options). An
`IngestRunner` (`fanout.DaskRunner`: a Dask cluster) can run the jobs instead of local children;
it reports when a job is done and what failed, and checks what it got back.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import errno
import hashlib
import json
import logging
import os
import posixpath
import queue
import shutil
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NoReturn, Protocol

import fsspec
import numpy as np

from profscope.engine import query, store
from profscope.engine.ingest import memory as ingest_memory
from profscope.engine.ingest.children import (
    CHILD_LOG_PREFIX,
    Child,
    ChildPool,
    hold_log_lock,
    watch_parent_from_env,
)
from profscope.engine.ingest.locks import exclusive as _exclusive
from profscope.engine.ingest.locks import held as _held
from profscope.engine.lod import index as lod
from profscope.errors import UnreadableProfile, describe_error
from profscope.formats import registry
from profscope.logdir import RefusedFile
from profscope.model.columns import Trace
from profscope.model.spill import budget as spill_budget

# Reader of each trace format id (from the format registry): "module:function", imported lazily.
READERS: dict[str, str] = {f.id: f.reader for f in registry.FORMATS if f.kind == "trace"}
# Keys of `fs.info()` that identify one version of an object, most specific first.
_VERSION_KEYS = ("ETag", "etag", "generation", "md5Hash", "mtime", "LastModified", "last_modified", "updated")
PROGRESS_DIR = "progress"
LOCK_DIR = "locks"
# A failed file is not read again before this many seconds (unless it changes, which gives it a new
# fingerprint): requests for it answer with the error instead of starting a child each time, and a
# cause outside the file (permissions, a full disk) gets retried eventually.
RETRY_FAILED_AFTER_S = 60.0
# Seconds between two progress file updates by the child.
PROGRESS_EVERY_S = 0.1
# Bytes of the head and of the tail of a source hashed into its fingerprint.
SAMPLE_BYTES = 64 << 10
# Exit code of a child when the cache directory cannot be written.
EXIT_CACHE_UNUSABLE = 73
_CACHE_FULL = (errno.ENOSPC, errno.EDQUOT)
NEARLY_FULL_BYTES = 64 << 20
_log = logging.getLogger(__name__)


def file_name(url: str) -> str:
    """How an ingest message names a file: its base name (where the server keeps the logdir is no
    business of the browser; the route adds the logdir-relative path the user knows)."""
    return posixpath.basename(url.rstrip("/")) or url


class IngestError(Exception):
    """Ingest of a source failed; the message names the file and says what is wrong.
    `cache_problem`: the cache directory, not the file, was at fault (not writable, full)."""

    def __init__(self, url: str, message: str, unreadable: bool = False, cache_problem: bool = False) -> None:
        super().__init__(message)
        self.url = url
        self.unreadable = unreadable
        self.cache_problem = cache_problem


class CacheUnusable(Exception):
    """The cache directory cannot take an entry; the message says which and why (for the child)."""


@dataclasses.dataclass(frozen=True)
class SourceFile:
    """A profile file to ingest: where it is, which reader, and the filesystem to open it with."""

    url: str
    format: str
    fs: fsspec.AbstractFileSystem = dataclasses.field(default_factory=lambda: fsspec.filesystem("file"))
    # Size and mtime/etag when the caller already knows them (discovery does): saves a stat.
    size: int | None = None
    version: str | None = None


@dataclasses.dataclass(frozen=True)
class Progress:
    """Ingest still running: how far the child got (bytes of the source read)."""

    url: str
    bytes_done: int
    bytes_total: int
    stage: str = "queued"


@dataclasses.dataclass
class OpenedTrace:
    """A cache entry opened for serving: memory-mapped columns, index and search helper."""

    key: str
    path: str
    trace: Trace
    index: lod.LodIndex
    searcher: query.Searcher
    entry_id: str  # this write of the entry (`store.discarded` once it is found damaged)


def open_entry(path: str, key: str) -> OpenedTrace:
    """Memory-map a complete entry written by `run_ingest`."""
    trace, arrays, extra_meta, entry_id = store.open_with_extra(path)
    index = lod.LodIndex.load(arrays, extra_meta["lod"])
    return OpenedTrace(key, path, trace, index, query.Searcher(trace), entry_id)


def source_key(source: SourceFile) -> tuple[str, int]:
    """(fingerprint, size) of the current version of `source`; OSError when it cannot be stat'ed
    or read. The fingerprint covers a hash of the file's first and last `SAMPLE_BYTES` (two ranged
    reads), so a replacement of the same size that kept the mtime is noticed."""
    if source.size is not None and source.version is not None:
        size, tag = source.size, source.version
    else:
        info = source.fs.info(source.url)
        size = int(info.get("size") or 0)
        tag = next((str(info[k]) for k in _VERSION_KEYS if info.get(k) is not None), "")
    return store.fingerprint(
        source.fs.unstrip_protocol(source.url), size, tag, content_tag(source, size)
    ), size


def content_tag(source: SourceFile, size: int) -> str:
    """Hash of the head and tail of `source` (the whole file when it is small)."""
    digest = hashlib.blake2b(digest_size=16)
    if size <= 2 * SAMPLE_BYTES:
        digest.update(source.fs.cat_file(source.url))
    else:
        digest.update(source.fs.cat_file(source.url, start=0, end=SAMPLE_BYTES))
        digest.update(source.fs.cat_file(source.url, start=size - SAMPLE_BYTES, end=size))
    return digest.hexdigest()


def describe_cache_problem(root: str, error: OSError) -> str:
    """'cache directory X is full (N MB free)' or '… is not writable (reason)'. A write that
    failed without an errno (numpy reports a short write that way) counts as full when less than
    `NEARLY_FULL_BYTES` are left."""
    try:
        free: int | None = shutil.disk_usage(root).free
    except OSError:
        free = None
    nearly_full = error.errno is None and free is not None and free < NEARLY_FULL_BYTES
    if error.errno in _CACHE_FULL or nearly_full:
        shown = "free space unknown" if free is None else f"{free / 1e6:.1f} MB free"
        return f"cache directory {root} is full ({shown})"
    return f"cache directory {root} is not writable ({error.strerror or error})"


def cache_problem(root: str) -> str | None:
    """Why entries cannot be written under `root` (tried for real: a small file is written and
    removed), or None when they can."""
    probe = os.path.join(root, store.TMP_DIR, f"probe-{uuid.uuid4().hex}")
    try:
        os.makedirs(os.path.dirname(probe), exist_ok=True)
        with open(probe, "wb") as f:
            f.write(b"\0" * 4096)
            f.flush()
            os.fsync(f.fileno())
        os.remove(probe)
    except OSError as e:
        return describe_cache_problem(root, e)
    return None


class IngestRunner(Protocol):
    """Runs ingest jobs somewhere other than local child processes (`fanout.DaskRunner`: on a Dask
    cluster whose workers write into the same cache directory). `submit` returns at once; the
    runner calls `stage(text)` while the job waits or its entry is checked (what progress says
    before the job writes its own), and `finish(returncode, error)` once at the end: `run_ingest`'s
    exit code and, for a failure, its `.error` record when none is left in the cache."""

    def submit(
        self,
        spec: Mapping[str, Any],
        stage: Callable[[str], None],
        finish: Callable[[int, dict[str, Any] | None], None],
    ) -> None: ...


@dataclasses.dataclass
class _Job:
    url: str
    size: int
    cache_root: str
    process: Child | None = None
    log_path: str | None = None
    returncode: int | None = None
    done: threading.Event = dataclasses.field(default_factory=threading.Event)
    # What progress says while the job has written none (a runner's "queued on the cluster").
    stage: str = "queued"
    # A runner's failure record (message, unreadable, cache) when the cache holds no `.error` file.
    error: dict[str, Any] | None = None


class IngestManager:
    """Turns sources into opened cache entries; never parses in the calling process.

    `in_process` runs ingest in a thread instead (for filesystems a child cannot see, such as
    `memory://`); `readers` overrides the format → reader table; `prewarm` keeps a template
    process started ahead of need (imports done), which takes the interpreter start off the first
    view; `runner` runs the ingests elsewhere (a Dask cluster), and then no local child is started. `memory_mb`
    bounds all local ingest processes together (`memory`: children at once, each's budget).
    """

    def __init__(
        self,
        cache_root: str | None = None,
        max_open: int = 16,
        readers: Mapping[str, str] | None = None,
        in_process: bool = False,
        prewarm: bool = True,
        runner: IngestRunner | None = None,
        memory_mb: int | None = None,
    ) -> None:
        self.memory_mb = int(memory_mb or ingest_memory.DEFAULT_TOTAL_MB)
        self.child_memory_bytes = ingest_memory.child_budget(self.memory_mb)
        self._slots = ingest_memory.Slots(ingest_memory.local_slots(self.memory_mb))
        self.requested_cache_root = os.path.abspath(cache_root or store.default_cache_root())
        self.cache_root = self.requested_cache_root
        # Set when entries go to a temporary directory instead: what the trace view warns about.
        self.cache_warning: str | None = None
        # Set when no cache directory at all can be written: every ingest fails with it.
        self.cache_error: str | None = None
        self.readers = dict(READERS if readers is None else readers)
        self.in_process = in_process
        self.runner = runner
        self._lock = threading.Lock()
        self._jobs: dict[str, _Job] = {}
        self._failed: dict[str, tuple[IngestError, float]] = {}
        self._opened: collections.OrderedDict[str, OpenedTrace] = collections.OrderedDict()
        self._max_open = max_open
        self._written: set[str] = set()
        self._to_verify: queue.SimpleQueue[tuple[str, str]] = queue.SimpleQueue()
        self._verifier: threading.Thread | None = None
        problem = cache_problem(self.cache_root)
        if problem is not None:
            self._fall_back(problem)
        else:
            remove_stale_files(self.cache_root)
        self.prewarm = prewarm and not in_process and runner is None
        self._children = ChildPool(lambda: child_log_path(self.cache_root), self._slots.size)
        if self.prewarm and self.cache_error is None:
            self._children.prewarm()

    def ensure(self, source: SourceFile, wait_s: float = 0.0) -> OpenedTrace | Progress:
        """The opened entry for `source`, or the progress of its (single) ingest, started if needed.

        With `wait_s`, a running ingest is awaited that long first, so small files are answered
        in one request instead of after a round of polling. Raises IngestError when the ingest
        of this version of the file failed.
        """
        if source.format not in self.readers:
            raise IngestError(
                source.url, f"{file_name(source.url)}: no trace reader for format {source.format!r}"
            )
        try:
            key, size = source_key(source)
        except OSError as e:  # a file swapped for a FIFO or a link out: refused, unreadable (422)
            raise IngestError(
                source.url,
                f"cannot stat {file_name(source.url)}: {describe_error(e)}",
                unreadable=isinstance(e, RefusedFile),
            ) from e
        got = self._ensure(source, key, size)
        if isinstance(got, _Job):
            if wait_s > 0 and got.done.wait(wait_s):
                got = self._ensure(source, key, size)
            if isinstance(got, _Job):
                return self._progress(key, got)
        return got

    def _ensure(self, source: SourceFile, key: str, size: int) -> OpenedTrace | _Job:
        with self._lock:
            opened = self._opened.get(key)
            if opened is not None:
                self._opened.move_to_end(key)
                return opened
            failed = self._failed.get(key)
            if failed is not None:
                if time.monotonic() - failed[1] < RETRY_FAILED_AFTER_S:
                    raise failed[0]
                del self._failed[key]
            job = self._jobs.get(key)
            if job is not None and not job.done.is_set():
                return job
            if job is not None:
                del self._jobs[key]
                failure = self._failure(key, job)
                if failure is not None and failure.cache_problem and self.cache_warning is None:
                    self._fall_back(str(failure))  # and build it again in the temporary cache
                elif failure is not None:
                    self._failed[key] = (failure, time.monotonic())
                    raise failure
                else:
                    self._written.add(key)
            if self.cache_error is not None:
                raise IngestError(
                    source.url,
                    f"cannot cache {file_name(source.url)}: {self.cache_error}",
                    cache_problem=True,
                )
            path = self._lookup(key)
            if path is not None:
                try:
                    opened = self._remember(key, open_entry(path, key))
                except (store.CacheError, KeyError, ValueError, OSError) as e:
                    _log.warning("profscope: cache entry %s is damaged (%s); it is built again", path, e)
                    store.discard(path)
                else:
                    if key not in self._written and store.mapped_arrays(path):
                        self._verify_later(key, path)
                    return opened
            job = _Job(source.url, size, self.cache_root)
            self._start(source, key, size, job)
            self._jobs[key] = job
            return job

    def wait(self, source: SourceFile, timeout_s: float = 600.0) -> OpenedTrace:
        """Block until `source` is ingested (benchmarks, CLI and tests)."""
        deadline = time.monotonic() + timeout_s
        while True:
            got = self.ensure(source, wait_s=min(1.0, max(0.0, deadline - time.monotonic())))
            if isinstance(got, OpenedTrace):
                return got
            if time.monotonic() > deadline:
                raise TimeoutError(f"ingest of {source.url} still running after {timeout_s} s")

    # -- internals -------------------------------------------------------------------------------
    def _lookup(self, key: str) -> str | None:
        """The entry for `key`: in the cache written to, else (after a fallback) in the requested
        one, which may still hold entries it can serve read-only."""
        found = store.lookup(self.cache_root, key)
        if found is None and self.cache_root != self.requested_cache_root:
            found = store.lookup(self.requested_cache_root, key)
        return found

    def _fall_back(self, problem: str) -> None:
        """Write entries to a temporary directory from now on (the one the last run used, if any)."""
        try:
            fallback = store.fallback_cache_root(self.requested_cache_root)
        except OSError as e:
            self.cache_error = f"{problem}, and no temporary directory could be made ({e.strerror or e})"
            _log.error("profscope: %s", self.cache_error)
            return
        fallback_problem = cache_problem(fallback)
        if fallback_problem is not None:
            self.cache_error = f"{problem}, and {fallback_problem}"
            _log.error("profscope: %s", self.cache_error)
            return
        remove_stale_files(fallback)
        self.cache_root = fallback
        self.cache_warning = (
            f"{problem}: traces are cached in {fallback} instead, a temporary directory the next "
            "run reuses (set --profscope_cache_dir to a writable directory with room)"
        )
        _log.warning("profscope: %s", self.cache_warning)

    def _verify_later(self, key: str, path: str) -> None:
        """Check every block of an entry's mapped arrays in a background thread; a damaged entry
        is discarded and forgotten, so the next request builds it again."""
        self._to_verify.put((key, path))
        if self._verifier is None:
            self._verifier = threading.Thread(target=self._verify_loop, name="profscope-verify", daemon=True)
            self._verifier.start()

    def _verify_loop(self) -> None:
        while True:
            key, path = self._to_verify.get()
            problems = store.verify(path)
            if problems:
                _log.warning(
                    "profscope: cache entry %s is damaged (%s); it is built again", path, problems[0]
                )
                with self._lock:
                    if key in self._opened and self._opened[key].path == path:
                        del self._opened[key]
                store.discard(path)

    def _remember(self, key: str, opened: OpenedTrace) -> OpenedTrace:
        self._opened[key] = opened
        while len(self._opened) > self._max_open:
            self._opened.popitem(last=False)
        return opened

    def _spec(self, source: SourceFile, key: str, size: int) -> dict[str, Any]:
        return {
            "url": source.url,
            "format": source.format,
            "reader": self.readers[source.format],
            "fs": source.fs.to_json(),
            "cache_root": self.cache_root,
            "key": key,
            "size": size,
            "memory_bytes": self.child_memory_bytes,
        }

    def _start(self, source: SourceFile, key: str, size: int, job: _Job) -> None:
        spec = self._spec(source, key, size)
        if self.in_process or "memory" in _protocols(source.fs):

            def work() -> None:
                job.returncode = run_ingest(spec, source.fs)
                job.done.set()

            threading.Thread(target=work, name=f"profscope-ingest-{key[:8]}", daemon=True).start()
            return
        if self.runner is not None:

            def stage(text: str) -> None:
                job.stage = text

            def finish(returncode: int, error: dict[str, Any] | None) -> None:
                job.returncode, job.error = returncode, error
                job.done.set()

            self.runner.submit(spec, stage, finish)
            return
        if self._slots.take(lambda: self._launch_queued(spec, job)):
            self._launch(spec, job, queued=False)
        # else queued: started when a running child ends (`memory.Slots`)

    def _launch_queued(self, spec: dict[str, Any], job: _Job) -> None:
        with self._lock:
            self._launch(spec, job, queued=True)

    def _launch(self, spec: dict[str, Any], job: _Job, queued: bool) -> None:
        """Run the job in a child forked by a waiting template (`children`) and reap it;
        its slot is released when it ends. A child that cannot start fails the job (at once:
        IngestError)."""
        log_path = ""
        with contextlib.suppress(OSError):
            log_path = child_log_path(self.cache_root)
        process = self._children.start(spec, log_path) if log_path else None
        if process is None:
            with contextlib.suppress(OSError):
                if log_path:
                    os.remove(log_path)
            message = f"could not start an ingest process for {file_name(job.url)}"
            if not queued:
                self._slots.release()
                raise IngestError(job.url, message)
            job.returncode, job.error = 1, {"message": message}
            job.done.set()
            self._slots.release()
            return
        job.process, job.log_path = process, log_path

        def reap() -> None:
            assert job.process is not None
            job.returncode = job.process.wait()
            job.done.set()
            self._slots.release()
            if self.prewarm:
                self._children.prewarm()

        threading.Thread(target=reap, name=f"profscope-ingest-wait-{spec['key'][:8]}", daemon=True).start()

    def close(self) -> None:
        """Let the waiting templates go (each exits when its stdin closes) and remove their logs."""
        self._children.close()

    def _progress(self, key: str, job: _Job) -> Progress:
        state = _read_json(_progress_file(job.cache_root, key, ".json", create=False)) or {}
        return Progress(
            url=job.url,
            bytes_done=int(state.get("bytes_done", 0)),
            bytes_total=int(state.get("bytes_total", job.size)),
            stage=str(state.get("stage", job.stage)),
        )

    def _failure(self, key: str, job: _Job) -> IngestError | None:
        log_tail = ""
        if job.log_path:
            with contextlib.suppress(OSError), open(job.log_path, "rb") as f:
                log_tail = f.read()[-2000:].decode("utf-8", errors="replace").strip()
            with contextlib.suppress(OSError):
                os.remove(job.log_path)
        if job.returncode == 0:
            if store.lookup(job.cache_root, key) is not None:
                return None
            return IngestError(
                job.url, f"ingest of {file_name(job.url)} finished without writing a cache entry"
            )
        error_path = _progress_file(job.cache_root, key, ".error", create=False)
        error = _read_json(error_path) or job.error
        with contextlib.suppress(OSError):
            os.remove(error_path)  # remembered in `_failed` from now on
        if error:
            return IngestError(
                job.url, str(error.get("message")), bool(error.get("unreadable")), bool(error.get("cache"))
            )
        if job.returncode == EXIT_CACHE_UNUSABLE:
            problem = (
                cache_problem(job.cache_root) or f"cache directory {job.cache_root} could not be written"
            )
            return IngestError(job.url, problem, cache_problem=True)
        detail = f": {log_tail.splitlines()[-1]}" if log_tail else ""
        return IngestError(
            job.url, f"ingest of {file_name(job.url)} stopped (exit code {job.returncode}){detail}"
        )


def remove_stale_files(cache_root: str) -> int:
    """Remove what dead ingests left in the cache directory: temporary entries, progress, error
    and log files that no live child holds (by its fingerprint lock or its log lock). Returns how
    many were removed."""
    removed = store.clean_tmp(cache_root, in_use=lambda prefix: _held(_lock_file(cache_root, prefix)))
    folder = os.path.join(cache_root, PROGRESS_DIR)
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(folder, name)
        if name.startswith((CHILD_LOG_PREFIX, "spare-")):
            in_use = _held(path)
        else:
            in_use = _held(_lock_file(cache_root, name.split(".", 1)[0]))
        if not in_use:
            with contextlib.suppress(OSError):
                os.remove(path)
                removed += 1
    return removed


def _lock_file(cache_root: str, key: str) -> str:
    return os.path.join(cache_root, LOCK_DIR, key[:32] + ".lock")


def _protocols(fs: fsspec.AbstractFileSystem) -> tuple[str, ...]:
    proto = fs.protocol
    return (proto,) if isinstance(proto, str) else tuple(proto)


def _progress_file(cache_root: str, key: str, suffix: str, create: bool = True) -> str:
    folder = os.path.join(cache_root, PROGRESS_DIR)
    if create:
        os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, key[:32] + suffix)


def _read_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as f:
            value = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _write_json(path: str, value: dict[str, Any]) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f)
    os.replace(tmp, path)


class _ProgressWriter:
    """The `progress(bytes_done, bytes_total)` callback readers get, rate-limited to a file.

    The file is written by a thread of its own: replacing a file can wait on a busy disk (ext4
    flushes a file renamed over another before the rename returns), and the reading must not wait
    for it. That showed only with the disk contended: 5.3 s of a 42 s XPlane ingest beside the test
    suite, 37 s of a 201 s 10 GB Chrome ingest; on a quiet machine it made no difference
    (benchmarks/README.md). The reader only hands over the latest value; one not yet written when
    the next comes is replaced by it.
    """

    def __init__(self, path: str, total: int) -> None:
        self.path = path
        self.total = total
        self._last = time.monotonic()
        self._pending: dict[str, Any] | None = None
        self._closed = False
        self._wake = threading.Condition()
        self._write(self._value(0, total, "reading"))
        self._thread = threading.Thread(target=self._run, name="profscope-progress", daemon=True)
        self._thread.start()

    def __call__(self, done: int, total: int) -> None:
        self.update(done, total, "reading")

    def update(self, done: int, total: int, stage: str, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last >= PROGRESS_EVERY_S:
            self._last = now
            with self._wake:
                self._pending = self._value(done, total, stage)
                self._wake.notify()

    def close(self) -> None:
        """Stop the writing thread; a value not yet written is dropped (the ingest is over)."""
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join()

    def _value(self, done: int, total: int, stage: str) -> dict[str, Any]:
        return {"bytes_done": int(done), "bytes_total": int(total or self.total), "stage": stage}

    def _write(self, value: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):  # progress is best effort; a full cache shows at the write
            _write_json(self.path, value)

    def _run(self) -> None:
        while True:
            with self._wake:
                while self._pending is None and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                value, self._pending = self._pending, None
            self._write(value)


def build_extras(trace: Trace) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Derived arrays stored with the columns: the level-of-detail index."""
    index = lod.build(trace)
    return index.arrays(), {"lod": index.meta()}


def run_ingest(
    spec: Mapping[str, Any], fs: fsspec.AbstractFileSystem | None = None, exits_after: bool = False
) -> int:
    """Read, index and store one source (the body of the child process). Exit code: 0 ok,
    2 unreadable file, `EXIT_CACHE_UNUSABLE` the cache directory cannot take the entry, 1 other
    failure; failures leave `<key>.error` with the message (where the cache still takes a file).
    `exits_after`: the process ends next (`end_process`), so its heap is not trimmed first."""
    root, key, url = spec["cache_root"], spec["key"], spec["url"]
    try:
        with _cache_writes(root):
            error_path = _progress_file(root, key, ".error")
            progress_path = _progress_file(root, key, ".json")
            os.makedirs(os.path.join(root, LOCK_DIR), exist_ok=True)
        with _exclusive(_lock_file(root, key)), ingest_memory.heap_for_ingest(trim=not exits_after):
            if store.lookup(root, key) is not None:
                return 0
            with contextlib.suppress(OSError):
                os.remove(error_path)
            try:
                return _ingest_locked(spec, fs, progress_path)
            except Exception as e:  # every failure must reach the server as a message
                unreadable = isinstance(e, UnreadableProfile)
                unusable = isinstance(e, CacheUnusable)
                if isinstance(e, UnreadableProfile):  # named by base name: never the server's path
                    message = f"cannot read profile {file_name(url)}: {e.reason}"
                elif unusable:
                    message = str(e)
                else:
                    message = f"ingest of {file_name(url)} failed: {type(e).__name__}: {describe_error(e)}"
                print(message, file=sys.stderr)
                with contextlib.suppress(OSError):
                    _write_json(
                        error_path,
                        {
                            "message": message,
                            "unreadable": unreadable,
                            "cache": unusable,
                            "traceback": traceback.format_exc(),
                        },
                    )
                return 2 if unreadable else EXIT_CACHE_UNUSABLE if unusable else 1
            finally:
                with contextlib.suppress(OSError):
                    os.remove(progress_path)
    except CacheUnusable as e:
        print(e, file=sys.stderr)
        return EXIT_CACHE_UNUSABLE


def _ingest_locked(spec: Mapping[str, Any], fs: fsspec.AbstractFileSystem | None, progress_path: str) -> int:
    progress = _ProgressWriter(progress_path, int(spec.get("size", 0)))
    try:
        return _ingest_with(spec, fs, progress)
    finally:
        progress.close()


def _ingest_with(
    spec: Mapping[str, Any], fs: fsspec.AbstractFileSystem | None, progress: _ProgressWriter
) -> int:
    if fs is None:
        fs = fsspec.AbstractFileSystem.from_json(spec["fs"])
    root = spec["cache_root"]
    with _cache_writes(root):
        entry = ingest_memory.TempEntry(spec)
    with entry:  # removed, with all that was spilled into it, whatever happens
        try:
            with entry.reading():
                trace = registry.import_reader(spec["reader"])(spec["url"], fs, progress=progress)
            # A name that is not UTF-8 is kept escaped (`\xff`), as discovery shows it: JSON takes no
            # lone surrogate, which is how Python holds such bytes.
            shown = trace.source.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            trace = trace if shown == trace.source else dataclasses.replace(trace, source=shown)
        except spill_budget.SpillWriteError as e:
            raise CacheUnusable(describe_cache_problem(root, e.error)) from e
        progress.update(progress.total, progress.total, "indexing", force=True)
        with _cache_writes(root):
            store.write(
                trace, root, spec["key"], compute_extra=entry.extras(trace, build_extras), tmp=entry.path
            )
    return 0


@contextlib.contextmanager
def _cache_writes(root: str) -> Iterator[None]:
    """Turn an OSError of writing into the cache into `CacheUnusable` naming the directory."""
    try:
        yield
    except CacheUnusable:
        raise
    except OSError as e:
        raise CacheUnusable(describe_cache_problem(root, e)) from e


def child_log_path(cache_root: str) -> str:
    """A new log file for an ingest process in `progress/` (the process holds a lock on it)."""
    return _progress_file(cache_root, f"{CHILD_LOG_PREFIX}{uuid.uuid4().hex}", ".log")


def import_readers() -> None:
    """Import every reader (a waiting process does it before its job arrives)."""
    for reader in READERS.values():
        with contextlib.suppress(ImportError):
            registry.import_reader(reader)


def main(argv: list[str]) -> int:
    ingest_memory.one_malloc_arena()  # before any thread
    watch_parent_from_env()
    hold_log_lock()
    if len(argv) != 1:
        print("usage: python -m profscope.engine.ingest.manager '<json spec>'", file=sys.stderr)
        return 64
    return run_ingest(json.loads(argv[0]), exits_after=True)


def end_process(code: int) -> NoReturn:
    """End the ingest child: the server waits for it to exit, so skip freeing the trace's arrays
    (50-80 ms after a 3 M-event ingest) and the rest of interpreter teardown; files and locks are
    closed by then, only stdio is left to flush."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    end_process(main(sys.argv[1:]))
