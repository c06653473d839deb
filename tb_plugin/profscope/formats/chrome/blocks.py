"""Decompressed blocks of a Chrome trace file, read ahead by a background thread.

The first stage of reading: plain bytes or gzip (also concatenated members) in blocks of a few MB.
A damaged or cut gzip stream is not an error here: what inflated before the damage is handed on,
and `truncated_stream` / `corrupt_stream` tell the reader what to warn about. A stream that inflates
far beyond what real traces do (a gzip bomb) is refused with `InflateLimit`, by ratio and by size.
"""

from __future__ import annotations

import queue
import threading
import zlib
from collections.abc import Iterator
from typing import Any

from profscope.model.spill import page_cache as spill_pages

READ_BLOCK_BYTES = 8 << 20
# Compressed bytes inflated per zlib call: damaged data loses at most this much before it.
INFLATE_STEP_BYTES = 64 << 10
# Real traces inflate 10-30 times (JSON of repeated keys); past RATIO_CHECK_BYTES of output, a
# stream inflating more than MAX_INFLATE_RATIO times is refused, and any beyond MAX_INFLATED_BYTES.
MAX_INFLATE_RATIO = 200
RATIO_CHECK_BYTES = 64 << 20
MAX_INFLATED_BYTES = 16 << 30


class InflateLimit(ValueError):
    """A gzip stream inflates beyond the limits (likely a gzip bomb); the message has the numbers."""


def check_inflated(inflated: int, compressed: int, ratio_from: int | None = None) -> None:
    """Raise `InflateLimit` when `inflated` bytes out of `compressed` pass the limits; the ratio is
    checked past `ratio_from` bytes (RATIO_CHECK_BYTES by default)."""
    ratio_from = RATIO_CHECK_BYTES if ratio_from is None else ratio_from
    if inflated > MAX_INFLATED_BYTES:
        raise InflateLimit(
            f"the gzip stream inflates to more than {MAX_INFLATED_BYTES >> 20} MB (the limit) from "
            f"{compressed / 2**20:.1f} MB; refused as a likely gzip bomb"
        )
    if inflated > ratio_from and inflated > MAX_INFLATE_RATIO * max(compressed, 1):
        raise InflateLimit(
            f"the gzip stream inflates {inflated // max(compressed, 1)} times ({inflated >> 20} MB from "
            f"{compressed / 2**20:.2f} MB; the limit is {MAX_INFLATE_RATIO} times past "
            f"{ratio_from >> 20} MB); refused as a likely gzip bomb"
        )


def _only_zeros(*views: memoryview) -> bool:
    """Whether these bytes are all NUL (padding after the last gzip member)."""
    return not any(bytes(v).strip(b"\x00") for v in views)


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
        self.inflated_bytes = 0
        self._consumed = 0  # compressed bytes handed to zlib
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
        drop = spill_pages.DropBehind(self._file, self._start)
        while not self._stop.is_set():
            block = self._file.read(READ_BLOCK_BYTES)
            if not block:
                break
            self.raw_bytes_read += len(block)
            drop.read_to(self._start + self.raw_bytes_read)
            if not self._gzip:
                yield block
                continue
            yield from self._inflate(block)
            if self.corrupt_stream:
                return
        self._finish_inflate()

    def _inflate(self, block: bytes) -> Iterator[bytes]:
        """Inflate one read block in small steps, so damaged data loses little of what precedes it.

        After the end of a gzip member, the rest of its last step (`leftover`) is fed to the next
        member's inflater as a view, never copied: a file of thousands of tiny members costs no
        more than one member."""
        if self._inflater is None:
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)
        out: list[bytes] = []
        size = 0
        view = memoryview(block)
        pos = 0
        leftover = memoryview(b"")
        while leftover or pos < len(view):
            if leftover:
                piece, leftover = leftover[:INFLATE_STEP_BYTES], leftover[INFLATE_STEP_BYTES:]
            else:
                piece = view[pos : pos + INFLATE_STEP_BYTES]
                pos += len(piece)
            self._consumed += len(piece)
            self._fed = True
            try:
                data = self._inflater.decompress(piece)
            except zlib.error as exc:
                self.corrupt_stream = f"{exc} (after about {self._consumed} compressed bytes)"
                break
            out.append(data)
            size += len(data)
            self.inflated_bytes += len(data)
            if self._inflater.eof:
                # Concatenated gzip members: what follows starts a new stream (or is padding).
                unused = self._inflater.unused_data
                self._consumed -= len(unused)  # fed again to the next member
                # Never more than one step: `unused` is the tail of `piece`, and a piece taken
                # from `leftover` took all of it.
                leftover = memoryview(unused)
                self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)
                self._fed = False
                following = bytes(leftover[:1] if leftover else view[pos : pos + 1])
                if following == b"\x00" and _only_zeros(leftover, view[pos:]):
                    leftover, pos = memoryview(b""), len(view)
            check_inflated(self.inflated_bytes, self._consumed)
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
