"""Second process for big XPlanes: it writes the args JSON of the batches the reading process sends.

Writing every event's args text (`args.args_json`) is about 45% of reading an XPlane (4.0 s of
8.6 s on the 214 MB benchmark file), and it needs little of the reader's state: the batch's stat rows (kind, value, name id, ref target id,
string bytes), each event's metadata prefix, the names and the plane's prefixes. So the reader
sends those as an `ArgsJob`, goes on with the next batch while the helper writes the text, and
adds the batch to the builder once the text is back (`InOrder.call(..., later=...)`, in order).

The helper keeps a copy of the names and of each plane's prefixes, which only grow: a job carries
the ones added since the previous job. Labels `args_json` makes up for one job ("stat#<id>", "name
(2)", "?ref <id>") go to a per-job extension of the copy, so they never take an id the reader gives
a later name; the text does not depend on ids, only on names.

Started like `chrome.helper` (`python -m profscope.formats.xplane.args_helper IN_FD OUT_FD`, not
through `multiprocessing`; jobs and answers cross with their arrays out of band,
`helper_process.send_buffers`), it says it is ready once imported; one thread of it receives jobs and
another sends answers while its main thread writes, so the reader's sends never wait for the job
being written (jobs of 1.2 MB, answers of about 1.6 MB per 1 MB batch: the pipes are widened too).
Until it is ready, when it dies, or when anything goes wrong with it, the reader writes the args
itself from the same job (kept until its answer arrives), with the same bytes.
"""

from __future__ import annotations

import collections
import logging
import os
import queue
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from profscope.formats.common import helper_process
from profscope.formats.xplane.args import args_json
from profscope.formats.xplane.decode import BYTES, STR
from profscope.formats.xplane.stats import StatNames

_log = logging.getLogger(__name__)
# Files at least this big are read with a helper (it takes about half a second to start).
MIN_FILE_BYTES = 32 << 20
# What the helper holds (interpreter, numpy, jobs in flight: 113-124 MB peak measured on the 214 MB
# benchmark XPlane), taken off the reader's budget.
HELPER_BYTES = 128 << 20
_READY = "ready"


def wanted(size: int, budget: int) -> bool:
    """Whether a read of `size` bytes within `budget` should use a helper: big enough to gain, a
    second core, POSIX (inherited pipe descriptors) and room for it in the budget."""
    return (
        size >= MIN_FILE_BYTES
        and (os.cpu_count() or 1) >= 2
        and os.name == "posix"
        and budget >= 3 * HELPER_BYTES
    )


class _Names(StatNames):
    """The reader's names as of the last job, plus one job's own labels (dropped after it)."""

    def __init__(self) -> None:
        super().__init__()
        self._shared = 0

    def extend(self, names: list[str]) -> None:
        self.end_job()
        for name in names:
            self.name_ids.setdefault(name, len(self.names))
            self.names.append(name)
        self._shared = len(self.names)

    def end_job(self) -> None:
        for name in self.names[self._shared :]:
            del self.name_ids[name]
        del self.names[self._shared :]


class _Rows:
    """The stat columns `args_json` reads (`EventBatch`'s names), for the job's rows only: the
    job sends start, length and metadata id only where they are read."""

    def __init__(self, job: ArgsJob) -> None:
        m = job.kind.shape[0]
        self.st_kind = job.kind
        self.st_value = job.value
        self.st_mid = np.zeros(m, dtype=np.int64)
        self.st_mid[job.lost] = job.lost_mid
        self.st_start = np.zeros(m, dtype=np.int64)
        self.st_len = np.zeros(m, dtype=np.int64)
        self.st_len[job.texts] = job.text_len
        self.st_start[job.texts] = np.cumsum(job.text_len) - job.text_len
        self.data = job.data


class _Table:
    """What `args_json` reads of a `StatTable`, made from a job and the helper's names."""

    def __init__(self, job: ArgsJob, names: _Names) -> None:
        self.raw = _Rows(job)
        self.names = names.names
        self.row_name = job.row_name
        self.ref_name = job.ref_name
        self._names = names

    def name_id(self, name: str) -> int:
        return self._names.name_id(name)


