"""Which PyTorch/XLA log files one XLA view looks at, and their parsed contents, cached per file.

Discovery gives each host a list of files with a format id (`xla_metrics`, `xla_debug`,
`xla_graphs`) and a URL. PyTorch/XLA appends the device ordinal `.N` to some logs and not others
(`XLA_SAVE_TENSORS_FILE` → `xla_graphs.txt.0`, `XLA_METRICS_FILE` unchanged), so one process's logs
can land in hosts `xla` and `xla.N`; `host_family` gathers them again. Files without an ordinal are
counted with the lowest ordinal present, which is what a single-process run writes.

Parsing is cheap next to a trace, but graph logs of long runs reach hundreds of MB, so each parsed
file is kept in a small LRU keyed by (URL, size, mtime/etag): a re-scan that finds the file unchanged
does not parse it again, an appended file (training still running) is parsed afresh.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import fsspec

from profscope.caches import SingleFlightCache
from profscope.errors import UnreadableProfile
from profscope.formats import registry

if TYPE_CHECKING:
    from profscope.formats.xla import debug as xla_debug
    from profscope.formats.xla import graphs as xla_graphs
    from profscope.formats.xla import metrics as xla_metrics

XLA_FORMATS = registry.XLA_LOG_FORMATS


@dataclasses.dataclass(frozen=True)
class XlaFile:
    """One XLA log to read: by `url` through `fs` (local when None), or already-read `text`."""

    url: str
    format: str
    fs: fsspec.AbstractFileSystem | None = None
    text: str | None = None
    path: str | None = None  # what the UI shows (relative to the logdir); defaults to the URL
    size: int | None = None
    mtime: float | None = None
    etag: str | None = None

    @property
    def label(self) -> str:
        return self.path or self.url

    @property
    def ordinal(self) -> int | None:
        return registry.ordinal_of(self.url)


@dataclasses.dataclass
class Loaded:
    """Parsed files of one view, split by kind; `errors` lists files that could not be read at all."""

    metrics: list[tuple[XlaFile, xla_metrics.MetricsFile]]
    debug: list[tuple[XlaFile, xla_debug.DebugFile]]
    graphs: list[tuple[XlaFile, xla_graphs.GraphsFile]]
    errors: list[dict[str, str]]
    ordinals: list[int | None]
    ordinal: int | None


def parse(file: XlaFile) -> Any:
    """The file read by its format's reader (raises `UnreadableProfile` when nothing is readable)."""
    return registry.reader(file.format)(file.url, file.fs, file.text)


def parse_key(file: XlaFile) -> tuple[Any, ...] | None:
    """What identifies the file's contents for a cache of parsed files: protocol, URL, format, size,
    mtime and ETag (None for text handed over, or a file whose details cannot be had)."""
    if file.text is not None:
        return None
    size, mtime, etag = file.size, file.mtime, file.etag
    if size is None and mtime is None and etag is None:
        try:
            info = (file.fs or fsspec.filesystem("file")).info(file.url)
        except (OSError, ValueError):
            return None
        size, mtime, etag = info.get("size"), info.get("mtime") or info.get("updated"), info.get("ETag")
    protocol = file.fs.protocol if file.fs is not None else "file"
    return (str(protocol), file.url, file.format, size, str(mtime), etag)


def ordinal_groups(files: Iterable[XlaFile]) -> list[int | None]:
    """Ordinals present, lowest first; None only when no file carries one."""
    ordinals = sorted({f.ordinal for f in files if f.ordinal is not None})
    return ordinals or [None]


def load(
    files: Sequence[XlaFile], ordinal: int | None = None, parsed: SingleFlightCache | None = None
) -> Loaded:
    """Parse the files of one device ordinal (default: the lowest), through `parsed` (the plugin's
    cache of parsed files, by `parse_key`) when given.

    A file that cannot be read goes to `errors` with the reason; the others still load.
    """
    files = [f for f in files if f.format in XLA_FORMATS]
    ordinals = ordinal_groups(files)
    chosen = ordinal if ordinal in ordinals else ordinals[0]
    lowest = ordinals[0]
    selected = [f for f in files if f.ordinal == chosen or (f.ordinal is None and chosen == lowest)]
    loaded = Loaded([], [], [], [], ordinals, chosen)
    for file in selected:
        try:
            key = parse_key(file) if parsed is not None else None
            contents = parse(file) if key is None else parsed.get(key, lambda f=file: parse(f))
        except UnreadableProfile as exc:
            loaded.errors.append({"path": file.label, "format": file.format, "error": exc.reason})
            continue
        getattr(
            loaded, {"xla_metrics": "metrics", "xla_debug": "debug", "xla_graphs": "graphs"}[file.format]
        ).append((file, contents))
    return loaded


def host_family(hosts: dict[str, list[int | None]], host: str) -> list[str]:
    """Hosts holding one process's XLA logs: `host`, and the `base`/`base.N` hosts around it.

    `hosts` maps each host name to the ordinals of its files. `base.N` belongs to `base` only when
    its files all end in the ordinal `.N`, so a host named `10.0.0.5` is never taken for `10.0.0` + 5.
    """
    base = _ordinal_base(host, hosts.get(host, []))
    return [n for n, ordinals in hosts.items() if n == host or _ordinal_base(n, ordinals) == base]


def _ordinal_base(name: str, ordinals: list[int | None]) -> str:
    base, ordinal = registry.split_host_name(name)
    if ordinal is not None and ordinals and all(o == ordinal for o in ordinals):
        return base
    return name


def from_profile_files(profile_files: Iterable[Any], fs: fsspec.AbstractFileSystem | None) -> list[XlaFile]:
    """Turn discovery's usable XLA `ProfileFile`s into `XlaFile`s read through the logdir's filesystem."""
    out = []
    for f in profile_files:
        if getattr(f, "error", None) is None and f.format in XLA_FORMATS:
            out.append(
                XlaFile(
                    url=f.fs_path,
                    format=f.format,
                    fs=fs,
                    path=f.path,
                    size=f.size,
                    mtime=f.mtime,
                    etag=getattr(f, "etag", None),
                )
            )
    return out


def host_files(session: Any, hosts: Iterable[Any], fs: fsspec.AbstractFileSystem | None) -> list[XlaFile]:
    """The XLA logs a view of `hosts` reads: each host's files plus those of its ordinal family."""
    ordinals = {
        h.name: [registry.ordinal_of(f.fs_path) for f in h.files if f.format in XLA_FORMATS]
        for h in session.hosts
    }
    wanted: set[str] = set()
    for host in hosts:
        wanted.update(host_family(ordinals, host.name))
    return from_profile_files((f for h in session.hosts if h.name in wanted for f in h.files), fs)
