"""Single-flight ingest of profile files into the cache, in a child process.

Parsing a large profile takes seconds and a lot of transient memory, so the server never does it
itself: `IngestManager.ensure` starts `python -m profscope.trace.ingest` once per source version
and answers with a `Progress` until the cache entry exists; after that it only memory-maps the
entry. One ingest per fingerprint per server process (a table under a lock), and one across
processes (the child holds an exclusive lock file in the cache directory while it works; a second
child waits for it and then finds the entry). Progress (bytes done / total) travels through a small
JSON file the child rewrites; a failure comes back as a readable message naming the file.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn

import fsspec
import numpy as np

from profscope.columns import Trace
from profscope.errors import UnreadableProfile
from profscope.formats import registry
from profscope.trace import lod, query, store

# Reader of each trace format id (from the format registry): "module:function", imported lazily.
READERS: dict[str, str] = {f.id: f.reader for f in registry.FORMATS if f.kind == "trace"}
# Keys of `fs.info()` that identify one version of an object, most specific first.
_VERSION_KEYS = ("ETag", "etag", "generation", "md5Hash", "mtime", "LastModified", "last_modified", "updated")
PROGRESS_DIR = "progress"
LOCK_DIR = "locks"
# Child started ahead of need: reads its job spec from stdin.
SPARE_FLAG = "--job-from-stdin"
# A failed file is not read again before this many seconds (unless it changes, which gives it a new
# fingerprint): requests for it answer with the error instead of starting a child each time, and a
# cause outside the file (permissions, a full disk) gets retried eventually.
RETRY_FAILED_AFTER_S = 60.0
# Seconds between two progress file updates by the child.
PROGRESS_EVERY_S = 0.1


class IngestError(Exception):
    """Ingest of a source failed; the message names the file and says what is wrong."""

    def __init__(self, url: str, message: str, unreadable: bool = False) -> None:
        super().__init__(message)
        self.url = url
        self.unreadable = unreadable


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


def open_entry(path: str, key: str) -> OpenedTrace:
    """Memory-map a complete entry written by `run_ingest`."""
    trace, arrays, extra_meta = store.open_with_extra(path)
    index = lod.LodIndex.load(arrays, extra_meta["lod"])
    return OpenedTrace(key, path, trace, index, query.Searcher(trace))


def source_key(source: SourceFile) -> tuple[str, int]:
    """(fingerprint, size) of the current version of `source`; OSError when it cannot be stat'ed."""
    if source.size is not None and source.version is not None:
        size, tag = source.size, source.version
    else:
        info = source.fs.info(source.url)
        size = int(info.get("size") or 0)
        tag = next((str(info[k]) for k in _VERSION_KEYS if info.get(k) is not None), "")
    return store.fingerprint(source.fs.unstrip_protocol(source.url), size, tag), size


@dataclasses.dataclass
class _Job:
    url: str
    size: int
    process: subprocess.Popen[bytes] | None = None
    log_path: str | None = None
    returncode: int | None = None
    done: threading.Event = dataclasses.field(default_factory=threading.Event)


