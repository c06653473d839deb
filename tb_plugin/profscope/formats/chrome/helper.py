"""Second process for big Chrome trace files: decodes the events from a split offset to the end.

Started as `python -m profscope.formats.chrome.helper IN_FD OUT_FD SPILL_FD SOURCE_FD` by
`HelperProcess` rather than through `multiprocessing`, so it neither re-imports the caller's
`__main__` (TensorBoard, a script) nor depends on the caller not being a daemonic process (ingest
runs readers in one); or, in a local ingest child (`helper_process.allow_fork`), forked from it,
which saves the fresh interpreter's start (about 0.3 s of CPU, and the helper's late start).
It reads the file the reader opened (`SOURCE_FD`, inherited, read by `pread`): never by name,
which a FIFO or a link swapped in meanwhile would answer. It starts importing at once
and waits for `(offset, bare_array, chunk_bytes, key_limit)`. `split_offset` picks where the helper
starts: an event boundary a little past the middle.

The helper writes its columns chunk by chunk, as it decodes, to an unnamed temporary file its
parent made and handed over (`SPILL_FD`, see `chrome.spill`), so it never holds more than one
chunk; progress and, at the end, a small result (its collector without columns: ids, counts,
where the chunks are, plus the metadata after the events array) come back over the pipe. The
parent reads the chunks from that file when it assembles the trace.
"""

from __future__ import annotations

import os
import sys
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from profscope.formats.chrome import spill as chrome_spill
from profscope.formats.chrome.blocks import BlockReader
from profscope.formats.chrome.columns import ColumnCollector
from profscope.formats.chrome.scan import EVENT_BOUNDARY, EventScanner, gc_paused
from profscope.formats.chrome.spill import SpillFile
from profscope.formats.common import helper_process
from profscope.formats.common.opening import PositionalFile

if TYPE_CHECKING:  # the helper process itself never needs fsspec
    import fsspec

# How the events array is shared: the reader decodes MAIN_SPEED times as fast as the helper (it also
# writes its chunks behind, polls the helper and reports progress), and the helper's start and
# hand-over take as long as decoding HELPER_LAG_BYTES. Fitted on the 2-core VM, where the balance
# moves by seconds from run to run: on the 1.1 GB benchmark trace a share of 0.53 left the helper
# done 0.45 s after the reader, 0.543 0.5–0.8 s before it; on a 10 GB one a share of 0.503 left it
# done 3.9 and 4.8 s before (0.4 s after in a third run), 0.483 2.3 s after. These give shares of
# 0.531 and 0.490.
MAIN_SPEED = 0.94
HELPER_LAG_BYTES = 100 << 20
# The lag of a helper forked from a local ingest child (`helper_process.allow_fork`), which starts at
# once. Fitted on the 1.0 GB H100 BERT repetition, quiet 2-core VM: with 0 its result came 0.10, 0.40
# and 0.31 s after the reader's half ended, with 64 MB 0.34, 0.08 and 0.14 s before; with 32 MB
# 0.05 and 0.06 s after, 0.48 and 0.28 s before.
FORKED_HELPER_LAG_BYTES = 32 << 20
PROGRESS_EVERY_BYTES = 32 << 20


def can_read(fs: fsspec.AbstractFileSystem) -> bool:
    """Whether a helper can read files of `fs` here: local files, where a helper can run at all
    (`helper_process.possible`)."""
    if not helper_process.possible():
        return False
    proto = fs.protocol
    return "file" in ((proto,) if isinstance(proto, str) else tuple(proto))


