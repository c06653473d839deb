"""Redaction of an exported trace: what is taken out of names, args and metadata, and what stands in.

Everything is redacted in its JSON text form (a name as its JSON string, an args record as the
object text the cache holds), so one set of patterns serves names, argument values, track and
section names and the metadata's free text, and a replacement never breaks the JSON around it. Each redacted value
becomes `<kind-N>`, N numbered per distinct value in order of first appearance and stable within
one export (the same e-mail is `<email-1>` wherever it appears, in names and args alike), so a
reader of the redacted trace still sees which events share a value.

Patterns, applied one after the other in the order of the table (a value an earlier one replaced
is not looked at again), each only in a text that holds what it starts with:

| kind | matches | becomes |
|---|---|---|
| `secret_value` | a JSON member whose key names a secret (`token`, `password`, `passwd`, `secret`, `api_key`, `access_key`, `private_key`, `auth`, `authorization`, `credential`…) and has a string value; `token=`, `key=`, `api_key=`, `password=`, `pwd=`, `secret=`, `auth=`… followed by a value (`=` or `:`, an optional `Bearer `/`Basic ` before it) | the value: `<secret_value-N>` |
| `host` | a JSON member `hostname`, `host_name`, `host`, `nodename`, `node_name`, `fqdn` with a string value (not `machine`: in `uname` it is the architecture); last of all, the session's host names and those its metadata names (`redact_fields.py`) wherever they stand as a word (file names of paths included) | `<host-N>` |
| `user` | a JSON member `user`, `username`, `user_name`, `login`, `owner` with a string value; the user of a path under `/home/<user>/`, `/Users/<user>/`, `C:\\Users\\<user>\\`, `~<user>/` (counted; the path's folder is replaced whole) | `<user-N>` |
| `bearer_token` | `Bearer <token>` | the token |
| `github_token` | `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` + ≥ 20 letters/digits; `github_pat_…` | `<github_token-N>` |
| `huggingface_token` | `hf_` + ≥ 20 letters/digits | `<huggingface_token-N>` |
| `api_key` | `sk-` + ≥ 20 of letters, digits, `_`, `-` (OpenAI, Anthropic style) | `<api_key-N>` |
| `aws_access_key` | `AKIA` / `ASIA` + 16 capitals or digits | `<aws_access_key-N>` |
| `aws_secret_key` | 40 base64 characters after `aws_secret_access_key` / `aws_secret_key` and `=` or `:` | the key |
| `email` | `local@domain.tld` | `<email-N>` |
| `address` | an IPv4 address, with its `:port` (not a version: not after a word character, `.`, `-`, `+` or `==`, nor before one of them) | `<address-N>` |
| `path` | an absolute path: POSIX `/a/b/…` (not a relative path, a URL or `/device:TPU:0`), `~/…`, Windows `C:\\…\\` (JSON-escaped backslashes or `/`) | its folder: `<path-N>/file.py` (the file name is kept) |
| `long_secret` | a run of ≥ 32 base64 characters standing alone (not part of a longer word with `_` or `-`, so mangled C++ names and kernel names stay) that looks random: hex with digits, letters and ≥ 10 distinct digits, or capitals, small letters, digits and ≥ 16 distinct characters, its runs of small letters shorter than 3 on average (not `CrossEntropyBackward0`) | `<long_secret-N>` |

The metadata of a trace is redacted field by field (`redact_fields.py`): a field whose key names a
host, an address, a user, a path or a machine id is replaced whole by its kind (`machine_id` only
there), the others go through the patterns above.

Optional, structural (the args record is decoded, changed and encoded again):
- `shapes` (`redact_shapes`): the values of `Input Dims`, `Input type`, `Input Strides`, `Concrete
  Inputs` become `<shapes-N>` (numbered per distinct value, so equal shapes stay equal);
- `args` (`redact_args`): every argument value (scalars inside lists and objects too) becomes
  `<redacted>`, unnumbered (a trace has millions of distinct values); keys are kept and then go
  through the patterns above.

Redaction never drops or adds an event: only text inside strings changes. Numbering keeps at most
`MAX_NUMBERED` distinct values per kind; later new values become `<kind>` and the summary says the
count is capped.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import re
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec
import numpy as np

# Distinct values numbered per kind; the memory a redacted export keeps stays bounded.
MAX_NUMBERED = 100_000
# Host names shorter than this are not replaced as words (a host "0" or "gpu" would hit everything).
MIN_HOST_NAME = 3
ARGS_PLACEHOLDER = "<redacted>"
# Distinct values per kind an export preview lists (the summary counts them all).
PREVIEW_VALUES = 200
# Values at least this long keep two characters at each end in a preview, shorter ones one.
MASK_KEEP_TWO = 8
MASK_KEEP_ONE = 4
SHAPE_KEYS = ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")
_SHAPE_KEYS_JSON = tuple(msgspec.json.encode(k) for k in SHAPE_KEYS)

_SECRET_KEYS = (
    r"[A-Za-z0-9_ .-]*?(?:token|password|passwd|secret|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|auth|authorization|credentials?)"
)
_HOST_KEYS = r"hostname|host_name|host|nodename|node_name|fqdn"
_USER_KEYS = r"user|username|user_name|login|owner"
# A JSON string's content: anything but quotes, backslashes and NUL (the record separator), or escapes.
_JSON_STRING = rb'(?:[^"\\\x00]|\\.)*'
_PATH_SEGMENT = rb"[A-Za-z0-9_.@+~-]+"
_PATH_FILE = rb"[A-Za-z0-9_.@+~-]*"
_WIN_SEP = rb"(?:\\\\|/)"
_WIN_SEGMENT = rb'[^\\/:*?"<>|\x00-\x1f]+'

# Each rule is searched alone and only in a text holding one of its triggers (a quick substring
# test; lowercase triggers are looked for in the lowercased text), and every pattern starts with a
# literal or a character set, so the regex engine skips through text that cannot match in C.
# Checks on the character before a match (a token must not continue a word) are made on the match.
_JSON_VALUE = rb'\s*:\s*"(?P<value>' + _JSON_STRING + rb')(?=")'
# `key=value` / `key: value` is found by a key word's root in the lowercased text, then the word
# around it (letters, digits, "_", "-") must be one of the key words, then comes the value.
_KEY_ROOTS = (b"token", b"key", b"pass", b"pwd", b"secret", b"auth")
_KEY_WORD = re.compile(
    rb"aws_secret_access_key|aws_secret_key|token|api[_-]?key|apikey|key|password|passwd|pwd|secret"
    rb"|access[_-]?token|auth[_-]?token|auth|client[_-]?secret"
)
_KEY_WORD_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_-")
_KEY_TAIL = re.compile(rb"\s*[=:]\s*(?:(?:bearer|basic)\s+)?(?P<value>[^\s&;,\"'\\<>\x00]+)", re.IGNORECASE)
_BEARER_TAIL = re.compile(rb"\s+(?P<value>[A-Za-z0-9._~+/=-]{8,})")
_TOKENS = {
    "github_token": re.compile(rb"g(?:h[pousr]_[A-Za-z0-9]{20,}|ithub_pat_[A-Za-z0-9_]{20,})"),
    "huggingface_token": re.compile(rb"hf_[A-Za-z0-9]{20,}"),
    "api_key": re.compile(rb"sk-[A-Za-z0-9_-]{20,}"),
    "aws_access_key": re.compile(rb"A(?:KIA|SIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
}
_TOKEN_TRIGGERS = {
    "github_token": (b"gh", b"github_pat_"),
    "huggingface_token": (b"hf_",),
    "api_key": (b"sk-",),
    "aws_access_key": (b"AKIA", b"ASIA"),
}
# An e-mail is found by its "@domain"; its local part is taken from the text before the "@".
_EMAIL_DOMAIN = re.compile(rb"@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![A-Za-z0-9-])")
_EMAIL_LOCAL = re.compile(rb"[A-Za-z0-9._%+-]{1,64}$")
_TILDE_PATH = re.compile(
    rb"~(?P<user>[A-Za-z0-9_.-]*)/(?:" + _PATH_SEGMENT + rb"/)*(?P<file>" + _PATH_FILE + rb")"
)
_POSIX_PATH = re.compile(rb"/(?:" + _PATH_SEGMENT + rb"/)+(?P<file>" + _PATH_FILE + rb")")
_WINDOWS_PATH = re.compile(
    rb"[A-Za-z]:" + _WIN_SEP + rb"(?:" + _WIN_SEGMENT + _WIN_SEP + rb")+(?P<file>[^\\/:*?\"<>|\x00-\x1f(]*)"
)
# Long secrets: runs of base64 characters found with numpy (a table lookup per byte), then checked.
_BASE64_TABLE = np.zeros(256, bool)
_BASE64_TABLE[list(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")] = True
_EDGE_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")
LONG_SECRET_MIN = 32
MIN_DISTINCT_HEX = 10
MIN_DISTINCT_BASE64 = 16
_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
# Characters that, before a "/", make it part of a relative path, a URL or a word, not a path start
# (after ":" a path starts: `PATH=/a/bin:/b/bin`; a URL's "//" never starts one).
_NOT_PATH_START = _WORD_BYTES | frozenset(b"_.~/-<>")
# The keys of a text's JSON members; the member rule runs only where one of them names a secret,
# a host or a user (finding the keys is quicker than looking for each key word).
_JSON_KEY = re.compile(rb'"([^"\\\x00]{1,64})"\s*:')
_MEMBER_KEY = re.compile(b"(?i:" + "|".join((_SECRET_KEYS, _HOST_KEYS, _USER_KEYS)).encode() + b")")
_SECRET_KEY = re.compile(_SECRET_KEYS.encode(), re.IGNORECASE)
_HOST_KEY = re.compile(rb"(?i:" + _HOST_KEYS.encode() + rb")")
_USER_DIR = re.compile(
    rb"^(?:/home/|/Users/|[A-Za-z]:(?:\\\\|/)Users(?:\\\\|/))(?P<user>[^/\\]+)", re.IGNORECASE
)
_USER_PARENT = re.compile(rb"^(?:/home/|/Users/|[A-Za-z]:(?:\\\\|/)Users(?:\\\\|/))$", re.IGNORECASE)
_OCTET = rb"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = re.compile(_OCTET + rb"(?:\." + _OCTET + rb"){3}(?::[0-9]{1,5})?")
# Around an address: what makes a dotted number a version (`==1.2.3.4`, `12.8.4.1-1`, `v1.2.3.4`).
_NOT_ADDRESS_EDGE = _WORD_BYTES | frozenset(b"._+-")
_DIGIT_TABLE = np.zeros(256, bool)
_DIGIT_TABLE[list(b"0123456789")] = True
# Texts shorter than this go to the address pattern directly; the span of an address's first to
# third dot ("255.255.255.255": 8 bytes).
ADDRESS_SCAN_MIN = 4096
MAX_ADDRESS_DOTS_SPAN = 8
# Runs of small letters: in a random base64 key they average under 2 letters, in an identifier made
# of words (`BinaryCrossEntropyWithLogitsBackward0`) at least this many.
_SMALL_LETTERS = re.compile(rb"[a-z]+")
MIN_WORD_LETTERS = 3
_HEX = re.compile(rb"^(?:0x)?[0-9a-fA-F]+$")
# The summary lists kinds in this order (those never seen are left out).
KINDS = (
    "secret_value",
    "bearer_token",
    "github_token",
    "huggingface_token",
    "api_key",
    "aws_access_key",
    "aws_secret_key",
    "long_secret",
    "email",
    "user",
    "host",
    "address",
    "machine_id",
    "path",
    "shapes",
    "args",
)


@dataclasses.dataclass(frozen=True)
class RedactOptions:
    """What an export takes out: the patterns (`enabled`), and optionally input shapes and every
    argument value."""

    enabled: bool = False
    shapes: bool = False
    args: bool = False


@dataclasses.dataclass(frozen=True)
class Replacement:
    """One distinct redacted value as the export dialog shows it: partly masked, and what stands in."""

    kind: str
    original: str
    replacement: str


@dataclasses.dataclass
class KindCount:
    """One kind of redacted value: how many distinct values and how many places."""

    kind: str
    values: int
    occurrences: int
    capped: bool


Hits = dict[str, int]


class Redactor:
    """Redacts JSON texts of one export, numbering values and counting what it replaced.

    `host_names` are replaced as words wherever they appear (the session's hosts, an XSpace's
    hostnames). The counts are kept per kind: occurrences (places replaced) and distinct values.
    """

    def __init__(self, options: RedactOptions, host_names: Iterable[str] = ()) -> None:
        self.options = options
        self._numbers: dict[str, dict[bytes, int]] = collections.defaultdict(dict)
        self._capped: set[str] = set()
        self._occurrences: collections.Counter[str] = collections.Counter()
        words = sorted(
            {msgspec.json.encode(h)[1:-1] for h in host_names if len(h.strip()) >= MIN_HOST_NAME},
            key=len,
            reverse=True,
        )
        self._host_names = tuple(words)
        self._paths: dict[tuple[bytes, bytes], tuple[bytes, Hits]] = {}
        self._member_patterns: dict[frozenset[bytes], re.Pattern[bytes]] = {}
        self._host_words = (
            re.compile(rb"(?:" + b"|".join(re.escape(w) for w in words) + rb")(?![A-Za-z0-9_])")
            if words
            else None
        )

    # -- numbering and counts -----------------------------------------------------------------
    def placeholder(self, kind: str, value: bytes) -> bytes:
        """`<kind-N>` for `value` (N stable per value within this export)."""
        numbers = self._numbers[kind]
        number = numbers.get(value)
        if number is None:
            if len(numbers) >= MAX_NUMBERED:
                self._capped.add(kind)
                return b"<%s>" % kind.encode()
            number = numbers[value] = len(numbers) + 1
        return b"<%s-%d>" % (kind.encode(), number)

    def count(self, hits: Hits, times: int = 1) -> None:
        """Add `hits` (occurrences by kind of one redaction) `times` over: a name redacted once
        and used by many events counts once per event."""
        for kind, n in hits.items():
            self._occurrences[kind] += n * times

    def summary(self) -> list[KindCount]:
        """Per kind seen: distinct values, places replaced and whether numbering hit its cap."""
        return [
            KindCount(kind, len(self._numbers.get(kind, ())), self._occurrences[kind], kind in self._capped)
            for kind in KINDS
            if self._occurrences[kind]
        ]

    def replacements(self, per_kind: int = PREVIEW_VALUES) -> list[Replacement]:
        """Each distinct value replaced, masked, with what stands in for it: kinds in summary
        order, values in order of first appearance, at most `per_kind` of each kind."""
        out = []
        for kind in KINDS:
            numbers = self._numbers.get(kind, {})
            for value, number in itertools.islice(numbers.items(), per_kind):
                out.append(Replacement(kind, mask(_json_string_text(value)), f"<{kind}-{number}>"))
        return out

    # -- texts --------------------------------------------------------------------------------
    def value(self, kind: str, value: str) -> bytes:
        """`value` replaced whole by its `kind` placeholder (a field known to name a host, a user…),
        as JSON string text, counted; as it is when redaction is off or the value is empty."""
        text = msgspec.json.encode(value)
        if not self.options.enabled or not value.strip() or value.startswith("<"):
            return text
        self.count({kind: 1})
        return b'"%b"' % self.placeholder(kind, text[1:-1])

    def text(self, data: bytes) -> bytes:
        """`data` (JSON text) redacted, counted once."""
        out, hits = self.text_hits(data)
        self.count(hits)
        return out

    def string(self, value: str) -> tuple[bytes, Hits]:
        """A string as redacted JSON string text (quotes included), and its hits (not counted)."""
        return self.text_hits(msgspec.json.encode(value))

    def text_hits(self, data: bytes) -> tuple[bytes, Hits]:
        """`data` (JSON text; records may be joined by NUL) redacted, and the occurrences by kind
        it replaced, which the caller counts (`count`). Values are numbered here."""
        if not self.options.enabled:
            return data, {}
        hits: Hits = {}
        lowered = data.lower()
        member_keys = frozenset(k for k in set(_JSON_KEY.findall(data)) if _MEMBER_KEY.fullmatch(k))
        if member_keys:
            data = self._members(member_keys).sub(lambda m: self._json_member(m, hits), data)
            lowered = data.lower()
        spans, done = [], 0
        for lo, hi, kind in sorted(_key_values(data, lowered) + _bearers(data, lowered)):
            if lo >= done:
                spans.append((lo, hi, self._hit(hits, kind, data[lo:hi])))
                done = hi
        data = _splice(data, spans)
        for kind, pattern in _TOKENS.items():
            if any(t in data for t in _TOKEN_TRIGGERS[kind]):
                data = pattern.sub(lambda m, kind=kind: self._word(m, hits, kind), data)
        if b"@" in data:
            data = self._emails(data, hits)
        if _may_hold_address(data):
            data = _IPV4.sub(lambda m: self._address(m, hits), data)
        if b"~" in data:
            data = _TILDE_PATH.sub(lambda m: self._tilde(m, hits), data)
        if b"/" in data:
            data = _POSIX_PATH.sub(lambda m: self._posix(m, hits), data)
        data = _splice(data, self._windows_paths(data, hits))
        data = _splice(data, self._long_secrets(data, hits))
        if self._host_words is not None and any(h in data for h in self._host_names):
            data = self._host_words.sub(lambda m: self._host(m, hits), data)
        return data, hits

    def _members(self, keys: frozenset[bytes]) -> re.Pattern[bytes]:
        """The pattern of JSON members with one of `keys` and a string value (kept per key set)."""
        pattern = self._member_patterns.get(keys)
        if pattern is None:
            alternatives = b"|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True))
            pattern = self._member_patterns[keys] = re.compile(
                rb'"(?P<key>' + alternatives + rb')"' + _JSON_VALUE
            )
        return pattern

    def _windows_paths(self, data: bytes, hits: Hits) -> list[tuple[int, int, bytes]]:
        """Spans of Windows paths, found by their `X:\\` (JSON-escaped) or `X:/`."""
        spans = []
        for sep in (b":\\\\", b":/"):
            at = data.find(sep)
            while at >= 0:
                drive = at - 1
                m = None
                if (
                    drive >= 0
                    and chr(data[drive]).isalpha()
                    and (drive == 0 or data[drive - 1] not in _WORD_BYTES)
                ):
                    m = _WINDOWS_PATH.match(data, drive)
                if m is not None:
                    folder = m.group(0)[: m.start("file") - m.start()]
                    spans.append((m.start(), m.end(), self._path(hits, folder, m.group("file"))))
                at = data.find(sep, at + len(sep))
        return spans

    def _long_secrets(self, data: bytes, hits: Hits) -> list[tuple[int, int, bytes]]:
        """Spans of long base64 / hex secrets: runs of at least LONG_SECRET_MIN base64 characters
        (with up to two "=" of padding) not joined to a word by "_", "-" or "=" on either side."""
        if len(data) < LONG_SECRET_MIN:
            return []
        inside = _BASE64_TABLE[np.frombuffer(data, np.uint8)]
        edges = np.flatnonzero(np.diff(np.concatenate(([False], inside, [False])).view(np.int8)))
        starts, ends = edges[0::2], edges[1::2]
        long = ends - starts >= LONG_SECRET_MIN
        spans = []
        for lo, hi in zip(starts[long].tolist(), ends[long].tolist()):
            if lo and data[lo - 1] in _EDGE_BYTES:
                continue
            pad = hi
            while pad < len(data) and pad - hi < 2 and data[pad] == 61:  # "="
                pad += 1
            if pad < len(data) and data[pad] in _EDGE_BYTES:
                continue
            value = data[lo:pad]
            if _looks_secret(value):
                spans.append((lo, pad, self._hit(hits, "long_secret", value)))
        return spans

    # -- one kind each ------------------------------------------------------------------------
    def _hit(self, hits: Hits, kind: str, value: bytes) -> bytes:
        hits[kind] = hits.get(kind, 0) + 1
        return self.placeholder(kind, value)

    def _json_member(self, m: re.Match[bytes], hits: Hits) -> bytes:
        key, value = m.group("key"), m.group("value")
        if not value or value.startswith(b"<"):
            return m.group(0)
        kind = (
            "host" if _HOST_KEY.fullmatch(key) else "secret_value" if _SECRET_KEY.fullmatch(key) else "user"
        )
        return m.group(0)[: m.start("value") - m.start()] + self._hit(hits, kind, value)

    def _word(self, m: re.Match[bytes], hits: Hits, kind: str) -> bytes:
        return m.group(0) if _continues_word(m) else self._hit(hits, kind, m.group(0))

    def _emails(self, data: bytes, hits: Hits) -> bytes:
        parts, done = [], 0
        for m in _EMAIL_DOMAIN.finditer(data):
            local = _EMAIL_LOCAL.search(data, max(done, m.start() - 64), m.start())
            if local is None:
                continue
            parts.append(data[done : local.start()])
            parts.append(self._hit(hits, "email", data[local.start() : m.end()]))
            done = m.end()
        parts.append(data[done:])
        return b"".join(parts)

    def _tilde(self, m: re.Match[bytes], hits: Hits) -> bytes:
        if _continues_word(m):
            return m.group(0)
        if m.group("user"):
            self._hit(hits, "user", m.group("user"))
        return self._path(hits, m.group(0)[: m.start("file") - m.start()], m.group("file"))

    def _posix(self, m: re.Match[bytes], hits: Hits) -> bytes:
        at, text = m.start(), m.string
        if at and (text[at - 1] in _NOT_PATH_START or _after_drive(text, at)):
            return m.group(0)
        return self._path(hits, m.group(0)[: m.start("file") - at], m.group("file"))

    def _address(self, m: re.Match[bytes], hits: Hits) -> bytes:
        text, at, end = m.string, m.start(), m.end()
        before = text[at - 1] if at else None
        if before in _NOT_ADDRESS_EDGE or (before == 61 and at > 1 and text[at - 2] == 61):  # "=="
            return m.group(0)
        if end < len(text) and text[end] in _NOT_ADDRESS_EDGE:
            return m.group(0)
        return self._hit(hits, "address", m.group(0))

    def _host(self, m: re.Match[bytes], hits: Hits) -> bytes:
        at = m.start()
        if at and m.string[at - 1] in _WORD_BYTES | frozenset(b"_<-"):
            return m.group(0)
        return self._hit(hits, "host", m.group(0))

    def _path(self, hits: Hits, folder: bytes, name: bytes) -> bytes:
        """A path's folder as `<path-N>` (the user of a user folder counted too); a bare user
        folder (`/home/alice`) has the user as its file name, which becomes `<user-N>`. Paths
        repeat (call stacks): each distinct one is worked out once."""
        known = self._paths.get((folder, name))
        if known is None:
            seen: Hits = {}
            known = (self._new_path(seen, folder, name), seen)
            if len(self._paths) < MAX_NUMBERED:
                self._paths[(folder, name)] = known
        for kind, n in known[1].items():
            hits[kind] = hits.get(kind, 0) + n
        return known[0]

    def _new_path(self, hits: Hits, folder: bytes, name: bytes) -> bytes:
        user = _USER_DIR.match(folder)
        if user is not None:
            self._hit(hits, "user", user.group("user"))
        if _USER_PARENT.match(folder) and name:
            name = self._hit(hits, "user", name)
        elif self._host_words is not None and any(h in name for h in self._host_names):
            name = self._host_words.sub(lambda m: self._host(m, hits), name)
        return self._hit(hits, "path", folder) + b"/" + name

    # -- args records -------------------------------------------------------------------------
    def records(self, records: Sequence[bytes]) -> list[bytes]:
        """Args records (JSON object texts, b"" for none) redacted, in order, each counted."""
        if not self.options.enabled:
            return list(records)
        hits: Hits = {}
        if self.options.args:
            records = [self._all_values(r, hits) if r else r for r in records]
        elif self.options.shapes:
            records = [
                self._shapes(r, hits) if r and any(k in r for k in _SHAPE_KEYS_JSON) else r for r in records
            ]
        self.count(hits)
        joined, hits = self.text_hits(b"\x00".join(records))
        self.count(hits)
        out = joined.split(b"\x00")
        if len(out) != len(records):
            raise AssertionError("a redaction pattern crossed an args record boundary")
        return out

    def _shapes(self, record: bytes, hits: Hits) -> bytes:
        value = _decoded(record)
        if not isinstance(value, dict):
            return record
        for key in SHAPE_KEYS:
            if key in value:
                value[key] = self._hit(hits, "shapes", msgspec.json.encode(value[key])).decode()
        return msgspec.json.encode(value)

    def _all_values(self, record: bytes, hits: Hits) -> bytes:
        value = _decoded(record)
        if value is None:
            return record
        replaced = 0

        def walk(item: Any) -> Any:
            nonlocal replaced
            if isinstance(item, dict):
                return {k: walk(v) for k, v in item.items()}
            if isinstance(item, list):
                return [walk(v) for v in item]
            if item is None:
                return None
            replaced += 1
            return ARGS_PLACEHOLDER

        out = msgspec.json.encode(walk(value))
        hits["args"] = hits.get("args", 0) + replaced
        return out


def is_secret_key(key: str) -> bool:
    """Whether a JSON member's key names a secret (its string value is a `secret_value`)."""
    return _SECRET_KEY.fullmatch(key.encode()) is not None


