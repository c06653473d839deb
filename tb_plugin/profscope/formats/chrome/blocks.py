"""Decompressed blocks of a Chrome trace file, read ahead by a background thread.

The first stage of reading: plain bytes or gzip (also concatenated members) in blocks of a few MB.
A damaged or cut gzip stream is not an error here: what inflated before the damage is handed on,
and `truncated_stream` / `corrupt_stream` / `header_cut` tell the reader what to warn about. A
member whose only damage is its trailer (CRC-32 or length) keeps all it inflated and the next member
is read (`trailer_damage`). A stream that inflates
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


# zlib's messages for a gzip trailer that does not match the data, and what the reader says instead.
_TRAILER_CHECKS = {
    "incorrect data check": "the gzip stream's CRC-32 does not match: the data may be damaged",
    "incorrect length check": "the gzip stream's length (ISIZE) does not match the length of the data: "
    "the data may be damaged",
}
# Bytes of the trailer after the CRC-32 (zlib checks the CRC-32 before reading the length).
_ISIZE_BYTES = 4
# Slice of a failed step inflated at once while looking for the byte zlib failed on.
_SALVAGE_SLICE_BYTES = 4096


def gzip_header_length(head: bytes) -> int | None:
    """Length of the gzip member header at the start of `head` (RFC 1952), None when `head` ends
    inside it."""
    if len(head) < 10:
        return None
    flags, at = head[3], 10
    if flags & 4:  # FEXTRA
        if len(head) < at + 2:
            return None
        at += 2 + int.from_bytes(head[at : at + 2], "little")
    for flag in (8, 16):  # FNAME, FCOMMENT: zero-terminated
        if flags & flag:
            end = head.find(b"\x00", at)
            if end < 0:
                return None
            at = end + 1
    if flags & 2:  # FHCRC
        at += 2
    return at if at <= len(head) else None


def _inflate_to_trailer(inflater: Any, piece: memoryview) -> tuple[bytes, int, str] | None:
    """When inflating `piece` failed on the gzip trailer alone: what it inflates to before the
    check (from `inflater`, a copy taken before the step), where in `piece` the check failed (just
    past the byte), and the message; None for damage anywhere else."""
    out: list[bytes] = []
    pos = 0
    while pos < len(piece):
        part = piece[pos : pos + _SALVAGE_SLICE_BYTES]
        before = inflater.copy()
        try:
            out.append(inflater.decompress(part))
            pos += len(part)
            continue
        except zlib.error:
            inflater = before
        for i in range(len(part)):
            try:
                out.append(inflater.decompress(part[i : i + 1]))
            except zlib.error as exc:
                problem = next((m for check, m in _TRAILER_CHECKS.items() if check in str(exc)), None)
                return None if problem is None else (b"".join(out), pos + i + 1, problem)
        return None
    return None


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
        self.header_cut = False  # the input ends inside the first gzip header: nothing inflated
        self.trailer_damage: list[str] = []  # a member's trailer does not match its data
        self._head = b""  # the first bytes of the input, for `header_cut`
        self._skip = 0  # compressed bytes still to pass over (the rest of a damaged trailer)
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
            if not self.raw_bytes_read:
                self._head = block[:1024]
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
            if self._skip:  # the rest of a damaged trailer, before the next member
                passed, piece = piece[: self._skip], piece[self._skip :]
                self._skip -= len(passed)
                self._consumed += len(passed)
                if not piece:
                    continue
            self._consumed += len(piece)
            self._fed = True
            before = self._inflater.copy()  # to read back up to a damaged trailer
            unused: bytes | memoryview | None = None
            try:
                data = self._inflater.decompress(piece)
            except zlib.error as exc:
                salvaged = _inflate_to_trailer(before, piece)
                if salvaged is None:
                    self.corrupt_stream = f"{exc} (after about {self._consumed} compressed bytes)"
                    break
                data, failed_at, problem = salvaged
                if problem not in self.trailer_damage:
                    self.trailer_damage.append(problem)
                # The CRC-32 failed: its length follows; the length failed: the member ends there.
                member_end = failed_at + (_ISIZE_BYTES if "CRC-32" in problem else 0)
                unused = piece[member_end:]
                self._skip = max(0, member_end - len(piece))  # a trailer cut by the step
            out.append(data)
            size += len(data)
            self.inflated_bytes += len(data)
            if unused is None and self._inflater.eof:
                unused = self._inflater.unused_data
            if unused is not None:
                # Concatenated gzip members: what follows starts a new stream (or is padding).
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
            self.header_cut = not self.inflated_bytes and gzip_header_length(self._head) is None

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
        """Stop the read-ahead. A thread waiting for room in the full queue (the reading process
        stopped at the helper's split with blocks read past it) gets it at once, so it sees the stop
        now rather than at its next put timeout (0.04-0.08 s of the decoding's end, measured)."""
        self._stop.set()
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._thread.join(timeout=5)
