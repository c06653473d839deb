"""`profscope report` on real profiles: its JSON is the routes' own answers (byte for byte what the
tab gets from the plugin over the same logdir and cache), its Markdown writes the same numbers, each
section appears only where the host has it, and bad input is named with what exists."""

from __future__ import annotations

import gzip
import io
import json
import pathlib

import pytest
from werkzeug.test import Client

from profscope import cli
from profscope.units import format_duration

BASE = "/data/plugin/profscope"


def report(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(["report", *argv], out), out.getvalue()


def tab_answer(tab: Client, route: str, run: str, session: str, host: str) -> dict:
    response = tab.get(f"{BASE}{route}", query_string={"run": run, "session": session, "host": host})
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


@pytest.mark.parametrize(
    ("run", "tools"),
    [("bert_h100", {"overview", "roofline", "memory"}), ("input_bound", {"overview", "memory"})],
)
def test_json_sections_are_the_routes_answers(
    run: str, tools: set[str], cli_logdir: pathlib.Path, cache_dir: pathlib.Path, tab: Client
) -> None:
    code, text = report(str(cli_logdir), run, "--json", "--cache-dir", str(cache_dir))
    assert code == 0, text
    found = json.loads(text)
    subject = found["subject"]
    assert subject["run"] == run
    # Only the tabs the host has: no Roofline for a CPU-only capture, no XLA tab without its logs.
    assert set(found) - {"subject"} == tools
    for tool in tools:
        assert found[tool] == tab_answer(tab, f"/{tool}", run, subject["session"], subject["host"]), tool


def test_markdown_writes_the_tabs_numbers(
    cli_logdir: pathlib.Path, cache_dir: pathlib.Path, tab: Client
) -> None:
    code, text = report(str(cli_logdir), "input_bound", "--cache-dir", str(cache_dir))
    assert code == 0, text
    session = json.loads(report(str(cli_logdir), "input_bound", "--json", "--cache-dir", str(cache_dir))[1])[
        "subject"
    ]
    overview = tab_answer(tab, "/overview", "input_bound", session["session"], session["host"])
    (host,) = overview["per_host"]
    stats = host["steps"]["stats"]
    steps_row = next(line for line in text.splitlines() if line.startswith(f"| {host['host']} |"))
    cells = [c.strip() for c in steps_row.strip("|").split("|")]
    assert cells[1] == str(len(host["steps"]["rows"])) == "8"
    assert cells[4:9] == [
        format_duration(stats[k]) for k in ("median_ns", "p10_ns", "p90_ns", "min_ns", "max_ns")
    ]
    # The input-bound job's reading phase is its finding (tests/data/jobs/FACTS.md), with its cost.
    (finding,) = overview["findings"]
    assert f"| 1 | {finding['title']} | {host['host']} | {format_duration(finding['cost_ns'])} |" in text
    assert "## Phases" in text and "| unknown (4) |" in text
    assert "Not in this profile: roofline, memory, xla." in text


def test_sections_pick_and_xla_findings(
    cli_logdir: pathlib.Path, cache_dir: pathlib.Path, tab: Client
) -> None:
    code, text = report(
        str(cli_logdir), "xla_job", "xla", "--sections", "xla", "--json", "--cache-dir", str(cache_dir)
    )
    assert code == 0, text
    found = json.loads(text)
    assert set(found) == {"subject", "xla"}
    assert found["xla"] == tab_answer(tab, "/xla/report", "xla_job", "xla", "xla")
    code, markdown = report(
        str(cli_logdir), "xla_job", "xla", "--sections", "xla", "--cache-dir", str(cache_dir)
    )
    assert code == 0
    for finding in found["xla"]["findings"]:
        assert f"**{finding['title']}**" in markdown


def test_latest_session_is_the_capture_not_the_xla_logs(
    cli_logdir: pathlib.Path, cache_dir: pathlib.Path
) -> None:
    code, text = report(str(cli_logdir), "xla_job", "--sections", "steps", "--cache-dir", str(cache_dir))
    assert code == 0, text
    assert text.startswith("# profscope report: run `xla_job`, session `2026_12_07_03_21_48`")
    assert "| vm | 10 |" in text  # the XPlane's 10 `train_step` steps


def test_unknown_names_list_what_exists(cli_logdir: pathlib.Path, cache_dir: pathlib.Path) -> None:
    code, text = report(str(cli_logdir), "nope", "--cache-dir", str(cache_dir))
    assert code == 3
    assert "run 'nope' is not in logdir" in text and "'bert_h100'" in text and "'prefetched'" in text
    code, text = report(str(cli_logdir), "bert_h100", "1999", "--cache-dir", str(cache_dir))
    assert code == 3 and "has no session '1999' (sessions: 'pytorch')" in text
    code, text = report(str(cli_logdir), "bert_h100", "pytorch", "ghost", "--cache-dir", str(cache_dir))
    assert code == 3 and "has no host 'ghost' (hosts: 'bert_small')" in text
    code, text = report(str(cli_logdir), "--cache-dir", str(cache_dir))
    assert code == 3 and "name one" in text


def test_bad_section_and_empty_logdir(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        report(str(tmp_path), "--sections", "speed")
    assert exit_.value.code == 3
    assert "unknown section(s) speed" in capsys.readouterr().err
    code, text = report(str(tmp_path), "--cache-dir", str(tmp_path / "cache"))
    assert code == 1 and "No profile data found" in text


def test_unreadable_file_is_named_with_its_reason(tmp_path: pathlib.Path) -> None:
    run = tmp_path / "logdir" / "broken"
    run.mkdir(parents=True)
    # A Chrome trace whose only event is cut off: its head is a trace, nothing in it is readable.
    name = "w.1796612206510119793.pt.trace.json.gz"
    (run / name).write_bytes(
        gzip.compress(b'{"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "a", "ts": 1')
    )
    code, text = report(str(tmp_path / "logdir"), "--cache-dir", str(tmp_path / "cache"))
    assert code == 3
    assert f"cannot read profile {name}: no readable events" in text