class IngestManager:
    """Turns sources into opened cache entries; never parses in the calling process.

    `in_process` runs ingest in a thread instead (for filesystems a child cannot see, such as
    `memory://`); `readers` overrides the format → reader table; `prewarm` keeps one child started
    ahead of need (imports done), which takes the interpreter start off the first view.
    """

    def __init__(
        self,
        cache_root: str | None = None,
        max_open: int = 16,
        readers: Mapping[str, str] | None = None,
        in_process: bool = False,
        prewarm: bool = True,
    ) -> None:
        self.cache_root = os.path.abspath(cache_root or store.default_cache_root())
        self.readers = dict(READERS if readers is None else readers)
        self.in_process = in_process
        self._lock = threading.Lock()
        self._jobs: dict[str, _Job] = {}
        self._failed: dict[str, tuple[IngestError, float]] = {}
        self._opened: collections.OrderedDict[str, OpenedTrace] = collections.OrderedDict()
        self._max_open = max_open
        os.makedirs(self.cache_root, exist_ok=True)
        store.clean_tmp(self.cache_root)
        self.prewarm = prewarm and not in_process
        self._spare: tuple[subprocess.Popen[bytes], str] | None = None
        if self.prewarm:
            self._start_spare()

    def ensure(self, source: SourceFile, wait_s: float = 0.0) -> OpenedTrace | Progress:
        """The opened entry for `source`, or the progress of its (single) ingest, started if needed.

        With `wait_s`, a running ingest is awaited that long first, so small files are answered
        in one request instead of after a round of polling. Raises IngestError when the ingest
        of this version of the file failed.
        """
        if source.format not in self.readers:
            raise IngestError(source.url, f"{source.url}: no trace reader for format {source.format!r}")
        try:
            key, size = source_key(source)
        except OSError as e:
            raise IngestError(source.url, f"cannot stat {source.url}: {e}") from e
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
                if failure is not None:
                    self._failed[key] = (failure, time.monotonic())
                    raise failure
            path = store.lookup(self.cache_root, key)
            if path is not None:
                try:
                    return self._remember(key, open_entry(path, key))
                except (store.CacheError, KeyError, ValueError, OSError):
                    store.discard(path)  # damaged or incomplete derived data: build it again
            job = _Job(source.url, size)
            self._jobs[key] = job
            self._start(source, key, size, job)
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
        }

    def _start(self, source: SourceFile, key: str, size: int, job: _Job) -> None:
        spec = self._spec(source, key, size)
        if self.in_process or "memory" in _protocols(source.fs):

            def work() -> None:
                job.returncode = run_ingest(spec, source.fs)
                job.done.set()

            threading.Thread(target=work, name=f"profscope-ingest-{key[:8]}", daemon=True).start()
            return
        spare, self._spare = self._spare, None
        process = None
        if spare is not None and spare[0].poll() is None and spare[0].stdin is not None:
            try:
                spare[0].stdin.write(json.dumps(spec).encode("utf-8") + b"\n")
                spare[0].stdin.close()
                process, job.log_path = spare
            except OSError:
                process = None
        if process is None:
            job.log_path = _progress_file(self.cache_root, key, ".log")
            process = self._spawn([json.dumps(spec)], job.log_path, subprocess.DEVNULL)
        job.process = process
        if self.prewarm:
            self._start_spare()

        def reap() -> None:
            assert job.process is not None
            job.returncode = job.process.wait()
            job.done.set()

        threading.Thread(target=reap, name=f"profscope-ingest-wait-{key[:8]}", daemon=True).start()

    def _spawn(self, args: list[str], log_path: str, stdin: Any) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        with open(log_path, "wb") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "profscope.trace.ingest", *args],
                stdin=stdin,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                close_fds=True,
            )

    def _start_spare(self) -> None:
        """Start a child that imports everything now and waits for its job on stdin, so the next
        ingest does not pay the interpreter start. It exits on EOF (when this process ends)."""
        log_path = _progress_file(self.cache_root, f"spare-{uuid.uuid4().hex}", ".log")
        try:
            self._spare = (self._spawn([SPARE_FLAG], log_path, subprocess.PIPE), log_path)
        except OSError:
            self._spare = None

    def close(self) -> None:
        """Let the spare child go (it exits when its stdin closes)."""
        spare, self._spare = self._spare, None
        if spare is not None and spare[0].stdin is not None:
            with contextlib.suppress(OSError):
                spare[0].stdin.close()
            spare[0].wait()

    def _progress(self, key: str, job: _Job) -> Progress:
        state = _read_json(_progress_file(self.cache_root, key, ".json")) or {}
        return Progress(
            url=job.url,
            bytes_done=int(state.get("bytes_done", 0)),
            bytes_total=int(state.get("bytes_total", job.size)),
            stage=str(state.get("stage", "queued")),
        )

    def _failure(self, key: str, job: _Job) -> IngestError | None:
        if job.returncode == 0:
            if job.log_path:
                with contextlib.suppress(OSError):
                    os.remove(job.log_path)
            if store.lookup(self.cache_root, key) is not None:
                return None
            return IngestError(job.url, f"ingest of {job.url} finished without writing a cache entry")
        error = _read_json(_progress_file(self.cache_root, key, ".error"))
        if error:
            return IngestError(job.url, str(error.get("message")), bool(error.get("unreadable")))
        tail = ""
        with contextlib.suppress(OSError, TypeError), open(job.log_path, "rb") as f:
            tail = f.read()[-2000:].decode("utf-8", errors="replace").strip()
        detail = f": {tail.splitlines()[-1]}" if tail else ""
        return IngestError(job.url, f"ingest of {job.url} stopped (exit code {job.returncode}){detail}")


