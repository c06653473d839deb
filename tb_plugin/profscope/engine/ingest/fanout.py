"""Ingest on a Dask cluster: one task per source file, the workers writing into a shared cache.

Pod-scale sessions (hundreds of hosts, each file hundreds of MB) outgrow one machine, so their
ingest runs on an existing distributed engine instead of a scheduler of ours: each source file is
one `dask.distributed` task that runs `ingest.run_ingest` on a worker, which writes the entry into
the cache directory the TensorBoard server reads. That directory must be one POSIX path that every
worker and the server see alike (NFS, Lustre, GPFS, a cloud file share, or one machine's disk for a
`LocalCluster`): the server memory-maps the entries' columns and the workers lock each fingerprint
(`locks/`) while they write it; an object store (`s3://`) allows neither, and serving from a local
mirror of one is not done. The logdir may be any fsspec URL the workers can read.

Failures: a worker that dies mid-task (killed, out of memory) makes the scheduler run the task on
another worker (up to its `allowed-failures`); a task that raises (an unexpected reader error, a
cache the worker cannot write) is retried `retries` times; a file the reader cannot read fails
at once with the reader's message, as a local ingest reports it. Every entry is checked whole
(`validate.problems`) by the worker after writing it (one it finds damaged is rebuilt) and again
by the server before it serves an entry a worker wrote for it (`DaskRunner`).

`dask[distributed]` is an optional extra (`pip install "profscope[dask]"`): it is imported only
when a cluster is used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from profscope.engine import store, validate
from profscope.engine.ingest import manager as ingest
from profscope.errors import describe_error

# Times a task that raised is run again (a worker lost mid-task is the scheduler's to rerun).
RETRIES = 2
# Seconds to wait for the scheduler to answer a connection, and for how long a failed connection
# is the answer of every job that asks (so the jobs of a session do not each wait for it in turn).
CONNECT_TIMEOUT_S = 10.0
RECONNECT_AFTER_S = 30.0
# What the progress of a host says while its task waits for a worker, and while the server checks
# the entry a worker wrote; a running task reports its own stages ("reading", "indexing").
QUEUED_STAGE = "queued on the cluster"
VALIDATING_STAGE = "validating"
INSTALL_HINT = 'ingest on a Dask cluster needs dask.distributed: pip install "profscope[dask]"'
_log = logging.getLogger(__name__)


class TaskFailed(Exception):
    """An ingest task failed in a way a retry may cure; `cache_problem`: the worker could not write
    the cache directory (a mount missing on that machine, a full disk)."""

    def __init__(self, message: str, cache_problem: bool = False) -> None:
        super().__init__(message, cache_problem)
        self.message = message
        self.cache_problem = cache_problem

    def __str__(self) -> str:
        return self.message


@dataclasses.dataclass(frozen=True)
class FileOutcome:
    """How the ingest of one source file ended: built, found already cached, or failed (`error`:
    the record a local ingest leaves, with `message` naming the file)."""

    label: str
    url: str
    seconds: float
    cached: bool = False
    worker: str | None = None
    error: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def import_distributed() -> Any:
    """`dask.distributed`, or ImportError saying how to install it."""
    try:
        import distributed
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e
    return distributed


def job_spec(
    source: ingest.SourceFile, cache_root: str, readers: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The job of one source as `ingest.run_ingest` takes it, with this profscope's cache format
    version (a worker of another version refuses it). The fingerprint is taken here, as the
    server takes it; OSError when the source cannot be stat'ed or read."""
    table = ingest.READERS if readers is None else readers
    if source.format not in table:
        raise ValueError(f"{source.url}: no trace reader for format {source.format!r}")
    key, size = ingest.source_key(source)
    return {
        "url": source.url,
        "format": source.format,
        "reader": table[source.format],
        "fs": source.fs.to_json(),
        "cache_root": cache_root,
        "key": key,
        "size": size,
        "format_version": store.FORMAT_VERSION,
    }


