"""Discovery: real layouts from the corpus, local and fsspec `memory://`, re-scans, damage, is_active."""

from __future__ import annotations

import gzip
import importlib.util
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import fsspec
import msgspec
import pytest
from fsspec.implementations.local import LocalFileSystem

from profscope import cli, runs, tools
from profscope import logdir as logdir_lib
from profscope.logdir import Logdir, discover
from tests.support import REPO

LAYOUTS_LOGDIR = REPO / "tests" / "data" / "layouts" / "logdir"

# run → session → host → [(file name, format)], tools — what the copied corpus layouts must give.
EXPECTED = {
    "kineto/cpu_only": {
        "Jul_15_10_52_41": {
            "rank-34": (
                [("rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", "chrome_trace")],
                ["overview", "trace", "compare", "memory"],
            )
        }
    },
    "kineto/mi250_minitoy": {
        "pytorch": {
            "mi250_minitoy": (
                [("mi250_minitoy.pt.trace.json.gz", "chrome_trace")],
                ["overview", "trace", "roofline", "compare", "memory"],
            )
        }
    },
    "kineto/multi_rank_sampled": {
        "pytorch": {
            "rank-0": (
                [("rank-0.pt.trace.json.gz", "chrome_trace")],
                ["overview", "trace", "roofline", "compare", "memory"],
            ),
            "rank-1": (
                [("rank-1.pt.trace.json.gz", "chrome_trace")],
                ["overview", "trace", "roofline", "compare", "memory"],
            ),
        }
    },
    "kineto/v100_resnet50": {
        "1623143089861": {
            "worker0": (
                [("worker0.1623143089861.pt.trace.json.gz", "chrome_trace")],
                ["overview", "trace", "roofline", "compare", "memory"],
            )
        }
    },
    "xla/pytorch_xla_cpu_recompile": {
        "xla": {
            "xla": (
                [
                    ("xla_metrics_per_step.txt", "xla_metrics"),
                    ("xla_metrics_report.txt", "xla_metrics"),
                    ("pt_xla_debug.txt", "xla_debug"),
                    ("xla_graphs.txt.0", "xla_graphs"),
                ],
                ["overview", "xla"],
            )
        }
    },
    "xplane/mi300_jax_conv": {
        "session1": {
            "tw003": ([("tw003.xplane.pb", "xplane")], ["overview", "trace", "roofline", "compare", "memory"])
        }
    },
}


def tree(listing: logdir_lib.Listing) -> dict:
    return {
        run.name: {
            s.name: {h.name: ([(f.name, f.format) for f in h.files], tools.applicable(h)) for h in s.hosts}
            for s in run.sessions
        }
        for run in listing.runs
    }


def all_files(listing: logdir_lib.Listing) -> list[logdir_lib.ProfileFile]:
    return [f for r in listing.runs for s in r.sessions for h in s.hosts for f in h.files]


def test_real_layouts_local() -> None:
    listing = discover(str(LAYOUTS_LOGDIR))
    assert listing.errors == []
    assert tree(listing) == EXPECTED
    assert [r.name for r in listing.runs] == sorted(EXPECTED)
    for f in all_files(listing):
        assert f.error is None
        assert f.url == str(LAYOUTS_LOGDIR / f.path)
        assert f.size == (LAYOUTS_LOGDIR / f.path).stat().st_size
        assert f.mtime == pytest.approx((LAYOUTS_LOGDIR / f.path).stat().st_mtime)


def test_real_layouts_memory_fs(memory_fs: fsspec.AbstractFileSystem, copy_to_fs) -> None:
    copy_to_fs(LAYOUTS_LOGDIR, memory_fs, "/profiles/logdir")
    listing = discover("memory://profiles/logdir")
    assert listing.errors == []
    assert tree(listing) == EXPECTED
    for f in all_files(listing):
        assert f.url == f"memory:///profiles/logdir/{f.path}"
        # The URL alone is enough for a reader to open the file.
        fs, path = fsspec.core.url_to_fs(f.url)
        assert fs.cat_file(path) == (LAYOUTS_LOGDIR / f.path).read_bytes()


