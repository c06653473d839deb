"""Symbolic links in a logdir: a link that resolves outside it is not followed unless TensorBoard
runs with --profscope_follow_symlinks, and no answer quotes a file that is not a profile.

Real links in tmp dirs: a trace-named file linking to /etc/passwd, a folder linking to a folder
outside the logdir holding a real trace, and links that stay inside the logdir (followed).
"""

from __future__ import annotations

import argparse
import io
import pathlib
import shutil

import pytest

from profscope import cli
from profscope import logdir as logdir_lib
from profscope import plugin as plugin_lib
from profscope.formats import detect
from tests.support import DATA_DIR

DATA = DATA_DIR / "trace" / "logdir"
BASE = "/data/plugin/profscope"
PASSWD = pathlib.Path("/etc/passwd")
# What /etc/passwd starts with on every Linux: the bytes that must appear in no answer.
SECRET = b"root:"


@pytest.fixture
def linked(tmp_path: pathlib.Path) -> pathlib.Path:
    """logdir/good/ (a real trace), logdir/leak/x.pt.trace.json -> /etc/passwd, logdir/away ->
    outside/ (a real trace out of the logdir), logdir/alias -> logdir/good (inside)."""
    assert PASSWD.read_bytes().startswith(SECRET)
    logdir = tmp_path / "logdir"
    (logdir / "good").mkdir(parents=True)
    shutil.copy(DATA / "bert" / "bert_small.pt.trace.json.gz", logdir / "good")
    (logdir / "leak").mkdir()
    (logdir / "leak" / "x.pt.trace.json").symlink_to(PASSWD)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(DATA / "ranks" / "rank-0.pt.trace.json.gz", outside)
    (logdir / "away").symlink_to(outside, target_is_directory=True)
    (logdir / "alias").symlink_to(logdir / "good", target_is_directory=True)
    return logdir


def _every_answer(client, listing: dict) -> list[bytes]:
    """/runs and every trace route of every host it lists."""
    bodies = [client.get(f"{BASE}/runs").get_data()]
    for run in listing["runs"]:
        for session in run["sessions"]:
            for host in session["hosts"]:
                query = {"run": run["name"], "session": session["name"], "host": host["name"]}
                for route in ("trace/meta", "trace/search", "trace/summary", "xla/report", "roofline"):
                    bodies.append(client.get(f"{BASE}/{route}", query_string={**query, "q": "a"}).get_data())
    return bodies


def test_links_out_of_the_logdir_are_skipped_by_default(plugin_client, linked: pathlib.Path) -> None:
    _, client = plugin_client(linked)
    listing = client.get(f"{BASE}/runs").get_json()
    assert [r["name"] for r in listing["runs"]] == ["alias", "good"]
    (message,) = listing["errors"]
    assert message.startswith(
        "skipped 2 symbolic links to places outside the logdir (away, leak/x.pt.trace.json)"
    )
    assert "--profscope_follow_symlinks" in message
    assert str(PASSWD) not in message and "outside" not in message.split("(")[1]
    for body in _every_answer(client, listing):
        assert SECRET not in body


def test_follow_flag_reads_links_out_of_the_logdir(plugin_client, linked: pathlib.Path) -> None:
    _, client = plugin_client(linked, profscope_follow_symlinks=True)
    listing = client.get(f"{BASE}/runs").get_json()
    assert [r["name"] for r in listing["runs"]] == ["alias", "away", "good", "leak"]
    assert listing["errors"] == []
    (leak,) = listing["runs"][3]["sessions"][0]["hosts"][0]["files"]
    assert leak["error"] == "not JSON: it starts with a letter; the content is not shown"
    for body in _every_answer(client, listing):
        assert SECRET not in body


def test_loader_defines_the_follow_flag(linked: pathlib.Path, tmp_path: pathlib.Path) -> None:
    from tensorboard.plugins import base_plugin

    parser = argparse.ArgumentParser()
    plugin_lib.ProfscopeLoader().define_flags(parser)
    assert parser.parse_args([]).profscope_follow_symlinks is False
    flags = parser.parse_args(["--profscope_follow_symlinks", "--profscope_cache_dir", str(tmp_path / "c")])
    plugin = plugin_lib.ProfscopeLoader().load(base_plugin.TBContext(logdir=str(linked), flags=flags))
    assert plugin.logdir is not None and plugin.logdir.follow_symlinks is True


