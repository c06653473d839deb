"""Tools are found by looking at `profscope/tools/`: a new folder is a new tool, with its routes."""

from __future__ import annotations

import pathlib
import sys
import textwrap

import pytest

from profscope import tools
from profscope.logdir import Host, ProfileFile
from tests.support import DATA_DIR

LAYOUTS_LOGDIR = DATA_DIR / "layouts" / "logdir"


@pytest.fixture
def extra_tool(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch):
    """A tool package `echo` in a folder added to `profscope.tools`' search path."""
    folder = tmp_path / "echo"
    folder.mkdir()
    (folder / "__init__.py").write_text(
        textwrap.dedent(
            """
            from profscope.tools import Tool


            def applies(host):
                return host.name.startswith("e")


            def hello(ctx, params):
                return {"run": ctx.run.name, "hosts": [h.name for h in ctx.hosts], "n": params.int("n", 0)}


            TOOL = Tool(id="echo", order=9, applies=applies, routes={"/echo/hello": hello})
            """
        )
    )
    monkeypatch.setattr(tools, "__path__", [*tools.__path__, str(tmp_path)])
    tools.all_tools.cache_clear()
    yield
    sys.modules.pop("profscope.tools.echo", None)
    tools.all_tools.cache_clear()


def test_the_shipped_tools_in_tab_order() -> None:
    assert [t.id for t in tools.all_tools()] == ["overview", "trace", "roofline", "xla", "compare", "memory"]
    assert sorted(tools.routes()) == sorted(
        [f"/trace/{r}" for r in ("meta", "tile", "event", "search", "summary", "critical_path")]
        + [f"/xla/{r}" for r in ("report", "graphs", "graph", "diff")]
        + ["/hlo", "/export", "/export/preview", "/roofline", "/overview", "/compare", "/memory"]
    )


def test_a_new_folder_is_a_new_tool_with_its_routes(extra_tool, plugin_client) -> None:
    host = Host("echo-host", [ProfileFile("x", "x", "x", "x", None, 0, 0.0)])
    assert "echo" in tools.applicable(host)
    assert "/echo/hello" in tools.routes()
    _, client = plugin_client(LAYOUTS_LOGDIR)
    runs = client.get("/data/plugin/profscope/runs").get_json()
    run = runs["runs"][0]
    session = run["sessions"][0]
    host_name = session["hosts"][0]["name"]
    response = client.get(
        f"/data/plugin/profscope/echo/hello?run={run['name']}&session={session['name']}&host={host_name}&n=3"
    )
    assert response.status_code == 200
    assert response.get_json() == {"run": run["name"], "hosts": [host_name], "n": 3}
    bad = client.get(
        f"/data/plugin/profscope/echo/hello?run={run['name']}&session={session['name']}&host=nope"
    )
    assert bad.status_code == 404


def test_two_tools_may_not_claim_one_route(monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = tools.all_tools()
    twin = tools.Tool(
        id="twin", order=99, applies=lambda host: False, routes={"/trace/meta": lambda c, p: {}}
    )
    monkeypatch.setattr(tools, "all_tools", lambda: (*shipped, twin))
    with pytest.raises(ValueError, match="claimed by tools 'trace' and 'twin'"):
        tools.routes()