def ingest_task(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The body of one task, on a worker: build the entry (or find it), check it whole, and say
    how it went. A file the reader cannot read is an answer (code 2 and its error record); what a
    retry may cure raises `TaskFailed`."""
    url, root, key = spec["url"], spec["cache_root"], spec["key"]
    where = _worker_name()
    version = spec.get("format_version")
    if version != store.FORMAT_VERSION:
        return {
            "code": 1,
            "error": {
                "message": f"ingest of {url} refused by worker {where}: it writes cache format "
                f"v{store.FORMAT_VERSION}, the client reads v{version} (install the same profscope "
                "version on the workers, the client and the server)"
            },
            "worker": where,
        }
    started = time.perf_counter()
    cached = store.lookup(root, key) is not None
    problems: list[str] = []
    for _ in range(2):
        code = ingest.run_ingest(spec)
        if code != 0:
            error = _take_error(root, key) or {"message": f"ingest of {url} failed (exit code {code})"}
            if code == 2:
                return {"code": 2, "error": error, "worker": where}
            raise TaskFailed(f"{error['message']} (on worker {where})", code == ingest.EXIT_CACHE_UNUSABLE)
        problems = validate.problems(root, key)
        if not problems:
            return {"code": 0, "cached": cached, "seconds": time.perf_counter() - started, "worker": where}
        _log.warning("profscope: cache entry of %s refused (%s); it is built again", url, problems[0])
        store.discard(store.entry_dir(root, key))
        cached = False
    raise TaskFailed(f"the cache entry of {url} written on worker {where} is damaged: {problems[0]}")


def submit(client: Any, spec: Mapping[str, Any], retries: int = RETRIES) -> Any:
    """Submit one job; larger files first (they bound the end of a fan-out). The task key is
    unique, so a job submitted again after a failure runs again; two jobs of one file meet at the
    file's lock on the worker, and the second finds the entry built."""
    return client.submit(
        ingest_task,
        dict(spec),
        key=f"profscope-ingest-{spec['key'][:16]}-{uuid.uuid4().hex[:8]}",
        retries=retries,
        priority=int(spec.get("size", 0)),
        pure=False,
    )


def result_of(future: Any, url: str) -> dict[str, Any]:
    """The task's answer (see `ingest_task`), with a failure of the cluster turned into one: the
    workers running it died too often, the task was cancelled, the scheduler went away."""
    distributed = import_distributed()
    try:
        return dict(future.result())
    except TaskFailed as e:
        code = ingest.EXIT_CACHE_UNUSABLE if e.cache_problem else 1
        return {"code": code, "error": {"message": e.message, "cache": e.cache_problem}}
    except distributed.KilledWorker as e:
        message = f"ingest of {ingest.file_name(url)} failed: every Dask worker that ran it died ({e})"
    except Exception as e:  # the cluster's failures reach the caller as a message naming the file
        message = f"ingest of {ingest.file_name(url)} failed on the Dask cluster: {type(e).__name__}: {e}"
    return {"code": 1, "error": {"message": message}}


def ingest_files(
    client: Any,
    files: Sequence[tuple[str, ingest.SourceFile]],
    cache_root: str,
    readers: Mapping[str, str] | None = None,
    retries: int = RETRIES,
    on_outcome: Callable[[FileOutcome], None] | None = None,
    memory_bytes: int | None = None,
) -> list[FileOutcome]:
    """Ingest `files` ((label, source) pairs) on the cluster behind `client`, one task each;
    `on_outcome` hears of each file as it ends; `memory_bytes`: each task's ingest budget (default
    `memory.child_budget` of the default total). Returns every file's outcome, in `files`' order."""
    distributed = import_distributed()
    started = time.perf_counter()
    outcomes: dict[int, FileOutcome] = {}
    pending: dict[Any, tuple[int, str, str]] = {}

    def record(i: int, outcome: FileOutcome) -> None:
        outcomes[i] = outcome
        if on_outcome is not None:
            on_outcome(outcome)

    jobs = []
    for i, (label, source) in enumerate(files):
        try:
            spec = job_spec(source, cache_root, readers)
            if memory_bytes is not None:
                spec["memory_bytes"] = int(memory_bytes)
            jobs.append((i, label, spec))
        except (OSError, ValueError) as e:
            message = (
                str(e)
                if isinstance(e, ValueError)
                else f"cannot stat {ingest.file_name(source.url)}: {describe_error(e)}"
            )
            record(i, FileOutcome(label, source.url, 0.0, error={"message": message}))
    for i, label, spec in sorted(jobs, key=lambda job: -int(job[2]["size"])):
        pending[submit(client, spec, retries)] = (i, label, spec["url"])
    for future in distributed.as_completed(list(pending), loop=client.loop):
        i, label, url = pending.pop(future)
        answer = result_of(future, url)
        seconds = float(answer.get("seconds", time.perf_counter() - started))
        worker = answer.get("worker")
        if answer["code"] == 0:
            record(i, FileOutcome(label, url, seconds, bool(answer.get("cached")), worker))
        else:
            record(i, FileOutcome(label, url, seconds, worker=worker, error=answer["error"]))
    return [outcomes[i] for i in range(len(files))]


@contextlib.contextmanager
def cluster_client(scheduler: str | None = None, workers: int | None = None) -> Iterator[Any]:
    """A client of the scheduler at `scheduler`, or of a `LocalCluster` of `workers` worker
    processes (one thread each: ingest is CPU-bound Python) started for the block and stopped after."""
    distributed = import_distributed()
    if scheduler:
        with distributed.Client(scheduler, timeout=CONNECT_TIMEOUT_S, set_as_default=False) as client:
            yield client
        return
    n = workers or os.cpu_count() or 1
    with (
        distributed.LocalCluster(
            n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        yield client


class DaskRunner:
    """The server's ingests as tasks on the cluster at `address` (an `ingest.IngestRunner`):
    `--profscope_dask_scheduler`. The entry a worker wrote is checked whole before it is reported
    done; a refused one is discarded and built once more on the cluster."""

    def __init__(self, address: str, retries: int = RETRIES, client: Any = None) -> None:
        self.address = address
        self.retries = retries
        self._client = client
        self._lock = threading.Lock()
        self._connect_failure: tuple[float, Exception] | None = None

    def submit(
        self,
        spec: Mapping[str, Any],
        stage: Callable[[str], None],
        finish: Callable[[int, dict[str, Any] | None], None],
    ) -> None:
        stage(QUEUED_STAGE)
        job = {**spec, "format_version": store.FORMAT_VERSION}
        name = f"profscope-dask-{str(spec['key'])[:8]}"
        threading.Thread(target=self._run, args=(job, stage, finish), name=name, daemon=True).start()

    def close(self) -> None:
        """Close the connection to the scheduler (the next job connects again)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _connect(self) -> Any:
        with self._lock:
            if self._client is not None:
                return self._client
            failure = self._connect_failure
            if failure is not None and time.monotonic() - failure[0] < RECONNECT_AFTER_S:
                raise failure[1]
            try:
                distributed = import_distributed()
                self._client = distributed.Client(
                    self.address, timeout=CONNECT_TIMEOUT_S, set_as_default=False
                )
            except Exception as e:
                self._connect_failure = (time.monotonic(), e)
                raise
            self._connect_failure = None
            return self._client

    def _run(
        self,
        spec: dict[str, Any],
        stage: Callable[[str], None],
        finish: Callable[[int, dict[str, Any] | None], None],
    ) -> None:
        url, root, key = spec["url"], spec["cache_root"], spec["key"]
        try:
            client = self._connect()
        except Exception as e:  # ImportError, OSError, TimeoutError: all end as the file's error
            reason = str(e) if isinstance(e, ImportError) else f"{type(e).__name__}: {e}"
            finish(1, {"message": f"cannot ingest {url} on the Dask cluster at {self.address}: {reason}"})
            return
        problems: list[str] = []
        for _ in range(2):
            stage(QUEUED_STAGE)
            answer = result_of(submit(client, spec, self.retries), url)
            if answer["code"] != 0:
                finish(int(answer["code"]), answer.get("error"))
                return
            stage(VALIDATING_STAGE)
            problems = validate.problems(root, key)
            if not problems:
                finish(0, None)
                return
            _log.warning("profscope: cache entry of %s from the cluster refused (%s)", url, problems[0])
            store.discard(store.entry_dir(root, key))
        finish(1, {"message": f"the cache entry of {url} from the Dask cluster was refused: {problems[0]}"})


def _take_error(root: str, key: str) -> dict[str, Any] | None:
    """The `.error` record `run_ingest` left for `key`, removed from the cache (it travels back
    with the task's answer instead)."""
    path = os.path.join(root, ingest.PROGRESS_DIR, key[:32] + ".error")
    try:
        with open(path, "rb") as f:
            record = json.loads(f.read())
        os.remove(path)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _worker_name() -> str:
    """The Dask worker's address when run by one, else this host and process."""
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return f"{socket.gethostname()}:{os.getpid()}"
