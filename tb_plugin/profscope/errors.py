"""The error a reader raises when a profile file cannot be used at all, and how a system error is
put into such messages.

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


# What an OSError without an errno text means, by its class (fsspec raises them with only a path).
_OS_ERROR_WORDS: tuple[tuple[type[OSError], str], ...] = (
    (FileNotFoundError, "no such file"),
    (IsADirectoryError, "is a directory"),
    (PermissionError, "permission denied"),
    (TimeoutError, "timed out"),
    (ConnectionError, "connection failed"),
)


def describe_error(exc: BaseException) -> str:
    """`exc` in words for a message that names the file its own way: an OSError by its errno text
    alone ("No such file or directory", never "[Errno 2] …: '/srv/…'", which shows the server's
    paths) or, without one, by its class; other errors (and a plain OSError of ours) by their text."""
    if not isinstance(exc, OSError):
        return str(exc)
    if exc.strerror:
        return exc.strerror
    return next((words for kind, words in _OS_ERROR_WORDS if isinstance(exc, kind)), str(exc))