def _protocols(fs: fsspec.AbstractFileSystem) -> tuple[str, ...]:
    proto = fs.protocol
    return (proto,) if isinstance(proto, str) else tuple(proto)


def _progress_file(cache_root: str, key: str, suffix: str) -> str:
    folder = os.path.join(cache_root, PROGRESS_DIR)
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
    """The `progress(bytes_done, bytes_total)` callback readers get, rate-limited to a file."""

    def __init__(self, path: str, total: int) -> None:
        self.path = path
        self.total = total
        self._last = 0.0
        self.update(0, total, "reading", force=True)

    def __call__(self, done: int, total: int) -> None:
        self.update(done, total, "reading")

    def update(self, done: int, total: int, stage: str, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last >= PROGRESS_EVERY_S:
            self._last = now
            _write_json(
                self.path, {"bytes_done": int(done), "bytes_total": int(total or self.total), "stage": stage}
            )


@contextlib.contextmanager
def _exclusive(path: str) -> Iterator[None]:
    """Hold an exclusive lock on `path` (blocks while another process holds it)."""
    with open(path, "a+b") as f:
        if sys.platform == "win32":
            import msvcrt

            while True:
                try:
                    msvcrt.locking(f.fileno(), msvcrt.LK_LOCK, 1)
                    break
                except OSError:
                    time.sleep(0.05)
            try:
                yield
            finally:
                f.seek(0)
                msvcrt.locking(f.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def build_extras(trace: Trace) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Derived arrays stored with the columns: the level-of-detail index."""
    index = lod.build(trace)
    return index.arrays(), {"lod": index.meta()}


def run_ingest(spec: Mapping[str, Any], fs: fsspec.AbstractFileSystem | None = None) -> int:
    """Read, index and store one source (the body of the child process). Exit code: 0 ok,
    2 unreadable file, 1 other failure; failures leave `<key>.error` with the message."""
    root, key, url = spec["cache_root"], spec["key"], spec["url"]
    error_path = _progress_file(root, key, ".error")
    progress_path = _progress_file(root, key, ".json")
    lock_dir = os.path.join(root, LOCK_DIR)
    os.makedirs(lock_dir, exist_ok=True)
    with _exclusive(os.path.join(lock_dir, key[:32] + ".lock")):
        if store.lookup(root, key) is not None:
            return 0
        with contextlib.suppress(OSError):
            os.remove(error_path)
        progress = _ProgressWriter(progress_path, int(spec.get("size", 0)))
        try:
            if fs is None:
                fs = fsspec.AbstractFileSystem.from_json(spec["fs"])
            trace = registry.import_reader(spec["reader"])(url, fs, progress=progress)
            progress.update(progress.total, progress.total, "indexing", force=True)
            store.write(trace, root, key, compute_extra=lambda: build_extras(trace))
            return 0
        except Exception as e:  # every failure must reach the server as a message
            unreadable = isinstance(e, UnreadableProfile)
            message = str(e) if unreadable else f"ingest of {url} failed: {type(e).__name__}: {e}"
            _write_json(
                error_path,
                {"message": message, "unreadable": unreadable, "traceback": traceback.format_exc()},
            )
            return 2 if unreadable else 1
        finally:
            with contextlib.suppress(OSError):
                os.remove(progress_path)


def main(argv: list[str]) -> int:
    if argv == [SPARE_FLAG]:
        for reader in READERS.values():  # imported while waiting, not after the job arrives
            with contextlib.suppress(ImportError):
                registry.import_reader(reader)
        line = sys.stdin.readline()
        return run_ingest(json.loads(line)) if line.strip() else 0
    if len(argv) != 1:
        print(f"usage: python -m profscope.trace.ingest '<json spec>' | {SPARE_FLAG}", file=sys.stderr)
        return 64
    return run_ingest(json.loads(argv[0]))


def end_process(code: int) -> NoReturn:
    """End the ingest child: the server waits for it to exit, so skip freeing the trace's arrays
    (50-80 ms after a 3 M-event ingest) and the rest of interpreter teardown; files and locks are
    closed by then, only stdio is left to flush."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    end_process(main(sys.argv[1:]))
