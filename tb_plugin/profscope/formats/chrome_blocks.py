"""Decompressed blocks of a Chrome trace file, read ahead by a background thread.

The first stage of reading: plain bytes or gzip (also concatenated members) in blocks of a few MB.
A damaged or cut gzip stream is not an error here: what inflated before the damage is handed on,
and `truncated_stream` / `corrupt_stream` tell the reader what to warn about.
"""

from __future__ import annotations

import queue
import threading
import zlib
from collections.abc import Iterator
from typing import Any

READ_BLOCK_BYTES = 8 << 20
# Compressed bytes inflated per zlib call: damaged data loses at most this much before it.
INFLATE_STEP_BYTES = 64 << 10


class BlockReader:
    """Decompressed blocks of a file, produced by a background thread.

    File reads and zlib both release the GIL, so reading and inflating the next block overlaps
    with decoding the current one on the other core. `raw_bytes_read` counts source (compressed)
    bytes for progress reporting.
    """

    def __init__(self, fileobj: Any, start: int = 0, gzip: bool = False) -> None:
        self._file = fileobj
        self._start = start
        self._gzip = gzip
        self.raw_bytes_read = 0
        self.truncated_stream = False
        self.corrupt_stream: str | None = None
        self._inflater: Any = None
        self._fed = False  # the current gzip member has received input
        self._queue: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=3)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="profscope-chrome-read", daemon=True)
        self._thread.start()

    def _blocks(self) -> Iterator[bytes]:
        if self._start:
            self._file.seek(self._start)
        while not self._stop.is_set():
            block = self._file.read(READ_BLOCK_BYTES)
            if not block:
                break
            self.raw_bytes_read += len(block)
            if not self._gzip:
                yield block
                continue
            yield from self._inflate(block)
            if self.corrupt_stream:
                return
        self._finish_inflate()

    def _inflate(self, block: bytes) -> Iterator[bytes]:
        """Inflate one read block in small steps, so damaged data loses little of what precedes it."""
        if self._inflater is None:
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)
        out: list[bytes] = []
        size = 0
        view = memoryview(block)
        pos = 0
        while pos < len(view):
            piece = view[pos : pos + INFLATE_STEP_BYTES]
            pos += len(piece)
            self._fed = True
            try:
                data = self._inflater.decompress(piece)
            except zlib.error as exc:
                self.corrupt_stream = (
                    f"{exc} (after about {self.raw_bytes_read - len(view) + pos} compressed bytes)"
                )
                break
            out.append(data)
            size += len(data)
            if self._inflater.eof:
                # Concatenated gzip members: what follows starts a new stream (or is padding).
                rest = self._inflater.unused_data + bytes(view[pos:])
                self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)
                self._fed = False
                view, pos = memoryview(rest if rest.strip(b"\x00") else b""), 0
            if size >= READ_BLOCK_BYTES:
                yield b"".join(out)
                out, size = [], 0
        if out:
            yield b"".join(out)

    def _finish_inflate(self) -> None:
        """At the end of the input: a gzip member that did not reach its end was cut off."""
        if self._gzip and self._inflater is not None and self._fed and not self._inflater.eof:
            self.truncated_stream = True

    def _run(self) -> None:
        try:
            for block in self._blocks():
                while not self._stop.is_set():
                    try:
                        self._queue.put(block, timeout=0.1)
                        break
                    except queue.Full:
                        continue
            self._put_final(None)
        except BaseException as exc:  # handed to the consumer thread, which re-raises it
            self._put_final(exc)

    def _put_final(self, item: BaseException | None) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def next_block(self) -> bytes | None:
        """The next block, or None at the end of the input."""
        item = self._queue.get()
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