def split_offset(source_fd: int, events_start: int, total: int) -> int | None:
    """An event start a little past the middle of the events array (the first after `}` `,` `{`
    there): the helper starts late (a fresh interpreter, unless it is forked) and hands its columns
    over at the end (`MAIN_SPEED`, `HELPER_LAG_BYTES`, `FORKED_HELPER_LAG_BYTES`), the helper's
    share never below a quarter."""
    span = total - events_start
    lag = FORKED_HELPER_LAG_BYTES if helper_process.fork_allowed() else HELPER_LAG_BYTES
    share = MAIN_SPEED * (span + lag) / (1 + MAIN_SPEED)  # both finish together
    middle = events_start + min(int(share), span * 3 // 4)
    window = os.pread(source_fd, 1 << 20, middle)  # the reader's own position stays where it is
    for m in EVENT_BOUNDARY.finditer(window):
        if m.group().endswith(b"{"):
            return middle + m.end() - 1
    return None


class TailResult:
    """What the helper sends back: its collector (ids, counts and where its chunks are, in the
    helper's temporary file), the tail's metadata, how the document ended, and where a repeated
    `traceEvents` array after the one read starts (`EventScanner.later_events_at`)."""

    def __init__(
        self,
        collector: ColumnCollector,
        metadata: dict[str, Any],
        document_complete: bool,
        later_events_at: int | None = None,
    ) -> None:
        self.collector = collector
        self.metadata = metadata
        self.document_complete = document_complete
        self.later_events_at = later_events_at


class HelperProcess:
    """Handle on a running helper: send it the split, read its progress and result, or stop it."""

    def __init__(
        self,
        source_fd: int,
        directory: str | None = None,
        chunk_bytes: int | None = None,
        key_limit: int | None = None,
    ) -> None:
        """`source_fd`: the reader's descriptor of the file, which the helper inherits."""
        self._chunk_bytes = chrome_spill.CHUNK_BYTES if chunk_bytes is None else chunk_bytes
        self._key_limit = key_limit
        # Where the helper's chunks go; no helper without one (it would have to send them all).
        self.spill = SpillFile(directory=directory)
        try:
            self._started = helper_process.start(
                "profscope.formats.chrome.helper", self.spill.fileno(), source_fd, fork=True
            )
        except BaseException:
            self.spill.close()
            raise
        self._send, self._recv = self._started.send, self._started.recv
        self._pending: Any = None
        self.done = 0

    def start(self, offset: int, bare_array: bool) -> None:
        self._send.send((offset, bare_array, self._chunk_bytes, self._key_limit))

    def poll_progress(self) -> int:
        """Bytes the helper has decoded so far (reads pending progress messages, never blocks).

        Stops reading once the result has arrived: the helper then closes its end, and reading
        on would raise EOFError. A helper that died is noticed by `result()`.
        """
        while self._pending is None and self._recv.poll():
            try:
                message = self._recv.recv()
            except EOFError:
                break
            if isinstance(message, tuple) and message[0] == "progress":
                self.done = message[1]
            else:
                self._pending = message
                break
        return self.done

    def result(self) -> TailResult:
        """Wait for the helper's result (its chunks then read from `spill`); re-raises what failed
        in it."""
        message = self._pending
        while message is None or (isinstance(message, tuple) and message[0] == "progress"):
            message = self._recv.recv()
        if isinstance(message, BaseException):
            raise message
        message.collector.spill = self.spill
        return message

    def stop(self) -> None:
        """End the helper, whatever it is doing (its temporary file stays open: `spill.close()`)."""
        self._started.stop()


def run(inbox: Connection, outbox: Connection, spill_fd: int, source_fd: int) -> None:
    """Helper body: wait for the split, decode the file `source_fd` from there to the end, writing
    the columns to the temporary file `spill_fd` chunk by chunk, then send the result."""
    try:
        order = inbox.recv()
    except EOFError:
        return
    offset, bare_array, chunk_bytes, key_limit = order
    try:
        spill = SpillFile(fd=spill_fd)
        # The descriptor is the process's until it ends.
        reader = BlockReader(PositionalFile(source_fd), start=offset)
        collector = ColumnCollector(key_limit, name_share=2)  # the reading process holds names too
        scanner = EventScanner(
            reader.next_block,
            collector.damage,
            start_offset=offset,
            start_in_events=True,
            bare_array=bare_array,
        )
        reported = offset
        try:
            with gc_paused():
                for batch in scanner.batches():
                    collector.add(batch)
                    if collector.pending_bytes >= chunk_bytes:
                        collector.flush(spill)
                    if scanner.offset - reported >= PROGRESS_EVERY_BYTES:
                        reported = scanner.offset
                        outbox.send(("progress", reported - offset))
        finally:
            reader.close()
        collector.flush(spill)
        outbox.send(
            TailResult(collector, scanner.metadata, scanner.document_complete, scanner.later_events_at)
        )
    except Exception as exc:  # the parent re-raises it, naming the file
        outbox.send(exc)


if __name__ == "__main__":
    # Run through the module's real name, so what it pickles refers to importable classes.
    from profscope.formats.chrome import helper as chrome_helper

    chrome_helper.run(
        Connection(int(sys.argv[1]), writable=False),
        Connection(int(sys.argv[2]), readable=False),
        int(sys.argv[3]),
        int(sys.argv[4]),
    )