def test_host_helpers() -> None:
    listing = discover(str(LAYOUTS_LOGDIR))
    xla_host = listing.run("xla/pytorch_xla_cpu_recompile").session("xla").host("xla")
    assert xla_host.trace_file is None
    assert [f.name for f in xla_host.files_of("xla_graphs")] == ["xla_graphs.txt.0"]
    xplane_host = listing.run("xplane/mi300_jax_conv").session("session1").host("tw003")
    assert xplane_host.trace_file.name == "tw003.xplane.pb"
    assert listing.run("nope") is None
    assert listing.run("xplane/mi300_jax_conv").session("nope") is None


def test_json_shape() -> None:
    listing = discover(str(LAYOUTS_LOGDIR))
    out = msgspec.to_builtins(runs.answer(listing))
    assert out["logdir"] == str(LAYOUTS_LOGDIR)
    assert out["errors"] == []
    assert "empty_message" not in out
    host = out["runs"][-1]["sessions"][0]["hosts"][0]
    assert host == {
        "name": "tw003",
        "files": [
            {
                "name": "tw003.xplane.pb",
                "path": "xplane/mi300_jax_conv/plugins/profile/session1/tw003.xplane.pb",
                "format": "xplane",
                "format_label": "XPlane",
                "size": 267519,
                "mtime": pytest.approx((LAYOUTS_LOGDIR / host["files"][0]["path"]).stat().st_mtime),
            }
        ],
        "tools": ["overview", "trace", "roofline", "compare", "memory"],
    }


def _real(name: str) -> bytes:
    return next(LAYOUTS_LOGDIR.rglob(name)).read_bytes()


