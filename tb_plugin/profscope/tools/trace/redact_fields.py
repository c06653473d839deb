"""Redaction of a trace's metadata field by field: the fields whose key says they name a machine, a
person or a path are replaced whole, whatever their value looks like; the others go through the
patterns of `redact.py`.

Text patterns cannot tell a host name from any other word (`a39ca6b8f513` in Kineto's
`metadata.system.uname.node`, `vm` in an XSpace's `hostnames`) nor `/root` from `/host:CPU`; the
key can. A key is read by its last word (`HOSTNAME`, `traceName`, `tw_user`, `MASTER_ADDR`,
`LD_LIBRARY_PATH`: camel case and `_`, `.`, `-`, spaces split words) or its last two:

| kind | last word(s) of the key |
|---|---|
| `host` | `host`, `hosts`, `hostname`, `hostnames`, `host_name`, `node`, `nodename`, `node_name`, `nodelist`, `fqdn`, `cluster` |
| `address` | `addr`, `address`, `ip`, `ips`, `ipaddr`, `ip_address` |
| `user` | `user`, `username`, `user_name`, `login`, `logname`, `owner`, `author`, `started_by`, `created_by` |
| `machine_id` | `uuid`, `guid`, `serial`, `serial_number`, `machine_id`, `boot_id`, `mac`, `mac_address` |
| `path` | `home`, `pwd`, `oldpwd`, `cwd`, `path`, `paths`, `dir`, `dirs`, `directory`, `root`, `prefix`, `folder`, `file`, `filename`, `file_name`, `logdir`, `trace_name` |

Secrets (`HF_TOKEN`, `api_key`, …: `redact.py`'s secret keys) are replaced whole as `secret_value`.
A host, address, user or machine id field is replaced whole (each string of a list too); a path
field goes through the patterns (folders become `<path-N>`, file names stay) and what is left of
an absolute path too short for them (`/root`, `~`) is replaced whole. Everything else is left to
the patterns: `uname.machine` (`x86_64`), `deviceProperties`' GPU names, `distributedInfo`'s ranks,
dtypes and versions survive. The host names found (`host_names`) are also replaced wherever they
stand as a word in the rest of the export.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from profscope.tools.trace import redact
from profscope.tools.trace.redact import Hits, Redactor

_KEY_KINDS = {
    "host": ("host hosts hostname hostnames host_name node nodename node_name nodelist fqdn cluster",),
    "address": ("addr address ip ips ipaddr ip_address",),
    "user": ("user username user_name login logname owner author started_by created_by",),
    "machine_id": ("uuid guid serial serial_number machine_id boot_id mac mac_address",),
    "path": (
        "home pwd oldpwd cwd path paths dir dirs directory root prefix folder file filename file_name"
        " logdir trace_name",
    ),
}
_KIND_OF_WORDS = {word: kind for kind, (words,) in _KEY_KINDS.items() for word in words.split()}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_KEY_SEPARATORS = re.compile(r"[_.\- ]+")
# What the patterns leave of an absolute path in a path field: a single folder (`/root`), `~`.
_SHORT_PATH = re.compile(r"(?<![A-Za-z0-9_.~/<>-])(?:/[A-Za-z0-9_.@+~-]+/?|~[A-Za-z0-9_.-]*/?)(?=$|[:;,\s])")


def field_kind(key: str) -> str | None:
    """The kind of value a metadata field holds by its key (`None`: free text, left to the
    patterns)."""
    if redact.is_secret_key(key):
        return "secret_value"
    words = [w for w in _KEY_SEPARATORS.split(_CAMEL.sub("_", key).lower()) if w]
    if not words:
        return None
    return _KIND_OF_WORDS.get("_".join(words[-2:])) or _KIND_OF_WORDS.get(words[-1])


def host_names(metadata: Any) -> list[str]:
    """The host names and addresses `metadata`'s fields hold (nested objects and lists walked)."""
    found: list[str] = []

    def walk(value: Any, kind: str | None) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, field_kind(str(key)))
        elif isinstance(value, list):
            for item in value:
                walk(item, kind)
        elif isinstance(value, str) and kind in ("host", "address") and value.strip():
            found.append(value)

    walk(metadata, None)
    return found


def redacted_metadata(redactor: Redactor, metadata: Any) -> bytes:
    """`metadata` as JSON text, redacted field by field and counted (as it is when redaction is off)."""
    if not redactor.options.enabled:
        return msgspec.json.encode(metadata)
    hits: Hits = {}
    out = _walk(redactor, metadata, None, hits)
    redactor.count(hits)
    return out


def redacted_source(redactor: Redactor, source: str) -> bytes:
    """A trace's source file (a path or URL) as JSON text: its folder replaced whole (a bucket, a
    logdir under a home), its file name through the patterns (host names in it)."""
    if not redactor.options.enabled:
        return msgspec.json.encode(source)
    cut = max(source.rfind("/"), source.rfind("\\"))
    if cut < 0:
        text, hits = redactor.string(source)
        redactor.count(hits)
        return text
    folder = redactor.value("path", source[: cut + 1])[:-1]
    name, hits = redactor.string(source[cut + 1 :])
    redactor.count(hits)
    return folder + b"/" + name[1:]


def _walk(redactor: Redactor, value: Any, kind: str | None, hits: Hits) -> bytes:
    if isinstance(value, dict):
        members = []
        for key, item in value.items():
            key_text, key_hits = redactor.string(str(key))
            _add(hits, key_hits)
            members.append(key_text + b":" + _walk(redactor, item, field_kind(str(key)), hits))
        return b"{" + b",".join(members) + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(_walk(redactor, item, kind, hits) for item in value) + b"]"
    if not isinstance(value, str):
        return msgspec.json.encode(value)
    if kind is None or kind == "path":
        text, found = redactor.string(value)
        _add(hits, found)
        return text if kind is None else _short_paths(redactor, text, hits)
    if not value.strip() or value.startswith("<"):
        return msgspec.json.encode(value)
    _add(hits, {kind: 1})
    return b'"%b"' % redactor.placeholder(kind, msgspec.json.encode(value)[1:-1])


def _short_paths(redactor: Redactor, text: bytes, hits: Hits) -> bytes:
    """A path field's JSON text with the absolute paths the patterns leave (`/root`) replaced."""
    value = msgspec.json.decode(text, type=str)

    def replace(m: re.Match[str]) -> str:
        _add(hits, {"path": 1})
        return redactor.placeholder("path", msgspec.json.encode(m.group(0))[1:-1]).decode()

    return msgspec.json.encode(_SHORT_PATH.sub(replace, value))


def _add(hits: Hits, more: Hits) -> None:
    for kind, n in more.items():
        hits[kind] = hits.get(kind, 0) + n
