"""Second process for big Chrome trace files: decodes the events from a split offset to the end.

Started as `python -m profscope.formats.chrome_helper IN_FD OUT_FD SPILL_FD` by `HelperProcess`
rather than through `multiprocessing`, so it neither re-imports the caller's `__main__`
(TensorBoard, a script) nor depends on the caller not being a daemonic process (ingest runs readers
in one). It starts importing at once and waits for `(path, offset, bare_array)`; progress and the
result (a finished `ColumnCollector` plus the metadata after the events array) come back over the
pipe. `split_offset` picks where the helper starts: an event boundary a little past the middle.

The result holds a few hundred MB of arrays. Pushed through the pipe they took 0.4-0.6 s of the
reading process's time (the pipe itself, then unpickling copies), after its own half was done. So
where the OS offers an anonymous memory file (`os.memfd_create`, Linux), the helper writes the
arrays there while the reading process is still busy, and sends only a small pickle that refers to
them (pickle protocol 5 out-of-band buffers); the reading process maps the file, no copy. The
file has no name, so nothing is left behind whatever happens to either process.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from profscope.formats.chrome_blocks import BlockReader
from profscope.formats.chrome_columns import ColumnCollector
from profscope.formats.chrome_scan import EVENT_BOUNDARY, EventScanner

if TYPE_CHECKING:  # the helper process itself never needs fsspec
    import fsspec

# Share of the events array the reading process decodes itself when a helper takes the rest;
# measured so both finish together on the benchmark trace (the helper pays ~1 s to start and hand over).
MAIN_SHARE = 0.53
PROGRESS_EVERY_BYTES = 32 << 20
# Alignment of the arrays in the memory file (numpy wants at least their itemsize).
SPILL_ALIGN = 64


def can_read(fs: fsspec.AbstractFileSystem) -> bool:
    """Whether a helper can read files of `fs` here: local files, a second core, and POSIX (the
    helper gets its pipe ends as inherited descriptors, `pass_fds`)."""
    if (os.cpu_count() or 1) < 2 or os.name != "posix":
        return False
    proto = fs.protocol
    return "file" in ((proto,) if isinstance(proto, str) else tuple(proto))


def split_offset(path: str, events_start: int, total: int) -> int | None:
    """An event start a little past the middle of the events array (the first after `}` `,` `{`
    there): the helper starts late (a fresh interpreter) and hands its columns over at the end."""
    middle = events_start + int((total - events_start) * MAIN_SHARE)
    with open(path, "rb") as f:
        f.seek(middle)
        window = f.read(1 << 20)
    for m in EVENT_BOUNDARY.finditer(window):
        if m.group().endswith(b"{"):
            return middle + m.end() - 1
    return None


class TailResult:
    """What the helper sends back: its columns, the tail's metadata, and how the document ended."""

    def __init__(self, collector: ColumnCollector, metadata: dict[str, Any], document_complete: bool) -> None:
        self.collector = collector
        self.metadata = metadata
        self.document_complete = document_complete


class SpilledResult:
    """A `TailResult` pickled with its arrays out of band: `spans[i]` = (offset, size) of buffer i
    in the memory file."""

    def __init__(self, header: bytes, spans: list[tuple[int, int]]) -> None:
        self.header = header
        self.spans = spans


def _memory_file() -> int | None:
    """An anonymous memory file for the helper's arrays, or None where there is none."""
    create = getattr(os, "memfd_create", None)
    if create is None:
        return None
    try:
        return create("profscope-chrome-tail", os.MFD_CLOEXEC)
    except OSError:
        return None


