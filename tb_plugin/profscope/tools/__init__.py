"""The tools of the profscope tab: one package per tool, found here by looking, not by a list.

A tool is a folder `tools/<id>/` whose `__init__.py` defines `TOOL = Tool(...)`: its id, its place
among the tabs, `applies(host)` (which hosts get it) and `routes` (URL path under
`/data/plugin/profscope/` → handler). The plugin merges every tool's routes and keeps only what all
share: subject resolution, the 202 answer while a trace is ingested, errors and static files. A
handler takes the request's `HostContext` and `Params` and returns an answer (a `msgspec.Struct`, a
JSON-able dict, a `Binary`, or a `Stream` for a download). Adding a tool adds a folder here and one
under `frontend/src/views/`.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from profscope import logdir
from profscope.analysis.findings import Rule
from profscope.context import HostContext
from profscope.params import Params


@dataclasses.dataclass(frozen=True)
class Binary:
    """A non-JSON answer (e.g. an encoded tile) with its HTTP caching details."""

    data: bytes
    content_type: str = "application/octet-stream"
    content_encoding: str | None = None
    etag: str | None = None
    max_age_s: int | None = None


@dataclasses.dataclass(frozen=True)
class Stream:
    """A download made while it is sent (an export): `chunks` are produced as the response is
    written, so the whole body is never in memory; `filename` makes it an attachment."""

    chunks: Iterable[bytes]
    content_type: str = "application/octet-stream"
    filename: str | None = None


Handler = Callable[[HostContext, Params], Any]


@dataclasses.dataclass(frozen=True)
class Tool:
    """One tab: `order` places it among the host's tools (the one place the tab order is declared:
    `/runs` lists the tools in it and the frontend shows their tabs so), `applies` says which hosts
    get it, `answers` lists the Structs its routes answer with (their schema is checked against the
    frontend's types), and `rules` its finding rules in the order they run (`analysis.findings`)."""

    id: str
    order: int
    applies: Callable[[logdir.Host], bool]
    routes: Mapping[str, Handler] = dataclasses.field(default_factory=dict)
    answers: tuple[type, ...] = ()
    rules: tuple[Rule[Any, Any], ...] = ()


@functools.cache
def all_tools() -> tuple[Tool, ...]:
    """Every tool package under `profscope/tools/`, in tab order."""
    found = []
    for module in pkgutil.iter_modules(__path__):
        if module.ispkg:
            tool = importlib.import_module(f"{__name__}.{module.name}").TOOL
            if tool.id != module.name:
                raise ImportError(f"profscope.tools.{module.name} declares tool id {tool.id!r}")
            found.append(tool)
    return tuple(sorted(found, key=lambda t: (t.order, t.id)))


def applicable(host: logdir.Host) -> list[str]:
    """Ids of the tools that apply to `host`, in tab order."""
    return [tool.id for tool in all_tools() if tool.applies(host)]


def routes() -> dict[str, tuple[Tool, Handler]]:
    """Every tool's routes; two tools claiming one path is an error."""
    merged: dict[str, tuple[Tool, Handler]] = {}
    for tool in all_tools():
        for path, handler in tool.routes.items():
            if path in merged:
                raise ValueError(f"route {path} is claimed by tools {merged[path][0].id!r} and {tool.id!r}")
            merged[path] = (tool, handler)
    return merged
