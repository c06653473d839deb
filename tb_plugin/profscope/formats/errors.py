"""Errors a reader raises when a profile file cannot be used at all.

`UnreadableProfile` is a TensorBoard `PublicError`, so a route that lets it propagate answers with a
clear message naming the file instead of a bare 500. It pickles with its fields intact, because
ingest runs readers in a child process and sends failures back to the server.
"""

from __future__ import annotations

from tensorboard import errors as tb_errors


class UnreadableProfile(tb_errors.PublicError):
    """Nothing in `path` could be read; `reason` says what is wrong (truncated, not XPlane, …)."""

    # 422 Unprocessable Content: the request was fine, the file behind it is not.
    http_code = 422

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"cannot read profile {path}: {reason}")

    def __reduce__(self) -> tuple[type[UnreadableProfile], tuple[str, str]]:
        return (type(self), (self.path, self.reason))
