"""The error a reader raises when a profile file cannot be used at all.

A plain exception of ours, so readers (which also run in the ingest child process) do not depend on
TensorBoard; the route layer (`profscope.plugin`) turns it into an HTTP answer. It pickles with its
fields intact, because ingest sends failures back from the child to the server.
"""

from __future__ import annotations


class UnreadableProfile(Exception):
    """Nothing in `path` could be read; `reason` says what is wrong (truncated, not XPlane, …)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"cannot read profile {path}: {reason}")

    def __reduce__(self) -> tuple[type[UnreadableProfile], tuple[str, str]]:
        return (type(self), (self.path, self.reason))
