"""Which files an XLA answer was read from, what each held and what was skipped: the view's
provenance line, and the files that could not be read at all."""

from __future__ import annotations

from profscope.tools.xla.answers import XlaFileError, XlaSource
from profscope.xla_logs import Loaded, XlaFile


def _source(file: XlaFile, skipped: dict[str, int], warnings: list[str]) -> XlaSource:
    return XlaSource(
        path=file.label,
        format=file.format,
        ordinal=file.ordinal,
        skipped=dict(skipped),
        warnings=list(warnings[:20]),
    )


def sources(loaded: Loaded) -> list[XlaSource]:
    """Per file: what was read (reports and steps, analyses and messages, or graphs) and skipped."""
    out: list[XlaSource] = []
    for file, metrics in loaded.metrics:
        source = _source(file, metrics.skipped, metrics.warnings)
        source.reports = len(metrics.reports)
        source.steps = sum(1 for r in metrics.reports if r.step is not None)
        out.append(source)
    for file, debug in loaded.debug:
        source = _source(file, debug.skipped, debug.warnings)
        source.analyses, source.messages = len(debug.analyses), len(debug.messages)
        out.append(source)
    for file, graphs in loaded.graphs:
        source = _source(file, graphs.skipped, graphs.warnings)
        source.graphs = len(graphs.records)
        out.append(source)
    return out


def errors(loaded: Loaded) -> list[XlaFileError]:
    return [XlaFileError(path=e["path"], format=e["format"], error=e["error"]) for e in loaded.errors]