class ArgsJob:
    """One batch's args to write: the stat rows (renumbered 0…m-1, in the reader's order), their
    events (`owner`), each event's prefix, and what the names and the plane's prefixes gained.
    Ids go as int32 (names, prefixes and events of one batch are far fewer than 2**31): the job
    crosses a pipe."""

    def __init__(self, table: Any, stat_rows: np.ndarray, owner: np.ndarray, ev_prefix: np.ndarray) -> None:
        raw = table.raw
        self.kind = raw.st_kind[stat_rows]
        self.value = raw.st_value[stat_rows]
        self.row_name = table.row_name[stat_rows]
        self.ref_name = table.ref_name[stat_rows]
        self.owner = owner.astype(np.int32)
        self.ev_prefix = ev_prefix.astype(np.int32)
        self.lost = np.flatnonzero(self.row_name < 0).astype(np.int32)  # named "stat#<metadata id>"
        self.lost_mid = raw.st_mid[stat_rows[self.lost]]
        # Only string and bytes stats read the batch's bytes: theirs alone are sent, packed.
        self.texts = np.flatnonzero((self.kind == STR) | (self.kind == BYTES)).astype(np.int32)
        self.text_len = raw.st_len[stat_rows[self.texts]]
        self.data = b""
        if self.texts.shape[0]:
            data = raw.data
            starts = raw.st_start[stat_rows[self.texts]].tolist()
            self.data = b"".join(data[s : s + n] for s, n in zip(starts, self.text_len.tolist(), strict=True))
        self.plane = 0
        self.reset_names = False  # a new read pass: its names start again from none
        self.new_names: list[str] = []
        self.new_prefixes: list[bytes] = []
        self.result: tuple[np.ndarray, np.ndarray] | None = None  # (blob, lengths)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["result"] = None
        return state


class _Growth:
    """What one copy (the helper's, or the reader's mirror) has been given of the names and the
    planes' prefixes, which only grow: the rest is what it is given next."""

    def __init__(self) -> None:
        self._vocab: list[str] | None = None  # the names list of the pass being read
        self._names = 0
        self._prefixes: dict[int, int] = {}

    def is_new(self, vocab_names: list[str]) -> bool:
        """Whether `vocab_names` is the names list of a pass this copy has not been given yet."""
        return vocab_names is not self._vocab

    def give(self, job: ArgsJob, vocab_names: list[str], prefixes: list[bytes]) -> None:
        """Put in `job` what the copy lacks of `vocab_names` and of its plane's `prefixes`."""
        job.reset_names = self.is_new(vocab_names)
        if job.reset_names:
            self._vocab, self._names = vocab_names, 0
        job.new_names = vocab_names[self._names :]
        self._names = len(vocab_names)
        job.new_prefixes = prefixes[self._prefixes.get(job.plane, 0) :]
        self._prefixes[job.plane] = len(prefixes)


class _Writer:
    """A copy of the names and prefixes, and jobs written with it: the helper's, and the reader's
    mirror, given everything up to the job it writes (a job it wrote for a helper that failed
    was made earlier: it only refers to what existed then, and the text depends on names, not on
    ids, so the bytes are the same)."""

    def __init__(self) -> None:
        self.names = _Names()
        self.prefixes: dict[int, list[bytes]] = collections.defaultdict(list)

    def learn(self, job: ArgsJob) -> None:
        if job.reset_names:
            self.names = _Names()
        self.names.extend(job.new_names)
        self.prefixes[job.plane].extend(job.new_prefixes)

    def write(self, job: ArgsJob) -> tuple[np.ndarray, np.ndarray]:
        rows = np.arange(job.kind.shape[0], dtype=np.int64)
        table = _Table(job, self.names)
        prefixes = self.prefixes[job.plane]
        try:
            offsets, blob = args_json(
                table,  # type: ignore[arg-type]
                prefixes,
                job.ev_prefix.astype(np.int64),
                rows,
                job.owner.astype(np.int64),
            )
        finally:
            self.names.end_job()
        return blob[: offsets[-1]], np.diff(offsets).astype(np.int32)


class InOrder:
    """Builder calls made in the order the reader asks for them though a batch's args may still be
    with the helper: a call given `later` (which returns its last arguments, waiting for the
    answer) waits, and the calls after it wait behind it; beyond MAX_WAITING waiting calls the
    oldest is made. Builder indices (what flows refer to) thus follow the order of the file."""

    MAX_WAITING = 8

    def __init__(self) -> None:
        self._waiting: collections.deque[
            tuple[Callable[..., object], tuple[Any, ...], Callable[[], tuple[Any, ...]] | None]
        ] = collections.deque()

    def call(
        self, fn: Callable[..., object], *args: Any, later: Callable[[], tuple[Any, ...]] | None = None
    ) -> None:
        if later is None and not self._waiting:
            fn(*args)
            return
        self._waiting.append((fn, args, later))
        while len(self._waiting) > self.MAX_WAITING:
            self._make_oldest()

    def _make_oldest(self) -> None:
        fn, args, later = self._waiting.popleft()
        fn(*args, *(later() if later is not None else ()))

    def drain(self) -> None:
        """Make every waiting call."""
        while self._waiting:
            self._make_oldest()

    def clear(self) -> None:
        """Forget the waiting calls (a pass given up)."""
        self._waiting.clear()


