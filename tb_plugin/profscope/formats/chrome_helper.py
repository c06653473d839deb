"""Second process for big Chrome trace files: decodes the events from a split offset to the end.

Started as `python -m profscope.formats.chrome_helper IN_FD OUT_FD` by `HelperProcess` rather than
through `multiprocessing`, so it neither re-imports the caller's `__main__` (TensorBoard, a script)
nor depends on the caller not being a daemonic process (ingest runs readers in one). It starts
importing at once and waits for `(path, offset, bare_array)`; progress and the result (a finished
`ColumnCollector` plus the metadata after the events array) come back pickled over the pipe.
"""

from __future__ import annotations

import os
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from profscope.formats.chrome_columns import ColumnCollector
from profscope.formats.chrome_scan import BlockReader, EventScanner

PROGRESS_EVERY_BYTES = 32 << 20


class TailResult:
    """What the helper sends back: its columns, the tail's metadata, and how the document ended."""

    def __init__(self, collector: ColumnCollector, metadata: dict[str, Any], document_complete: bool) -> None:
        self.collector = collector
        self.metadata = metadata
        self.document_complete = document_complete


class HelperProcess:
    """Handle on a running helper: send it the split, read its progress and result, or stop it."""

    def __init__(self) -> None:
        to_child, child_in = os.pipe()
        child_out, from_child = os.pipe()
        os.set_inheritable(to_child, True)
        os.set_inheritable(from_child, True)
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "profscope.formats.chrome_helper", str(to_child), str(from_child)],
                pass_fds=(to_child, from_child),
                stdin=subprocess.DEVNULL,
                env=env,
            )
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
        return message

    def stop(self) -> None:
        """End the helper, whatever it is doing."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        self._send.close()
        self._recv.close()


def run(inbox: Connection, outbox: Connection) -> None:
    """Helper body: wait for the split, decode from there to the end, send the result."""
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
        outbox.send(TailResult(collector.finish(), scanner.metadata, scanner.document_complete))
    except Exception as exc:  # the parent re-raises it, naming the file
        outbox.send(exc)


if __name__ == "__main__":
    # Run through the module's real name, so what it pickles refers to importable classes.
    from profscope.formats import chrome_helper

    chrome_helper.run(
        Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False)
    )