def test_cli_commands_skip_links_out_of_the_logdir_unless_told(
    linked: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    out = io.StringIO()
    assert cli.main(["ls", str(linked)], out) == 0
    tree = out.getvalue()
    assert "run away" not in tree and "run leak" not in tree
    assert "ERROR skipped 2 symbolic links to places outside the logdir" in tree
    assert "--follow-symlinks" in tree and SECRET.decode() not in tree

    out = io.StringIO()
    assert cli.main(["ls", "--follow-symlinks", str(linked)], out) == 0
    tree = out.getvalue()
    assert "run away" in tree and "run leak" in tree and "skipped" not in tree
    assert SECRET.decode() not in tree

    cache, written = str(tmp_path / "cache"), tmp_path / "away.json.gz"
    out = io.StringIO()
    assert (
        cli.main(
            ["export", str(linked), "away", "pytorch", "rank-0", "-o", str(written), "--cache-dir", cache],
            out,
        )
        == 2
    )
    assert "has no run 'away'" in out.getvalue() and not written.exists()
    out = io.StringIO()
    args = [
        "export",
        "--follow-symlinks",
        str(linked),
        "away",
        "pytorch",
        "rank-0",
        "-o",
        str(written),
        "--cache-dir",
        cache,
    ]
    assert cli.main(args, out) == 0, out.getvalue()
    assert written.stat().st_size > 0


def test_links_inside_the_logdir_are_followed(tmp_path: pathlib.Path) -> None:
    logdir = tmp_path / "logdir"
    (logdir / "a").mkdir(parents=True)
    shutil.copy(DATA / "bert" / "bert_small.pt.trace.json.gz", logdir / "a")
    (logdir / "b").mkdir()
    (logdir / "b" / "w.pt.trace.json.gz").symlink_to(logdir / "a" / "bert_small.pt.trace.json.gz")
    (logdir / "b" / "dangling.pt.trace.json").symlink_to(tmp_path / "nowhere")
    listing = logdir_lib.discover(str(logdir))
    assert [r.name for r in listing.runs] == ["a", "b"]
    assert listing.errors == []


def test_logdir_that_is_itself_a_link_is_read(tmp_path: pathlib.Path) -> None:
    real = tmp_path / "real"
    (real / "run").mkdir(parents=True)
    shutil.copy(DATA / "bert" / "bert_small.pt.trace.json.gz", real / "run")
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    listing = logdir_lib.discover(str(tmp_path / "link"))
    assert [r.name for r in listing.runs] == ["run"] and listing.errors == []


@pytest.mark.parametrize(
    ("head", "described"),
    [
        (b"root:x:0:0:root:/root:/bin/bash\n", "a letter"),
        (b"<html>proxy error</html>", "markup (an HTML or XML page?)"),
        (b"12345", "a digit"),
        (b"\x00\x01\x02", "a control byte"),
        ("é".encode(), "a non-ASCII byte"),
        (b"#!/bin/sh", "a punctuation mark"),
        (b"\x1f\x8b\x08\x00", "gzip data (a .gz name is missing?)"),
        (b"   \n", "nothing (only whitespace)"),
    ],
)
def test_messages_describe_a_foreign_file_and_never_quote_it(head: bytes, described: str) -> None:
    """`not JSON: starts with 'root:x:0:0:root:'` quoted 16 bytes of whatever the file was."""
    chrome = detect.sniff("x.pt.trace.json", head, detect.NameMatch("chrome_trace", "x"))
    suffix = "; the content is not shown" if head.strip() else ""
    assert chrome.error == f"not JSON: it starts with {described}{suffix}"
    xplane = detect.sniff("x.xplane.pb", head, detect.NameMatch("xplane", "x"))
    if head.strip():
        assert xplane.error == (
            "does not start like an XPlane (XSpace protobuf) file: it starts with "
            f"{detect.describe_start(head)}"
        )
    for error in (chrome.error, xplane.error):
        stripped = head.strip()
        assert error is not None and (not stripped or stripped[:4].decode("latin-1") not in error)