def mask(value: str) -> str:
    """`value` partly hidden for the preview: `ab…yz` (two characters kept at each end), `a…z` for
    shorter values, `…` for the shortest, so a user recognises a value without showing it whole."""
    if len(value) >= MASK_KEEP_TWO:
        return f"{value[:2]}…{value[-2:]}"
    if len(value) >= MASK_KEEP_ONE:
        return f"{value[0]}…{value[-1]}"
    return "…"


def _json_string_text(value: bytes) -> str:
    """The string a JSON string's content (escapes included) stands for."""
    try:
        return msgspec.json.decode(b'"%b"' % value, type=str)
    except msgspec.DecodeError:
        return value.decode("utf-8", errors="replace")


def _may_hold_address(data: bytes) -> bool:
    """Whether `data` has three dots between digits close enough for an IPv4 address; a long text
    is checked with numpy (a table lookup per byte) before the address pattern tries each digit."""
    if len(data) < ADDRESS_SCAN_MIN:
        return True
    view = np.frombuffer(data, np.uint8)
    digit = _DIGIT_TABLE[view]
    dots = np.flatnonzero((view[1:-1] == 46) & digit[:-2] & digit[2:])  # "."
    return bool(dots.shape[0] >= 3 and (dots[2:] - dots[:-2] <= MAX_ADDRESS_DOTS_SPAN).any())


