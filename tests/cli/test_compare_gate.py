"""`profscope compare` and its CI gate on real twins: the input-bound job against its prefetched
twin (tests/data/jobs/FACTS.md: ≈ 34–42 ms against ≈ 4.9–7.5 ms per step) fails a 5 % gate, the
other way passes it, and a CPU-only job against the H100 BERT trace is no valid comparison. The
figures are the Compare tab's answer."""

from __future__ import annotations

import io
import json
import pathlib
import shutil

import pytest
from werkzeug.test import Client

from profscope import cli
from profscope.units import format_duration
from tests.support import DATA_DIR

BASE = "/data/plugin/profscope"


def compare(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(["compare", *argv], out), out.getvalue()


def test_slow_twin_fails_the_gate(cli_logdir: pathlib.Path, cache_dir: pathlib.Path) -> None:
    code, text = compare(
        str(cli_logdir), "prefetched", "input_bound", "--max-slowdown", "5%", "--cache-dir", str(cache_dir)
    )
    assert code == 1, text
    assert (
        "**Gate (--max-slowdown 5.0%)**: failed: slower than the base by more than 5.0% with confidence"
        in text
    )


def test_fast_twin_passes_the_gate(cli_logdir: pathlib.Path, cache_dir: pathlib.Path) -> None:
    code, text = compare(
        str(cli_logdir), "input_bound", "prefetched", "--max-slowdown", "5", "--cache-dir", str(cache_dir)
    )
    assert code == 0, text
    assert "passed: faster than the base" in text


def test_cpu_against_gpu_is_not_valid(cli_logdir: pathlib.Path, cache_dir: pathlib.Path) -> None:
    code, text = compare(
        str(cli_logdir), "prefetched", "bert_h100", "--max-slowdown", "5%", "--cache-dir", str(cache_dir)
    )
    assert code == 2, text
    assert "not valid:" in text and "the devices differ" in text


def test_without_gate_the_tab_numbers_and_status_0(
    cli_logdir: pathlib.Path, cache_dir: pathlib.Path, tab: Client
) -> None:
    code, text = compare(
        str(cli_logdir),
        "prefetched",
        "input_bound",
        "--json",
        "--max-slowdown",
        "5%",
        "--cache-dir",
        str(cache_dir),
    )
    assert code == 1
    found = json.loads(text)
    query = {
        k: found["compare"][side][f]
        for side, p in (("run", ""), ("base", "base_"))
        for f, k in (("run", f"{p}run"), ("session", f"{p}session"), ("host", f"{p}host"))
    }
    answer = tab.get(f"{BASE}/compare", query_string=query).get_json()
    assert found["compare"] == answer
    shift = answer["shift"]
    base_median = answer["base"]["stats"]["median_ns"]
    assert shift["low_ns"] / base_median > 0.05  # what the gate read
    assert found["gate"]["exit"] == 1
    code, markdown = compare(str(cli_logdir), "prefetched", "input_bound", "--cache-dir", str(cache_dir))
    assert code == 0  # no gate asked
    assert f"+{format_duration(shift['shift_ns'])}, " in markdown
    assert "Gate" not in markdown


def test_unknown_run_and_bad_threshold(
    cli_logdir: pathlib.Path, cache_dir: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text = compare(str(cli_logdir), "prefetched", "nope", "--cache-dir", str(cache_dir))
    assert code == 3 and "run 'nope' is not in logdir" in text and "'input_bound'" in text
    with pytest.raises(SystemExit) as exit_:
        compare(str(cli_logdir), "a", "b", "--max-slowdown", "fast")
    assert exit_.value.code == 3
    assert "not a percentage" in capsys.readouterr().err


def test_several_hosts_compare_the_first_and_say_so(tmp_path: pathlib.Path) -> None:
    """Four DDP ranks per run (tests/data/multirank/FACTS.md): Compare takes one host per side."""
    logdir = tmp_path / "logdir"
    for run in ("ddp4_clean", "ddp4_slow_rank"):
        shutil.copytree(DATA_DIR / "multirank" / run, logdir / run)
    code, text = compare(str(logdir), "ddp4_clean", "ddp4_slow_rank", "--cache-dir", str(tmp_path / "cache"))
    assert code == 0, text
    for run in ("ddp4_clean", "ddp4_slow_rank"):
        assert f"- run '{run}' has 4 hosts (rank0, rank1, rank2, rank3): comparing its first, 'rank0'" in text
    assert "host `rank0`" in text
