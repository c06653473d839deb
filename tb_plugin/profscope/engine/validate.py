"""Whether a cache entry that another machine wrote can be trusted, checked whole before it is served.

An entry a Dask worker wrote reaches the server through a shared filesystem: a worker of another
profscope version, a copy gone wrong or a file changed by hand must not be served. `problems` runs
every check of `store` at once instead of spreading them over opening and a background pass: the
format version and the CRC of `meta.json` (`store.read_meta`), the fingerprint the entry was written
for against the one of the source as the server sees it (`store.lookup`), the CRC of every block of
every array and attachment (`store.verify`), and the invariants between columns and metadata
(`store.open_with_extra`).
"""

from __future__ import annotations

import os

import msgspec

from profscope.engine import store


def problems(cache_root: str, key: str) -> list[str]:
    """What is wrong with the entry of fingerprint `key` under `cache_root`; empty when it is
    complete, of this format version, written for this very source version and intact."""
    path = store.entry_dir(cache_root, key)
    meta = store.read_meta(path)
    if meta is None:
        return [_why_unreadable(path)]
    if meta.get("fingerprint") != key:
        return [f"{path} was written for another source (or another version of it)"]
    found = store.verify(path)
    if found:
        return found
    try:
        store.open_with_extra(path)
    except (store.CacheError, KeyError, TypeError, ValueError, OSError) as e:
        return [str(e)]
    return []


def _why_unreadable(path: str) -> str:
    """Why `store.read_meta` refused `path`: absent, of another format version, or damaged."""
    try:
        with open(os.path.join(path, store.META_FILE), "rb") as f:
            raw = f.read()
    except OSError:
        return f"{path} holds no complete entry ({store.META_FILE} is missing)"
    try:
        version = msgspec.json.decode(raw).get("format_version")
    except (msgspec.DecodeError, AttributeError):
        version = None
    if isinstance(version, int) and version != store.FORMAT_VERSION:
        return (
            f"{path} is of cache format v{version}, this profscope reads v{store.FORMAT_VERSION} "
            "(install the same profscope version on the workers and the server)"
        )
    return f"{path}: {store.META_FILE} is damaged (checksum mismatch or not JSON)"