def _after_drive(text: bytes, at: int) -> bool:
    """Whether `at` follows a drive (`D:`): the Windows path rule takes that path."""
    return (
        at >= 2
        and text[at - 1] == 58  # ":"
        and chr(text[at - 2]).isalpha()
        and (at == 2 or text[at - 3] not in _WORD_BYTES)
    )


def _continues_word(m: re.Match[bytes]) -> bool:
    """Whether the match starts inside a word (a letter or digit before it)."""
    at = m.start()
    return at > 0 and m.string[at - 1] in _WORD_BYTES


def _key_values(data: bytes, lowered: bytes) -> list[tuple[int, int, str]]:
    """(start, end, kind) of the values of `key=value` / `key: value` (see `_KEY_ROOTS`)."""
    found: dict[int, tuple[int, int, str]] = {}
    for root in _KEY_ROOTS:
        at = lowered.find(root)
        while at >= 0:
            start, end = at, at + len(root)
            while start > 0 and lowered[start - 1] in _KEY_WORD_CHARS:
                start -= 1
            while end < len(lowered) and lowered[end] in _KEY_WORD_CHARS:
                end += 1
            word = lowered[start:end]
            tail = _KEY_TAIL.match(data, end) if _KEY_WORD.fullmatch(word) else None
            if tail is not None and (start == 0 or data[start - 1] not in _WORD_BYTES):
                kind = "aws_secret_key" if word.startswith(b"aws_secret") else "secret_value"
                found[tail.start("value")] = (tail.start("value"), tail.end("value"), kind)
            at = lowered.find(root, end)
    return list(found.values())


