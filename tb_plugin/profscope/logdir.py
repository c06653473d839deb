"""Find profiles under a logdir (local path or any fsspec URL) and say which tools apply to each.

The logdir is re-scanned at most every few seconds so runs written while training appear without a
restart. A scan lists directories once and reads only a small head of files it has not seen before
(`formats.detect`); nothing here parses a profile, and `Logdir.is_active()` stops at the first hit.
The logdir is never written.

Vocabulary (see docs): a *run* is a folder holding profile data, a *session* is one capture in a
run, a *host* is one file set of a session (an XPlane host, a PyTorch worker or rank).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import os
import re
import stat
import threading
import time
from collections.abc import Iterator
from typing import Any

import fsspec
from fsspec.compression import compr
from fsspec.implementations.local import LocalFileOpener, LocalFileSystem

from profscope.formats import detect, registry
from profscope.formats.common import opening

# Shown verbatim by the empty-logdir message, `profscope ls` and the README.
RECOGNISED_LAYOUTS: tuple[str, ...] = (
    "<run>/plugins/profile/<session>/<host>.xplane.pb  (TensorFlow, JAX, PyTorch/XLA; Vertex AI TensorBoard)",
    "<run>/plugins/profile/<session>/<host>.trace.json[.gz] and other Chrome-trace *.json[.gz]",
    "<run>/<worker>[.<timestamp>].pt.trace.json[.gz]  (PyTorch profiler, tensorboard_trace_handler)",
    "<run>/<host>.xla_metrics.txt, <host>.xla_debug.txt, <host>.xla_graphs.txt[.N]  (PyTorch/XLA logs)",
    "<run>/*.txt, *.log[.N] that start like a PyTorch/XLA metrics report (metrics_report(), "
    "XLA_METRICS_FILE), PT_XLA_DEBUG_FILE log or XLA_SAVE_TENSORS_FILE graph dump",
)

# Session names for files that lie directly in a run folder rather than in plugins/profile/<session>/.
XLA_SESSION = "xla"
PYTORCH_SESSION = "pytorch"
# Files of one PyTorch capture from different workers are written within this many seconds.
PYTORCH_SESSION_WINDOW_S = 60.0
# Deepest folder level below the logdir that is searched (guards against symlink loops).
MAX_DEPTH = 16
DEFAULT_TTL_S = 5.0

# Where the credentials of a protocol come from, for a message about a refused request.
_CREDENTIALS = {
    "s3": "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the machine's role",
    "gs": "GOOGLE_APPLICATION_CREDENTIALS, `gcloud auth application-default login`, or the machine's service account",
}
_CREDENTIALS["s3a"] = _CREDENTIALS["s3"]
_CREDENTIALS["gcs"] = _CREDENTIALS["gs"]
# setup.py extras that bring the fsspec implementation of a protocol.
_EXTRAS = {"gs": "gcs", "gcs": "gcs", "s3": "s3", "s3a": "s3"}

_MS_STAMP = re.compile(r"^(?P<worker>.+)\.(?P<stamp>\d{10,19})$")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DATE_STAMP = re.compile(
    r"^(?P<worker>.+)\.(?P<stamp>(?P<mon>" + "|".join(_MONTHS) + r")_(?P<day>\d{2})_(?P<h>\d{2})_"
    r"(?P<m>\d{2})_(?P<s>\d{2}))\.(?P<pid>\d+)$"
)
_NATURAL_SPLIT = re.compile(r"(\d+)")


@dataclasses.dataclass(frozen=True)
class ProfileFile:
    """One file of a host: where readers open it (`url`, or `fs_path` on `Logdir.fs`) and what it is."""

    name: str
    path: str  # relative to the logdir, "/"-separated: what the UI shows
    url: str  # fsspec URL (a plain path for local files) that readers can open
    fs_path: str  # the same file as a path on the logdir's filesystem
    format: str | None
    size: int | None
    mtime: float | None
    etag: str | None = None
    error: str | None = None
    device_data: bool = False

    @property
    def usable(self) -> bool:
        return self.error is None and self.format is not None


@dataclasses.dataclass
class Host:
    """A file set of one session: one XPlane host, one PyTorch worker/rank, or one XLA process."""

    name: str
    files: list[ProfileFile] = dataclasses.field(default_factory=list)

    @property
    def trace_file(self) -> ProfileFile | None:
        """The file the trace view reads: the first usable XPlane, else the first Chrome trace."""
        for fmt in registry.TRACE_FORMATS:
            for f in self.files:
                if f.usable and f.format == fmt:
                    return f
        return None

    def files_of(self, *formats: str) -> list[ProfileFile]:
        """Usable files of the given formats, in listing order."""
        return [f for f in self.files if f.usable and f.format in formats]


@dataclasses.dataclass
class Session:
    """One capture: `plugins/profile/<session>/`, one PyTorch timestamp group, or loose run files."""

    name: str
    hosts: list[Host] = dataclasses.field(default_factory=list)

    def host(self, name: str) -> Host | None:
        return next((h for h in self.hosts if h.name == name), None)


@dataclasses.dataclass
class Run:
    """A folder under the logdir holding profile data; named by its path relative to the logdir."""

    name: str
    sessions: list[Session] = dataclasses.field(default_factory=list)

    def session(self, name: str) -> Session | None:
        return next((s for s in self.sessions if s.name == name), None)


@dataclasses.dataclass
class Listing:
    """Result of one scan. `errors` are logdir-level problems; file problems sit on the files."""

    logdir: str
    runs: list[Run]
    errors: list[str]
    scanned_at: float

    def run(self, name: str) -> Run | None:
        return next((r for r in self.runs if r.name == name), None)

    @property
    def empty_message(self) -> str | None:
        return None if self.runs else empty_logdir_message(self.logdir)


def empty_logdir_message(logdir: str, *, cli_hint: bool = True) -> str:
    """Say exactly which layouts are looked for, instead of a bare "no profile data"."""
    layouts = "\n".join(f"  - {layout}" for layout in RECOGNISED_LAYOUTS)
    message = (
        f"No profile data found in {logdir}.\n"
        "profscope recognises these layouts (<run> is any folder under the logdir, or the logdir itself):\n"
        f"{layouts}"
    )
    if cli_hint:
        message += f"\nRun `profscope ls {logdir}` in a shell to see what profscope finds there, with the reason for every unreadable file."
    return message


class RefusedFile(OSError):
    """A logdir file that is no regular file inside the logdir (a FIFO, a device, a link out of it)."""


class LogdirFileSystem(LocalFileSystem):
    """The local filesystem of one logdir, whose reads open only regular files inside it.

    Discovery checks a file when it lists it, but a listed file can be replaced afterwards: by a link
    to a file outside the logdir, or by a FIFO whose `open()` would block a server thread for ever. So
    every read checks the descriptor it opened: opened with `O_NONBLOCK` (a FIFO waits for no writer),
    refused unless `fstat` says it is a regular file and, unless links are followed, unless the path it
    resolves to lies in the logdir. The constructor's arguments travel in `to_json()`, so the ingest
    children rebuild the same rules.
    """

    def __init__(self, root: str, follow_symlinks: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.root = self._strip_protocol(root).rstrip("/") or "/"
        self.real_root = os.path.realpath(self.root)
        self.follow_symlinks = follow_symlinks

    def _open(self, path: str, mode: str = "rb", block_size: int | None = None, **kwargs: Any) -> Any:
        if mode != "rb":
            return super()._open(path, mode, block_size, **kwargs)
        return _CheckedFile(self._strip_protocol(path), mode, fs=self, **kwargs)

    def open_checked(self, path: str) -> int:
        """A blocking read-only descriptor of `path`; `RefusedFile` naming it when it is not a
        regular file inside the logdir (a special file is refused before it is opened, when it can be)."""
        path = self._strip_protocol(path)
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise self._refused(path, os.stat(path).st_mode)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode) or not (self.follow_symlinks or self._opened_inside(fd, path)):
                raise self._refused(path, mode)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _opened_inside(self, fd: int, path: str) -> bool:
        """Whether the file behind `fd` lies in the logdir, by the path the kernel gives for the
        descriptor (Linux), else by the resolved name, when that still leads to the same file."""
        try:
            return _inside(os.readlink(f"/proc/self/fd/{fd}"), self.real_root)
        except OSError:
            resolved = os.path.realpath(path)
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(resolved))
            except OSError:
                return False
            return same and _inside(resolved, self.real_root)

    def _refused(self, path: str, mode: int) -> RefusedFile:
        if not stat.S_ISREG(mode):
            kind = opening.kind_of(mode)
            return RefusedFile(f"{self._shown(path)} is {kind}, not a regular file; refused")
        return RefusedFile(
            f"{self._shown(path)} resolves to a file outside the logdir; refused (start TensorBoard with "
            "--profscope_follow_symlinks, the profscope commands with --follow-symlinks, to read links)"
        )

    def _shown(self, path: str) -> str:
        """The path as messages show it: relative to the logdir, non-UTF-8 bytes escaped."""
        inside = path.startswith(self.root.rstrip("/") + "/")
        return printable(path[len(self.root.rstrip("/")) + 1 :] if inside else path)


class _CheckedFile(LocalFileOpener):
    """fsspec's local file, opened through `LogdirFileSystem.open_checked`."""

    def _open(self) -> None:
        if self.f is None or self.f.closed:
            self.f = os.fdopen(self.fs.open_checked(self.path), "rb")
            if self.compression:
                self.f = compr[self.compression](self.f, mode="rb")
            self.size = self.f.seek(0, 2)
            self.f.seek(0)
            self.f.size = self.size