class ArgsHelper:
    """The reader's side: sends jobs, collects answers in order, writes a job itself when the
    helper is not ready or has failed."""

    def __init__(self) -> None:
        self._writer = _Writer()  # the mirror of what the helper has been sent
        self._sent: collections.deque[ArgsJob] = collections.deque()
        self._mirror_growth = _Growth()
        self._helper_growth = _Growth()
        self._planes = 0
        self._ready = False
        self._started = helper_process.start("profscope.formats.xplane.args_helper")
        self._send, self._recv = self._started.send, self._started.recv
        self.failed = False

    def wait_ready(self, timeout: float) -> bool:
        """Wait up to `timeout` s for the helper to be ready (jobs go to it from then on)."""
        if not self.failed and not self._ready and self._recv.poll(timeout):
            self._ready = self._receive() == _READY
        return self._ready

    def new_plane(self) -> int:
        """A number for the prefixes of one plane of one pass."""
        self._planes += 1
        return self._planes

    def submit(self, job: ArgsJob, vocab_names: list[str], plane: int, prefixes: list[bytes]) -> ArgsJob:
        """Send `job` (of the plane numbered `plane`, whose prefixes are `prefixes`) or write it
        now; `vocab_names` is the names list its name ids refer to. What bounds the jobs in
        flight is `InOrder`, which waits for the oldest beyond `InOrder.MAX_WAITING`."""
        job.plane = plane
        if self._sent and self._mirror_growth.is_new(vocab_names):
            # A new pass: the last pass's jobs are answered first (or written by the mirror while
            # it still has that pass's names, should the helper fail).
            self.wait(self._sent[-1])
        self._mirror_growth.give(job, vocab_names, prefixes)
        self._writer.learn(job)
        if not self.wait_ready(0):
            job.result = self._writer.write(job)
            return job
        self._helper_growth.give(job, vocab_names, prefixes)
        try:
            helper_process.send_buffers(self._send, job)
        except OSError:
            self._fail()
            job.result = self._writer.write(job)
            return job
        self._sent.append(job)
        return job

    def wait(self, job: ArgsJob) -> tuple[np.ndarray, np.ndarray]:
        """The answer to `job`, waiting for it (and the ones sent before) when needed."""
        while job.result is None:
            answer = None if self.failed else self._receive()
            if answer is None:  # the helper is gone: write what it was sent here
                for sent in self._sent:
                    sent.result = self._writer.write(sent)
                self._sent.clear()
                break
            self._sent.popleft().result = answer
        assert job.result is not None
        return job.result

    def _receive(self) -> Any:
        try:
            answer = helper_process.recv_buffers(self._recv)
        except (EOFError, OSError):
            self._fail()
            return None
        if isinstance(answer, BaseException):
            _log.warning("the args helper failed; writing args in this process", exc_info=answer)
            self._fail()
            return None
        return answer

    def _fail(self) -> None:
        if not self.failed:
            self.failed = True
            self.stop()

    def stop(self) -> None:
        """End the helper, whatever it is doing."""
        self._started.stop()


def run(inbox: Connection, outbox: Connection) -> None:
    """Helper body: write the args of each job received, in order, until the reader closes.

    A thread receives the jobs and another sends the answers, so the reader's sends and receives
    never wait for a job being written here (a job is bigger than a pipe's buffer)."""
    jobs: queue.Queue[Any] = queue.Queue()
    answers: queue.Queue[Any] = queue.Queue()

    def receive_jobs() -> None:
        while True:
            try:
                jobs.put(helper_process.recv_buffers(inbox))
            except (EOFError, OSError):
                jobs.put(None)
                return

    def send_answers() -> None:
        while (answer := answers.get()) is not None:
            try:
                helper_process.send_buffers(outbox, answer)
            except OSError:
                return

    threading.Thread(target=receive_jobs, daemon=True).start()
    sender = threading.Thread(target=send_answers, daemon=True)
    sender.start()
    answers.put(_READY)
    writer = _Writer()
    try:
        while (job := jobs.get()) is not None:
            try:
                writer.learn(job)
                answers.put(writer.write(job))
            except Exception as exc:  # the reader writes this job and the rest itself
                answers.put(exc)
                break
    finally:
        answers.put(None)
        sender.join()


if __name__ == "__main__":
    # Run through the module's real name, so what it pickles refers to importable classes.
    from profscope.formats.xplane import args_helper as xplane_args_helper

    xplane_args_helper.run(
        Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False)
    )