class HelperProcess:
    """Handle on a running helper: send it the split, read its progress and result, or stop it."""

    def __init__(self) -> None:
        to_child, child_in = os.pipe()
        child_out, from_child = os.pipe()
        os.set_inheritable(to_child, True)
        os.set_inheritable(from_child, True)
        self._spill = _memory_file()
        fds = (to_child, from_child) if self._spill is None else (to_child, from_child, self._spill)
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        spill_arg = "-" if self._spill is None else str(self._spill)
        try:
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "profscope.formats.chrome_helper",
                    str(to_child),
                    str(from_child),
                    spill_arg,
                ],
                pass_fds=fds,
                stdin=subprocess.DEVNULL,
                env=env,
            )
        except BaseException:
            self._close_spill()
            raise
        finally:
            os.close(to_child)
            os.close(from_child)
        self._send = Connection(child_in, readable=False)
        self._recv = Connection(child_out, writable=False)
        self._pending: Any = None
        self.done = 0

    def start(self, path: str, offset: int, bare_array: bool) -> None:
        self._send.send((path, offset, bare_array))

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
        """Wait for the helper's columns; re-raises what failed in it."""
        message = self._pending
        while message is None or (isinstance(message, tuple) and message[0] == "progress"):
            message = self._recv.recv()
        if isinstance(message, BaseException):
            raise message
        if isinstance(message, SpilledResult):
            assert self._spill is not None
            return unspilled(message, self._spill)
        return message

    def _close_spill(self) -> None:
        if self._spill is not None:
            os.close(self._spill)  # mapped arrays keep their pages
            self._spill = None

    def stop(self) -> None:
        """End the helper, whatever it is doing."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        self._send.close()
        self._recv.close()
        self._close_spill()


def run(inbox: Connection, outbox: Connection, spill: int | None = None) -> None:
    """Helper body: wait for the split, decode from there to the end, send the result (its arrays
    through the memory file `spill` when there is one)."""
    try:
        order = inbox.recv()
    except EOFError:
        return
    path, offset, bare_array = order
    try:
        with open(path, "rb") as f:
            reader = BlockReader(f, start=offset)
            collector = ColumnCollector()
            scanner = EventScanner(
                reader.next_block,
                collector.damage,
                start_offset=offset,
                start_in_events=True,
                bare_array=bare_array,
            )
            reported = offset
            try:
                for batch in scanner.batches():
                    collector.add(batch)
                    if scanner.offset - reported >= PROGRESS_EVERY_BYTES:
                        reported = scanner.offset
                        outbox.send(("progress", reported - offset))
            finally:
                reader.close()
        result = TailResult(collector.finish(), scanner.metadata, scanner.document_complete)
        outbox.send(result if spill is None else spilled(result, spill))
    except Exception as exc:  # the parent re-raises it, naming the file
        outbox.send(exc)


def unspilled(message: SpilledResult, spill: int) -> TailResult:
    """The helper's result, its arrays mapped from the memory file (copy-on-write, so they are
    writable like unpickled ones and the file is never changed)."""
    size = os.fstat(spill).st_size
    view = memoryview(mmap.mmap(spill, size, access=mmap.ACCESS_COPY) if size else b"")
    return pickle.loads(message.header, buffers=[view[at : at + n] for at, n in message.spans])


def spilled(result: TailResult, spill: int) -> SpilledResult | TailResult:
    """`result` with its arrays written to the memory file, or itself if writing fails."""
    collector = result.collector
    for name in ("ev_args", "be_args", "asy_args"):  # bytes would be pickled in band
        setattr(collector, name, [np.frombuffer(b, np.uint8) for b in getattr(collector, name)])
    buffers: list[pickle.PickleBuffer] = []
    header = pickle.dumps(result, protocol=5, buffer_callback=buffers.append)
    spans = []
    at = 0
    try:
        with open(os.dup(spill), "wb", buffering=0) as f:
            for buffer in buffers:
                view = buffer.raw()
                at += -at % SPILL_ALIGN
                spans.append((at, view.nbytes))
                f.seek(at)
                while view.nbytes:
                    view = view[f.write(view) :]
                at = spans[-1][0] + spans[-1][1]
    except OSError:  # no room for the file: send everything through the pipe
        with contextlib.suppress(OSError):
            os.ftruncate(spill, 0)
        return result
    return SpilledResult(header, spans)


if __name__ == "__main__":
    # Run through the module's real name, so what it pickles refers to importable classes.
    from profscope.formats import chrome_helper

    chrome_helper.run(
        Connection(int(sys.argv[1]), writable=False),
        Connection(int(sys.argv[2]), readable=False),
        None if sys.argv[3] == "-" else int(sys.argv[3]),
    )