def printable(name: str) -> str:
    """A file or folder name as answers show it and requests name it: bytes that are not UTF-8
    (held by Python as lone surrogates, which no JSON encoder takes) written as `\\xff`."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate that stands for no byte: written as `\udxxx`
            return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return name


class Logdir:
    """Discovery over one logdir, re-scanned at most every `ttl_s` seconds; safe to share between threads.

    A local file or folder that is a symbolic link resolving outside the logdir is skipped (and
    counted in the listing's errors) unless `follow_symlinks`: whoever can write a link into a
    shared logdir must not make the server read, or show the head of, any other file.
    """

    def __init__(
        self,
        url: str,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        fs: fsspec.AbstractFileSystem | None = None,
        follow_symlinks: bool = False,
    ) -> None:
        self.url = url
        self.ttl_s = ttl_s
        self.follow_symlinks = follow_symlinks
        self._fs = fs
        self._root: str | None = None if fs is None else fs._strip_protocol(url).rstrip("/") or "/"
        self._fs_error: str | None = None
        self._lock = threading.Lock()
        self._listing: Listing | None = None
        self._detections: dict[str, tuple[tuple[Any, ...], detect.Detection]] = {}

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        """The logdir's filesystem; raises OSError naming the logdir when it cannot be opened."""
        self._open_fs()
        if self._fs is None:
            raise OSError(self._fs_error)
        return self._fs

    def listing(self, max_age_s: float | None = None) -> Listing:
        """The discovered runs, re-scanning when the last scan is older than `max_age_s` (default ttl)."""
        max_age = self.ttl_s if max_age_s is None else max_age_s
        with self._lock:
            cached = self._listing
            if cached is not None and time.time() - cached.scanned_at < max_age:
                return cached
            self._listing = self._scan()
            return self._listing

    def is_active(self) -> bool:
        """Whether any recognised layout exists; stops at the first hit and never parses a profile."""
        cached = self._listing
        if cached is not None and time.time() - cached.scanned_at < self.ttl_s:
            return bool(cached.runs)
        self._open_fs()
        if self._fs is None:
            return False
        text_candidates: list[_Candidate] = []
        for candidate in self._candidates(errors=None):
            if candidate.match.format is not None:
                return True
            text_candidates.append(candidate)
        return any(found.format is not None for found in self._detect_all(text_candidates))

    # -- scanning ---------------------------------------------------------------------------

    def _open_fs(self) -> None:
        if self._fs is not None or self._fs_error is not None:
            return
        try:
            self._fs, root = fsspec.core.url_to_fs(self.url)
        except (ImportError, ValueError, OSError) as e:
            self._fs_error = f"cannot open logdir {self.url}: {e}"
            extra = _EXTRAS.get(self.url.split("://", 1)[0]) if "://" in self.url else None
            if isinstance(e, ImportError) and extra:
                self._fs_error += f' (pip install "profscope[{extra}]")'
            return
        self._root = root.rstrip("/") or "/"
        if _is_local(self._fs):
            self._fs = LogdirFileSystem(self._root, follow_symlinks=self.follow_symlinks)

    def _scan(self) -> Listing:
        now = time.time()
        shown = printable(self.url)
        self._open_fs()
        if self._fs is None:
            return Listing(shown, [], [printable(str(self._fs_error))], now)
        fs, root = self._fs, self._root
        assert root is not None
        try:
            if not fs.isdir(root):
                what = "is not a folder" if fs.exists(root) else "does not exist"
                return Listing(shown, [], [f"logdir {shown} {what}"], now)
        except OSError as e:
            problem = printable(f"{e}{_credentials_hint(self.url, e)}")
            return Listing(shown, [], [f"cannot read logdir {shown}: {problem}"], now)

        errors: list[str] = []
        candidates = list(self._candidates(errors))
        builder = _TreeBuilder()
        for candidate, found in zip(candidates, self._detect_all(candidates)):
            rel_parts, name = candidate.rel_parts, candidate.name
            if found.format is None and (found.error is None or not candidate.in_session):
                continue
            # Names as answers show them and requests give them back; `fs_path` and `url` open the file.
            host = printable(registry.host_name(found.host, found.ordinal))
            rel_parts, name = tuple(map(printable, rel_parts)), printable(name)
            fs_path = candidate.info["name"]
            profile_file = ProfileFile(
                name=name,
                path="/".join((*rel_parts, name)),
                url=fs_path if _is_local(fs) else fs.unstrip_protocol(fs_path),
                fs_path=fs_path,
                format=found.format,
                size=_as_int(candidate.info.get("size")),
                mtime=_mtime(candidate.info),
                etag=_etag(candidate.info),
                error=None if found.error is None else printable(found.error),
                device_data=found.device_data,
            )
            if candidate.in_session:
                builder.add(_run_name(rel_parts[:-3]), rel_parts[-1], host, profile_file)
            elif found.format == registry.CHROME_TRACE:
                builder.add_pytorch(_run_name(rel_parts), host, profile_file)
            else:
                builder.add(_run_name(rel_parts), XLA_SESSION, host, profile_file)
        seen = {c.info["name"] for c in candidates}
        for stale in set(self._detections) - seen:
            del self._detections[stale]
        return Listing(shown, builder.build(), errors, now)

    def _candidates(self, errors: list[str] | None) -> Iterator[_Candidate]:
        """Files whose place and name fit a recognised layout (content not yet looked at)."""
        assert self._fs is not None
        files = self._walk_local(errors) if _is_local(self._fs) else self._find(errors)
        for rel_parts, name, info in files:
            match = _match(rel_parts, name)
            if match is not None:
                yield _Candidate(rel_parts, name, info, *match)

    def _walk_local(self, errors: list[str] | None) -> Iterator[tuple[tuple[str, ...], str, dict[str, Any]]]:
        """Yield (folder parts relative to the logdir, file name, info) for local files.

        `os.scandir` directly: several times faster than fsspec's `ls`, which a re-scan of a large
        logdir every few seconds notices. Hidden and `__pycache__` folders are skipped, a symlink
        back to an ancestor is not followed, nor (without `follow_symlinks`) one that resolves
        outside the logdir, and a folder that cannot be listed goes to `errors`.
        """
        assert self._root is not None
        real_root = os.path.realpath(self._root)
        outside: list[str] = []
        stack: list[tuple[str, tuple[str, ...]]] = [(self._root, ())]
        while stack:
            folder, rel_parts = stack.pop()
            try:
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as e:
                if errors is not None:
                    errors.append(printable(f"cannot list {folder}: {e.strerror or e}"))
                continue
            subfolders = []
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                try:
                    link = entry.is_symlink()
                    if link and not self.follow_symlinks:
                        target = os.path.realpath(entry.path)
                        if not _inside(target, real_root):
                            if os.path.exists(target):  # a dangling link has nothing to read anyway
                                outside.append("/".join((*rel_parts, entry.name)))
                            continue
                    if entry.is_dir():
                        if (
                            len(rel_parts) < MAX_DEPTH
                            and entry.name != "__pycache__"
                            and not (link and _links_to_ancestor(entry.path, folder))
                        ):
                            subfolders.append((entry.path, (*rel_parts, entry.name)))
                        continue
                    if not entry.is_file():
                        continue
                    stat = entry.stat()
                except OSError:
                    continue  # vanished or a dangling link: nothing to read
                info = {"name": entry.path, "size": stat.st_size, "mtime": stat.st_mtime, "type": "file"}
                yield rel_parts, entry.name, info
            stack.extend(reversed(subfolders))
        if outside and errors is not None:
            errors.append(_outside_links_message(outside))

    def _find(self, errors: list[str] | None) -> Iterator[tuple[tuple[str, ...], str, dict[str, Any]]]:
        """Yield (folder parts, file name, fsspec info) for files of a non-local filesystem.

        One recursive `find`: object stores answer it with a flat, paged listing instead of one
        request per folder. The filesystem's listing cache is dropped first (s3fs and gcsfs keep
        one for the life of the instance), or files written since the first scan would never show.
        """
        fs, root = self._fs, self._root
        assert fs is not None and root is not None
        try:
            fs.invalidate_cache(root)
            found = fs.find(root, maxdepth=MAX_DEPTH + 1, withdirs=False, detail=True)
        except Exception as e:  # any backend error (HTTP, auth) must not break the plugin
            if errors is not None:
                errors.append(f"cannot list {self.url}: {e}{_credentials_hint(self.url, e)}")
            return
        prefix = root if root.endswith("/") else root + "/"
        for path in sorted(found):
            info = found[path]
            if info.get("type") == "directory" or not path.startswith(prefix):
                continue
            parts = path[len(prefix) :].split("/")
            if all(p and not p.startswith(".") and p != "__pycache__" for p in parts):
                yield tuple(parts[:-1]), parts[-1], info

    def _detect_all(self, candidates: list[_Candidate]) -> list[detect.Detection]:
        """Sniff candidates, reusing earlier answers while size and mtime/etag are unchanged, and
        reading the heads of all new or changed files in one batch."""
        assert self._fs is not None
        results: list[detect.Detection | None] = []
        pending: list[int] = []
        keys = []
        for i, c in enumerate(candidates):
            key = (c.match, c.info.get("size"), _mtime(c.info), _etag(c.info))
            keys.append(key)
            cached = self._detections.get(c.info["name"])
            if cached is not None and cached[0] == key:
                results.append(cached[1])
            else:
                results.append(None)
                pending.append(i)
        if pending:
            items = [
                (candidates[i].info["name"], candidates[i].match, _as_int(candidates[i].info.get("size")))
                for i in pending
            ]
            for i, found in zip(pending, detect.detect_many(self._fs, items)):
                self._detections[candidates[i].info["name"]] = (keys[i], found)
                results[i] = found
        return [r for r in results if r is not None]


@dataclasses.dataclass(frozen=True)
class _Candidate:
    rel_parts: tuple[str, ...]
    name: str
    info: dict[str, Any]
    in_session: bool
    match: detect.NameMatch


def discover(url: str, *, follow_symlinks: bool = False) -> Listing:
    """One-off scan of a logdir (the CLI and tests use this; the plugin keeps a `Logdir`)."""
    return Logdir(url, follow_symlinks=follow_symlinks).listing()


class _TreeBuilder:
    """Collects files into run → session → host, grouping loose PyTorch traces into sessions."""

    def __init__(self) -> None:
        self._tree: dict[str, dict[str, dict[str, list[ProfileFile]]]] = {}
        self._pytorch: dict[str, list[tuple[str, ProfileFile]]] = {}

    def add(self, run: str, session: str, host: str, file: ProfileFile) -> None:
        self._tree.setdefault(run, {}).setdefault(session, {}).setdefault(host, []).append(file)

    def add_pytorch(self, run: str, stem: str, file: ProfileFile) -> None:
        self._pytorch.setdefault(run, []).append((stem, file))

    def build(self) -> list[Run]:
        for run, items in self._pytorch.items():
            for session, worker, file in group_pytorch_sessions(items):
                self.add(run, session, worker, file)
        runs = []
        for run_name in sorted(self._tree, key=natural_key):
            sessions = []
            for session_name in sorted(self._tree[run_name], key=natural_key):
                hosts = [
                    Host(name, sorted(files, key=_file_order))
                    for name, files in sorted(self._tree[run_name][session_name].items(), key=_natural_item)
                ]
                sessions.append(Session(session_name, hosts))
            runs.append(Run(run_name, sessions))
        return runs


def group_pytorch_sessions(items: list[tuple[str, Any]]) -> list[tuple[str, str, Any]]:
    """Split `<worker>[.<timestamp>]` stems into (session, worker, item) triples.

    `tensorboard_trace_handler` writes `<worker>.<epoch ms or ns>.pt.trace.json`; other tools write
    `<worker>.<Mon_DD_HH_MM_SS>.<pid>`. Every worker of one capture writes its file within a short
    window, so time-sorted stamps are grouped while they stay within PYTORCH_SESSION_WINDOW_S of the
    group's first one and no worker repeats; the group is named by its first stamp. Files without a
    stamp form the session "pytorch", one host per file stem.
    """
    stamped: list[tuple[float, str, str, Any]] = []
    out: list[tuple[str, str, Any]] = []
    for stem, item in items:
        parsed = _parse_stamp(stem)
        if parsed is None:
            out.append((PYTORCH_SESSION, stem, item))
        else:
            worker, stamp, seconds = parsed
            stamped.append((seconds, stamp, worker, item))
    stamped.sort(key=lambda s: (s[0], s[1], s[2]))
    group_start = 0.0
    group_name = ""
    workers: set[str] = set()
    for seconds, stamp, worker, item in stamped:
        if not group_name or worker in workers or seconds - group_start > PYTORCH_SESSION_WINDOW_S:
            group_start, group_name, workers = seconds, stamp, set()
        workers.add(worker)
        out.append((group_name, worker, item))
    return out


def _parse_stamp(stem: str) -> tuple[str, str, float] | None:
    """(worker, stamp text, stamp in seconds) of a PyTorch trace stem, or None without a stamp."""
    m = _MS_STAMP.match(stem)
    if m:
        digits = m["stamp"]
        return m["worker"], digits, int(digits) / 10 ** (len(digits) - 10)
    m = _DATE_STAMP.match(stem)
    if m:
        # No year in the stamp: a monotonic position within the year is enough for grouping.
        day = _MONTHS.index(m["mon"]) * 31 + int(m["day"])
        seconds = ((day * 24 + int(m["h"])) * 60 + int(m["m"])) * 60 + int(m["s"])
        return m["worker"], m["stamp"], float(seconds)
    return None


# Session folders named by their capture time: XProf's `2026_11_30_00_33_00`.
_XPROF_SESSION = re.compile(r"^(\d{4})_(\d{2})_(\d{2})_(\d{2})_(\d{2})_(\d{2})$")
_STAMP_ONLY = re.compile(r"^\d{10,19}$")
_DATE_ONLY = re.compile(
    r"^(?P<mon>" + "|".join(_MONTHS) + r")_(?P<day>\d{2})_(?P<h>\d{2})_(?P<m>\d{2})_(?P<s>\d{2})$"
)


def session_label(name: str) -> str:
    """How the UI shows a session: a name that is a capture time reads as a date and time.

    A PyTorch session is named by its first file's stamp: epoch digits (ms or ns, shown in the
    server's local time: `1795998778414715306` → `2026-11-30 00:32:58`) or `Nov_30_00_32_58` (no
    year: `Nov 30 00:32:58`); XProf names session folders `2026_11_30_00_33_00`. Other names as they are.
    """
    if _STAMP_ONLY.match(name):
        seconds = int(name) / 10 ** (len(name) - 10)
        try:
            return datetime.datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M:%S")
        except (OverflowError, OSError, ValueError):
            return name
    m = _XPROF_SESSION.match(name)
    if m:
        return "{}-{}-{} {}:{}:{}".format(*m.groups())
    m = _DATE_ONLY.match(name)
    if m:
        return f"{m['mon']} {m['day']} {m['h']}:{m['m']}:{m['s']}"
    return name


@functools.lru_cache(maxsize=65536)
def natural_key(text: str) -> tuple[Any, ...]:
    """Sort key putting rank-2 before rank-10."""
    return tuple(int(p) if p.isdigit() else p.lower() for p in _NATURAL_SPLIT.split(text))


def _natural_item(item: tuple[str, Any]) -> tuple[Any, ...]:
    return natural_key(item[0])


def _file_order(f: ProfileFile) -> tuple[int, str]:
    return (registry.ORDER.get(f.format or "", len(registry.ORDER)), f.name)


def _match(rel_parts: tuple[str, ...], name: str) -> tuple[bool, detect.NameMatch] | None:
    """(in a session folder?, name match) for a file, or None when no layout can hold it."""
    in_session = len(rel_parts) >= 3 and rel_parts[-3:-1] == ("plugins", "profile")
    if not in_session and "plugins" in rel_parts:
        # Other TensorBoard plugins' data, or deeper folders inside a profile session.
        return None
    name_match = detect.match_name(name, in_session=in_session)
    return None if name_match is None else (in_session, name_match)


def _run_name(parts: tuple[str, ...]) -> str:
    return "/".join(parts) if parts else "."


def _is_local(fs: fsspec.AbstractFileSystem) -> bool:
    protocol = fs.protocol
    protocols = (protocol,) if isinstance(protocol, str) else tuple(protocol)
    return "file" in protocols or "local" in protocols


def _credentials_hint(url: str, error: Exception) -> str:
    """For a refused request to an object store: which credentials the server used, by source."""
    where = _CREDENTIALS.get(url.split("://", 1)[0]) if "://" in url else None
    if where is None or not isinstance(error, PermissionError):
        return ""
    return f" (the server's credentials were refused; they come from {where})"


def _inside(path: str, real_root: str) -> bool:
    """Whether a resolved path lies in the (resolved) logdir."""
    return path == real_root or path.startswith(real_root.rstrip(os.sep) + os.sep)


def _outside_links_message(links: list[str]) -> str:
    """Names the links (paths inside the logdir), never where they point."""
    shown = ", ".join(map(printable, links[:5])) + (f" and {len(links) - 5} more" if len(links) > 5 else "")
    return (
        f"skipped {len(links)} symbolic link{'s' if len(links) > 1 else ''} to places outside the logdir "
        f"({shown}); start TensorBoard with --profscope_follow_symlinks (the profscope commands: "
        "--follow-symlinks) to read them"
    )


def _links_to_ancestor(link: str, parent: str) -> bool:
    """A symlinked folder pointing at one of its ancestors would be walked forever."""
    target = os.path.realpath(link)
    here = os.path.realpath(parent)
    return here == target or here.startswith(target.rstrip(os.sep) + os.sep)


def _as_int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) else None


def _mtime(info: dict[str, Any]) -> float | None:
    for key in ("mtime", "LastModified", "updated", "last_modified", "created"):
        value = info.get(key)
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, datetime.datetime):
            return value.timestamp()
        if isinstance(value, str):
            try:
                return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


def _etag(info: dict[str, Any]) -> str | None:
    for key in ("etag", "ETag", "md5Hash", "generation"):
        value = info.get(key)
        if value:
            return str(value).strip('"')
    return None


__all__ = [
    "RECOGNISED_LAYOUTS",
    "Host",
    "Listing",
    "Logdir",
    "ProfileFile",
    "Run",
    "Session",
    "discover",
    "empty_logdir_message",
    "group_pytorch_sessions",
    "natural_key",
    "session_label",
]