def _bearers(data: bytes, lowered: bytes) -> list[tuple[int, int, str]]:
    """(start, end, kind) of the tokens after `Bearer `."""
    spans = []
    at = lowered.find(b"bearer")
    while at >= 0:
        tail = _BEARER_TAIL.match(data, at + 6)
        if tail is not None and (at == 0 or data[at - 1] not in _WORD_BYTES):
            spans.append((tail.start("value"), tail.end("value"), "bearer_token"))
        at = lowered.find(b"bearer", at + 6)
    return spans


def _splice(data: bytes, spans: list[tuple[int, int, bytes]]) -> bytes:
    """`data` with each (start, end, replacement) span replaced; spans in order, not overlapping."""
    if not spans:
        return data
    parts, done = [], 0
    for lo, hi, text in spans:
        parts.append(data[done:lo])
        parts.append(text)
        done = hi
    parts.append(data[done:])
    return b"".join(parts)


def _decoded(record: bytes) -> Any:
    try:
        return msgspec.json.decode(record)
    except msgspec.DecodeError:
        return None


def _looks_secret(value: bytes) -> bool:
    """Random-looking: hex with digits and letters and at least MIN_DISTINCT_HEX distinct digits,
    or base64 with capitals, small letters, digits and at least MIN_DISTINCT_BASE64 distinct
    characters. Encoded data with few distinct symbols (an XPlane stat's hex-encoded protobuf,
    padding) is not a key, nor an identifier made of words (its runs of small letters are longer);
    a random 32-character key has about 14 distinct hex digits or 27 distinct base64 characters."""
    body = value.rstrip(b"=")
    has_digit = any(48 <= c <= 57 for c in body)
    if _HEX.match(body):
        return has_digit and any(c > 57 for c in body) and len(set(body.lower())) >= MIN_DISTINCT_HEX
    mixed = has_digit and any(65 <= c <= 90 for c in body) and any(97 <= c <= 122 for c in body)
    if not mixed or len(set(body)) < MIN_DISTINCT_BASE64:
        return False
    runs = _SMALL_LETTERS.findall(body)
    return sum(map(len, runs)) < MIN_WORD_LETTERS * len(runs)