def test_pytorch_timestamps_group_into_sessions(tmp_path: pathlib.Path) -> None:
    trace = _real("rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    run = tmp_path / "job"
    run.mkdir()
    # Two captures of a two-worker job (epoch ms stamps, a second apart within a capture), and one
    # worker writing nanosecond stamps as newer PyTorch does.
    names = [
        "host-a_11.1700000000000.pt.trace.json.gz",
        "host-b_12.1700000001200.pt.trace.json.gz",
        "host-a_11.1700000300000.pt.trace.json.gz",
        "host-b_12.1700000300900.pt.trace.json.gz",
        "solo.1700000600000000000.pt.trace.json.gz",
    ]
    for name in names:
        (run / name).write_bytes(trace)
    listing = discover(str(tmp_path))
    sessions = {s.name: [h.name for h in s.hosts] for s in listing.run("job").sessions}
    assert sessions == {
        "1700000000000": ["host-a_11", "host-b_12"],
        "1700000300000": ["host-a_11", "host-b_12"],
        "1700000600000000000": ["solo"],
    }


def test_pytorch_session_grouping_rules() -> None:
    group = logdir_lib.group_pytorch_sessions
    # The same worker twice within the window starts a new session rather than hiding a capture.
    assert group([("w0.1000000000000", 1), ("w0.1000000001000", 2), ("w1.1000000001500", 3)]) == [
        ("1000000000000", "w0", 1),
        ("1000000001000", "w0", 2),
        ("1000000001000", "w1", 3),
    ]
    # Gaps longer than the window split sessions even for different workers.
    window_ms = int(logdir_lib.PYTORCH_SESSION_WINDOW_S * 1000)
    late = 1000000000000 + window_ms + 1
    assert group([("w0.1000000000000", 1), (f"w1.{late}", 2)]) == [
        ("1000000000000", "w0", 1),
        (str(late), "w1", 2),
    ]
    # HTA-style `<rank>.<Mon_DD_HH_MM_SS>.<pid>` stamps group the same way; no stamp → "pytorch".
    assert group(
        [("rank-1.Apr_03_18_51_40.77", "b"), ("rank-0.Apr_03_18_51_38.76", "a"), ("plain", "c")]
    ) == [
        ("pytorch", "plain", "c"),
        ("Apr_03_18_51_38", "rank-0", "a"),
        ("Apr_03_18_51_38", "rank-1", "b"),
    ]


def test_xla_naming_convention_and_ordinals(tmp_path: pathlib.Path) -> None:
    run = tmp_path / "xla_job"
    run.mkdir()
    (run / "worker0.xla_metrics.txt").write_bytes(_real("xla_metrics_report.txt"))
    (run / "worker0.xla_graphs.txt.0").write_bytes(_real("xla_graphs.txt.0"))
    (run / "worker0.xla_graphs.txt.1").write_bytes(_real("xla_graphs.txt.0"))
    (run / "worker0.xla_debug.txt").write_bytes(_real("pt_xla_debug.txt"))
    listing = discover(str(tmp_path))
    assert tree(listing) == {
        "xla_job": {
            "xla": {
                "worker0": (
                    [
                        ("worker0.xla_metrics.txt", "xla_metrics"),
                        ("worker0.xla_debug.txt", "xla_debug"),
                        ("worker0.xla_graphs.txt.0", "xla_graphs"),
                    ],
                    ["overview", "xla"],
                ),
                "worker0.1": ([("worker0.xla_graphs.txt.1", "xla_graphs")], ["overview", "xla"]),
            }
        }
    }


def test_xla_logs_sniffed_inside_session_folder(tmp_path: pathlib.Path) -> None:
    session = tmp_path / "run1" / "plugins" / "profile" / "2024_05_01_10_00_00"
    session.mkdir(parents=True)
    (session / "host0.xplane.pb").write_bytes(_real("tw003.xplane.pb"))
    (session / "metrics.log").write_bytes(_real("xla_metrics_per_step.txt"))
    (session / "readme.txt").write_text("notes about this capture\n")
    listing = discover(str(tmp_path))
    assert tree(listing) == {
        "run1": {
            "2024_05_01_10_00_00": {
                "host0": (
                    [("host0.xplane.pb", "xplane")],
                    ["overview", "trace", "roofline", "compare", "memory"],
                ),
                "xla": ([("metrics.log", "xla_metrics")], ["overview", "xla"]),
            }
        }
    }


def test_chrome_json_in_session_folder_sniffed(tmp_path: pathlib.Path) -> None:
    session = tmp_path / "run" / "plugins" / "profile" / "s1"
    session.mkdir(parents=True)
    kineto = gzip.decompress(_real("mi250_minitoy.pt.trace.json.gz"))
    (session / "host1.trace.json.gz").write_bytes(_real("mi250_minitoy.pt.trace.json.gz"))
    (session / "capture.json").write_bytes(kineto)
    # XProf tool outputs next to the trace are not traces and are not listed.
    (session / "host1.memory_profile.json.gz").write_bytes(
        gzip.compress(b'{"memoryProfilePerAllocator": {}}')
    )
    (session / "host1.overview_page.pb").write_bytes(b"\x0a\x00")
    listing = discover(str(tmp_path))
    hosts = {h.name: [(f.name, f.format) for f in h.files] for h in listing.run("run").session("s1").hosts}
    assert hosts == {
        "capture": [("capture.json", "chrome_trace")],
        "host1": [("host1.trace.json.gz", "chrome_trace")],
    }


def test_ignores_unrelated_files(tmp_path: pathlib.Path) -> None:
    (tmp_path / "run" / ".hidden" / "plugins" / "profile" / "s").mkdir(parents=True)
    (tmp_path / "run" / ".hidden" / "plugins" / "profile" / "s" / "h.xplane.pb").write_bytes(b"\x0a\x00")
    (tmp_path / "run" / "events.out.tfevents.1700000000.host").write_bytes(b"\x00" * 32)
    (tmp_path / "run" / "requirements.txt").write_text("numpy\ntorch\n")
    (tmp_path / "run" / "train.log").write_text("step 1 loss 0.5\n")
    (tmp_path / "run" / "trace.json").write_text('{"traceEvents": []}')
    (tmp_path / "run" / "plugins" / "projector").mkdir(parents=True)
    (tmp_path / "run" / "plugins" / "projector" / "metrics.txt").write_bytes(_real("xla_metrics_report.txt"))
    listing = discover(str(tmp_path))
    assert listing.runs == []
    assert listing.errors == []
    assert not Logdir(str(tmp_path)).is_active()


def test_damaged_files_are_listed_with_errors_beside_good_ones(tmp_path: pathlib.Path) -> None:
    session = tmp_path / "run" / "plugins" / "profile" / "s1"
    session.mkdir(parents=True)
    (session / "good.xplane.pb").write_bytes(_real("tw003.xplane.pb"))
    (session / "empty.xplane.pb").write_bytes(b"")
    (session / "text.xplane.pb").write_text("this is not a protobuf")
    (session / "notgz.trace.json.gz").write_text('{"traceEvents": []}')
    (session / "badgz.trace.json.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 40)
    (session / "html.trace.json").write_text("<html>proxy error</html>")
    loose = tmp_path / "run"
    (loose / "w.xla_metrics.txt").write_text("Traceback (most recent call last):\n")
    listing = discover(str(tmp_path))
    assert listing.errors == []
    by_name = {f.name: f for f in all_files(listing)}
    assert by_name["good.xplane.pb"].error is None
    assert by_name["empty.xplane.pb"].error == "file is empty"
    assert "does not start like an XPlane" in by_name["text.xplane.pb"].error
    assert "not gzip data" in by_name["notgz.trace.json.gz"].error
    assert "corrupt gzip data" in by_name["badgz.trace.json.gz"].error
    assert "not JSON" in by_name["html.trace.json"].error
    assert "no PyTorch/XLA marker" in by_name["w.xla_metrics.txt"].error
    hosts = {h.name: h for h in listing.run("run").session("s1").hosts}
    assert tools.applicable(hosts["good"]) == ["overview", "trace", "roofline", "compare", "memory"]
    assert tools.applicable(hosts["empty"]) == []
    assert tools.applicable(listing.run("run").session("xla").host("w")) == []


def test_unreadable_file_head_is_reported(
    memory_fs: fsspec.AbstractFileSystem, copy_to_fs, monkeypatch
) -> None:
    copy_to_fs(LAYOUTS_LOGDIR / "xplane", memory_fs, "/ld")
    real_cat = type(memory_fs).cat_file

    def failing_cat(self, path, *args, **kwargs):
        if path.endswith("tw003.xplane.pb"):
            raise PermissionError(13, "Permission denied", path)
        return real_cat(self, path, *args, **kwargs)

    monkeypatch.setattr(type(memory_fs), "cat_file", failing_cat)
    (f,) = all_files(discover("memory://ld"))
    assert f.format == "xplane"
    assert f.error.startswith("cannot read the file head:")
    assert "Permission denied" in f.error


def test_unlistable_folder_reported_and_scan_goes_on(tmp_path: pathlib.Path, monkeypatch) -> None:
    shutil.copytree(LAYOUTS_LOGDIR, tmp_path / "ld")
    real_scandir = os.scandir

    def failing_scandir(path):
        if str(path).endswith("/kineto"):
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(logdir_lib.os, "scandir", failing_scandir)
    listing = discover(str(tmp_path / "ld"))
    assert listing.errors == [f"cannot list {tmp_path / 'ld' / 'kineto'}: Permission denied"]
    assert [r.name for r in listing.runs] == ["xla/pytorch_xla_cpu_recompile", "xplane/mi300_jax_conv"]


def test_remote_listing_failure_reported(
    memory_fs: fsspec.AbstractFileSystem, copy_to_fs, monkeypatch
) -> None:
    copy_to_fs(LAYOUTS_LOGDIR, memory_fs, "/ld")

    def failing_find(self, *args, **kwargs):
        raise RuntimeError("403 Forbidden: caller has no storage.objects.list access")

    monkeypatch.setattr(type(memory_fs), "find", failing_find)
    listing = discover("memory://ld")
    assert listing.errors == [
        "cannot list memory://ld: 403 Forbidden: caller has no storage.objects.list access"
    ]
    assert listing.runs == []


def test_new_runs_appear_after_ttl(tmp_path: pathlib.Path) -> None:
    ld = Logdir(str(tmp_path), ttl_s=3600)
    assert ld.listing().runs == []
    (tmp_path / "late").mkdir()
    shutil.copy(next(LAYOUTS_LOGDIR.rglob("rank-0.pt.trace.json.gz")), tmp_path / "late")
    assert ld.listing().runs == []  # still the cached scan
    assert [r.name for r in ld.listing(max_age_s=0).runs] == ["late"]
    assert [r.name for r in Logdir(str(tmp_path), ttl_s=0).listing().runs] == ["late"]


def _count_reads(monkeypatch) -> list[str]:
    """Record the base name of every file whose bytes are read through fsspec's local filesystem."""
    reads: list[str] = []
    cls = LocalFileSystem
    real_cat_file = cls.cat_file

    def counting_cat_file(self, path, *args, **kwargs):
        reads.append(path.rsplit("/", 1)[-1])
        return real_cat_file(self, path, *args, **kwargs)

    monkeypatch.setattr(cls, "cat_file", counting_cat_file)
    return reads


def test_rescan_reads_only_new_or_changed_heads(tmp_path: pathlib.Path, monkeypatch) -> None:
    shutil.copytree(LAYOUTS_LOGDIR, tmp_path / "ld")
    reads = _count_reads(monkeypatch)
    ld = Logdir(str(tmp_path / "ld"), ttl_s=0)
    first = ld.listing()
    assert sorted(reads) == sorted(f.name for f in all_files(first))
    assert len(reads) == 10
    reads.clear()
    assert tree(ld.listing()) == EXPECTED
    assert reads == []
    changed = tmp_path / "ld" / "kineto" / "multi_rank_sampled" / "rank-1.pt.trace.json.gz"
    changed.write_bytes(changed.read_bytes()[:5000])
    os.utime(changed, (time.time() + 10, time.time() + 10))
    ld.listing()
    assert reads == ["rank-1.pt.trace.json.gz"]


def test_is_active_never_reads_profiles(monkeypatch) -> None:
    reads = _count_reads(monkeypatch)
    assert Logdir(str(LAYOUTS_LOGDIR / "xplane")).is_active()
    assert Logdir(str(LAYOUTS_LOGDIR / "kineto")).is_active()
    assert reads == []


def test_is_active_cases(tmp_path: pathlib.Path) -> None:
    assert not Logdir(str(tmp_path)).is_active()
    assert not Logdir(str(tmp_path / "missing")).is_active()
    assert not Logdir("nosuchprotocol://bucket/logs").is_active()
    # A loose XLA log with an arbitrary name counts once its head is sniffed.
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "report.txt").write_bytes(_real("xla_metrics_report.txt"))
    assert Logdir(str(tmp_path)).is_active()


def test_logdir_level_errors(tmp_path: pathlib.Path) -> None:
    missing = discover(str(tmp_path / "missing"))
    assert missing.errors == [f"logdir {tmp_path / 'missing'} does not exist"]
    assert missing.runs == []
    (tmp_path / "file").write_text("x")
    assert discover(str(tmp_path / "file")).errors == [f"logdir {tmp_path / 'file'} is not a folder"]
    (error,) = discover("nosuchprotocol://bucket/logs").errors
    assert error.startswith("cannot open logdir nosuchprotocol://bucket/logs:")


def test_logdir_itself_as_run(tmp_path: pathlib.Path) -> None:
    shutil.copy(next(LAYOUTS_LOGDIR.rglob("rank-0.pt.trace.json.gz")), tmp_path)
    listing = discover(str(tmp_path))
    assert [(r.name, r.sessions[0].name, r.sessions[0].hosts[0].name) for r in listing.runs] == [
        (".", "pytorch", "rank-0")
    ]


def test_symlink_loop_terminates(tmp_path: pathlib.Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(next(LAYOUTS_LOGDIR.rglob("rank-0.pt.trace.json.gz")), run)
    (run / "loop").symlink_to(tmp_path, target_is_directory=True)
    listing = discover(str(tmp_path))
    assert [r.name for r in listing.runs] == ["run"]


def test_empty_message_lists_every_layout(tmp_path: pathlib.Path) -> None:
    listing = discover(str(tmp_path))
    message = msgspec.to_builtins(runs.answer(listing))["empty_message"]
    assert message.startswith(f"No profile data found in {tmp_path}.")
    for layout in logdir_lib.RECOGNISED_LAYOUTS:
        assert f"  - {layout}\n" in message + "\n"


def test_the_docs_document_the_same_layouts() -> None:
    """docs/LOGDIR.md (the README links it) lists exactly what discovery looks for."""
    docs = (REPO / "docs" / "LOGDIR.md").read_text(encoding="utf-8")
    for layout in logdir_lib.RECOGNISED_LAYOUTS:
        assert layout in docs
    assert "docs/LOGDIR.md" in (REPO / "README.md").read_text(encoding="utf-8")


def test_natural_order() -> None:
    names = ["rank-10", "rank-2", "Rank-1", "rank-0"]
    assert sorted(names, key=logdir_lib.natural_key) == ["rank-0", "Rank-1", "rank-2", "rank-10"]


def test_missing_filesystem_package_names_the_extra() -> None:
    if importlib.util.find_spec("gcsfs") is not None:
        pytest.skip("gcsfs is installed here")
    (error,) = discover("gs://bucket/logs").errors
    assert error.startswith("cannot open logdir gs://bucket/logs:")
    assert error.endswith('(pip install "profscope[gcs]")')


def test_cli_ls_tree(layouts_logdir: pathlib.Path) -> None:
    session = layouts_logdir / "xplane" / "mi300_jax_conv" / "plugins" / "profile" / "session1"
    (session / "cut.xplane.pb").write_bytes(b"")
    out = io.StringIO()
    assert cli.main(["ls", str(layouts_logdir)], out=out) == 0
    text = out.getvalue()
    assert text.startswith(f"logdir {layouts_logdir}\n")
    assert (
        "run kineto/v100_resnet50\n  session 1623143089861\n    host worker0  tools: overview, trace, roofline, compare, memory\n"
        in text
    )
    assert (
        "      kineto/v100_resnet50/worker0.1623143089861.pt.trace.json.gz  chrome_trace  1.1 MiB\n" in text
    )
    assert (
        "    host cut  tools: none (no readable file)\n"
        "      xplane/mi300_jax_conv/plugins/profile/session1/cut.xplane.pb  xplane  0 B\n"
        "        ERROR file is empty\n"
    ) in text


def test_cli_ls_json_and_exit_codes(tmp_path: pathlib.Path) -> None:
    out = io.StringIO()
    assert cli.main(["ls", "--json", str(LAYOUTS_LOGDIR)], out=out) == 0
    assert json.loads(out.getvalue()) == msgspec.to_builtins(runs.answer(discover(str(LAYOUTS_LOGDIR))))
    out = io.StringIO()
    assert cli.main(["ls", str(tmp_path)], out=out) == 1
    assert logdir_lib.RECOGNISED_LAYOUTS[0] in out.getvalue()
    assert "profscope ls" not in out.getvalue()  # no advice to run the command being run
    out = io.StringIO()
    assert cli.main(["ls", str(tmp_path / "missing")], out=out) == 2
    assert f"ERROR logdir {tmp_path / 'missing'} does not exist" in out.getvalue()


def test_console_script() -> None:
    script = pathlib.Path(sys.executable).parent / "profscope"
    result = subprocess.run([str(script), "ls", str(LAYOUTS_LOGDIR)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert (
        "run xla/pytorch_xla_cpu_recompile\n  session xla\n    host xla  tools: overview, xla\n"
        in result.stdout
    )
