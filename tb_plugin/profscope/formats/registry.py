"""The one table of the input formats profscope reads: id, label, kind, file names and reader.

Everything else asks this table instead of keeping its own list: discovery (`formats.detect` and
`logdir`) for file names, the `.N` ordinal rule and the labels `/runs` sends; the trace engine
(`engine.ingest.manager`, in its child process) and the XLA log loader (`profscope.xla_logs`) for the reader
of a format id; the tools for which formats a host holds. Readers are named "module:function" and
imported on first use, so importing the table costs nothing and never imports a reader.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable
from typing import Any, Literal

XPLANE = "xplane"
CHROME_TRACE = "chrome_trace"
XLA_METRICS = "xla_metrics"
XLA_DEBUG = "xla_debug"
XLA_GRAPHS = "xla_graphs"

# A trace is read into the columnar model (`profscope.model.columns`) and cached; an XLA log is a text
# report parsed on demand into dataclasses.
Kind = Literal["trace", "xla_log"]


@dataclasses.dataclass(frozen=True)
class Format:
    """One input format. `suffixes` are the file-name endings that name a file of this format (the
    first part of the name is then the host); `text_log` formats may also be recognised from the
    content of any `.txt`/`.log` file and carry the `.N` ordinal PyTorch/XLA appends."""

    id: str
    label: str
    kind: Kind
    reader: str
    suffixes: tuple[str, ...]
    text_log: bool = False

    def read(self, *args: Any, **kwargs: Any) -> Any:
        """Run this format's reader (imported on first use)."""
        return reader(self.id)(*args, **kwargs)


# In the order a host lists its files (and the trace view picks its file: the first trace format).
FORMATS: tuple[Format, ...] = (
    Format(XPLANE, "XPlane", "trace", "profscope.formats.xplane.reader:read", (".xplane.pb",)),
    Format(
        CHROME_TRACE,
        "Chrome trace",
        "trace",
        "profscope.formats.chrome.reader:read",
        (".pt.trace.json", ".pt.trace.json.gz", ".trace.json", ".trace.json.gz"),
    ),
    Format(
        XLA_METRICS, "XLA logs", "xla_log", "profscope.formats.xla.metrics:read", (".xla_metrics.txt",), True
    ),
    Format(XLA_DEBUG, "XLA logs", "xla_log", "profscope.formats.xla.debug:read", (".xla_debug.txt",), True),
    Format(
        XLA_GRAPHS, "XLA logs", "xla_log", "profscope.formats.xla.graphs:read", (".xla_graphs.txt",), True
    ),
)
BY_ID: dict[str, Format] = {f.id: f for f in FORMATS}
TRACE_FORMATS: tuple[str, ...] = tuple(f.id for f in FORMATS if f.kind == "trace")
XLA_LOG_FORMATS: tuple[str, ...] = tuple(f.id for f in FORMATS if f.kind == "xla_log")
ORDER: dict[str, int] = {f.id: i for i, f in enumerate(FORMATS)}

# Text logs end in .txt or .log, optionally followed by the process ordinal `.N`.
TEXT_SUFFIXES = (".txt", ".log")
_ORDINAL = re.compile(r"^(?P<base>.+\.(?:txt|log))\.(?P<ordinal>\d+)$")


def split_ordinal(name: str) -> tuple[str, int | None]:
    """(name without the ordinal, ordinal) of a text log: `x.xla_graphs.txt.3` → (`x.xla_graphs.txt`, 3).

    PyTorch/XLA appends the process ordinal to some per-process logs (`XLA_SAVE_TENSORS_FILE`), not
    to others; names that do not end in `.txt.N` / `.log.N` have no ordinal.
    """
    m = _ORDINAL.match(name.rsplit("/", 1)[-1])
    if m is None:
        return name, None
    return name[: len(name) - len(m["ordinal"]) - 1], int(m["ordinal"])


def ordinal_of(path: str) -> int | None:
    """The process ordinal of a text log's path, or None."""
    return split_ordinal(path)[1]


_HOST_ORDINAL = re.compile(r"^(?P<base>.+)\.(?P<ordinal>\d+)$")


def host_name(host: str, ordinal: int | None) -> str:
    """The host a text log of process `ordinal` belongs to: ordinal 0 (or none) stays on `host`,
    ordinal N ≥ 1 goes to `host.N`."""
    return f"{host}.{ordinal}" if ordinal else host


def split_host_name(name: str) -> tuple[str, int | None]:
    """Inverse of `host_name` as far as the name tells: `train.2` → (`train`, 2). Only a hint: the
    caller checks the host's files carry that ordinal (a host may be called `10.0.0.5`)."""
    m = _HOST_ORDINAL.match(name)
    return (m["base"], int(m["ordinal"])) if m else (name, None)


def label(format_id: str | None) -> str | None:
    """What the UI calls a format ("XPlane", "Chrome trace", "XLA logs")."""
    fmt = BY_ID.get(format_id or "")
    return fmt.label if fmt else None


_READERS: dict[str, Callable[..., Any]] = {}


def import_reader(spec: str) -> Callable[..., Any]:
    """The function a "module:function" reader spec names (the ingest child gets specs, not ids)."""
    module, _, function = spec.partition(":")
    return getattr(importlib.import_module(module), function)


def reader(format_id: str) -> Callable[..., Any]:
    """The `read` function of a format, imported on first use; KeyError for an unknown id."""
    found = _READERS.get(format_id)
    if found is None:
        found = _READERS[format_id] = import_reader(BY_ID[format_id].reader)
    return found


def fork_helpers() -> None:
    """Let the readers fork their helper processes from this process instead of starting an
    interpreter each (`common.helper_process.allow_fork`): for a process that exists for one
    ingest, every reader imported (a local ingest child)."""
    from profscope.formats.common import helper_process

    helper_process.allow_fork()
