"""The attachments of a spilled builder (named byte strings, e.g. an XPlane's HloProtos), kept in
scratch files and read one at a time when looked up."""

from __future__ import annotations

from collections.abc import Iterator, Mapping


class FileAttachments(Mapping[str, bytes]):
    """`Trace.attachments` of a spilled builder: each read from its scratch file when looked up."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = dict(files)

    def __getitem__(self, name: str) -> bytes:
        with open(self._files[name], "rb") as f:
            return f.read()

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)
