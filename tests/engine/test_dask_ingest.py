"""Ingest fanned out on a real Dask cluster (a `LocalCluster` of 2 worker processes on loopback):
`profscope ingest` builds a 16-host session that TensorBoard then serves without ingesting, a worker
killed mid-task is replaced, a corrupt file is reported by name, entries that do not check out are
refused and rebuilt, and a merged timeline shows its hosts as they arrive.

The sessions are copies of real corpus files (tests/data). Workers import this module to reach
its readers (`slow_read`, `gated_read`): real readers that first wait, so a test can act while
a task runs.
"""

from __future__ import annotations

import io
import os
import pathlib
import random
import shutil
import signal
import time
import urllib.parse

import fsspec
import numpy as np
import pytest

from profscope import cli
from profscope import logdir as logdir_lib
from profscope.engine import progressive, store, validate
from profscope.engine import service as trace_service
from profscope.engine.answers import Ingesting
from profscope.engine.ingest import children as ingest_children
from profscope.engine.ingest import fanout
from profscope.engine.ingest import manager as ingest
from profscope.formats import registry
from profscope.model.columns import TraceBuilder
from tests.support import DATA_DIR

DATA = DATA_DIR
BASE = "/data/plugin/profscope"
SESSION = "2026_12_01_10_00_00"
XPLANES = ["mi300_jax_conv", "tpu_v6e_inference", "gpu_8x_tf_training"]
KINETO = ["rank-0.pt", "rank-1.pt", "bert_small.pt", "alexnet.pt"]
XPLANE_READER = ingest.READERS["xplane"]


def slow_read(path, fs, progress=None):
    """The XPlane reader, but its first call (over all processes) sleeps a minute first: the
    test kills the worker running it. Each call appends its pid to `<path>.calls`."""
    calls = pathlib.Path(path + ".calls")
    first = not calls.exists()
    with open(calls, "a") as log:
        log.write(f"{os.getpid()}\n")
    if first:
        time.sleep(60)
    return registry.import_reader(XPLANE_READER)(path, fs, progress)


def failing_read(path, fs, progress=None):
    """A reader that fails as a bug would (not a bad file): each call appends to `<path>.calls`."""
    with open(path + ".calls", "a") as log:
        log.write(f"{os.getpid()}\n")
    raise RuntimeError("reader bug")


def gated_read(path, fs, progress=None):
    """The XPlane reader, once `<path>.gate` is gone (at most a minute)."""
    deadline = time.monotonic() + 60
    while os.path.exists(path + ".gate") and time.monotonic() < deadline:
        time.sleep(0.05)
    return registry.import_reader(XPLANE_READER)(path, fs, progress)


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        ) as local,
        distributed.Client(local, set_as_default=False) as client,
    ):
        yield client


def make_session(root: pathlib.Path, files: dict[str, pathlib.Path]) -> pathlib.Path:
    """A logdir with run `run`, one session, and a host per entry of `files` (host name → source)."""
    folder = root / "run" / "plugins" / "profile" / SESSION
    folder.mkdir(parents=True)
    for host, source in files.items():
        suffix = ".xplane.pb" if source.name.endswith(".xplane.pb") else ".trace.json.gz"
        shutil.copyfile(source, folder / f"{host}{suffix}")
    return root


def corpus_hosts(n: int) -> dict[str, pathlib.Path]:
    """`n` hosts, half XPlanes and half Kineto traces of the corpus, in turn."""
    xplanes = [DATA / "xplane" / f"{name}.xplane.pb" for name in XPLANES]
    kineto = [DATA / "kineto" / f"{name}.trace.json.gz" for name in KINETO]
    return {f"h{i:02d}": (xplanes if i % 2 else kineto)[(i // 2) % (3 if i % 2 else 4)] for i in range(n)}


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = cli.main(["ingest", *argv], out)
    return code, out.getvalue()


def meta_url(hosts: list[str]) -> str:
    query = urllib.parse.urlencode({"run": "run", "session": SESSION, "host": ",".join(hosts)})
    return f"{BASE}/trace/meta?{query}"


def sources(logdir: pathlib.Path) -> dict[str, trace_service.HostSource]:
    """The hosts of the logdir's session as the server opens them, by host name."""
    listing = logdir_lib.discover(str(logdir))
    hosts = listing.runs[0].sessions[0].hosts
    return {h.name: s for h, s in zip(hosts, trace_service.host_sources(hosts, fsspec.filesystem("file")))}


def key_of(source: trace_service.HostSource) -> str:
    return ingest.source_key(source.source)[0]


def count_calls(monkeypatch, owner, name: str) -> list[int]:
    """Count the calls of `owner.name` (still calling it)."""
    calls = [0]
    original = getattr(owner, name)

    def counting(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counting)
    return calls


def wait_for(condition, timeout_s: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached after {timeout_s} s")
        time.sleep(0.05)


def test_a_cluster_ingests_16_hosts_that_tensorboard_serves_without_an_ingest_of_its_own(
    cluster, tmp_path, plugin_client, monkeypatch
):
    logdir = make_session(tmp_path / "logdir", corpus_hosts(16))
    cache = tmp_path / "shared-cache"
    code, out = run_cli(str(logdir), "--cache-dir", str(cache), "--scheduler", cluster.scheduler.address)
    assert code == 0, out
    assert out.count("built   run/plugins/profile/") == 16, out
    assert "16 trace files: 16 built, 0 already cached, 0 failed" in out
    assert not any((cache / "tmp").iterdir()) and not any((cache / "progress").iterdir())

    starts = count_calls(monkeypatch, ingest.IngestManager, "_start")
    handed = count_calls(monkeypatch, ingest_children.Template, "hand_over")
    plugin, client = plugin_client(logdir, profscope_cache_dir=str(cache))
    hosts = [f"h{i:02d}" for i in range(16)]
    res = client.get(meta_url(hosts))
    assert res.status_code == 200, res.get_data(as_text=True)
    meta = res.get_json()
    assert [h["name"] for h in meta["hosts"]] == hosts
    assert meta["pending_hosts"] == []
    assert {h["format"] for h in meta["hosts"]} == {"xplane", "chrome_trace"}
    assert meta["num_events"] > 100_000
    # Tiles of the hosts of one capture (the corpus files were recorded years apart, and hosts
    # whose clocks are months apart cannot share one ps timeline): rank-0/rank-1 copies and the
    # XPlane without a clock origin.
    together = ["h00", "h02", "h05", "h08", "h10", "h11"]
    level = client.get(meta_url(together)).get_json()["tile"]["max_level"]
    query = urllib.parse.urlencode({"run": "run", "session": SESSION, "host": ",".join(together)})
    tile = client.get(f"{BASE}/trace/tile?{query}&level={level}&index=0")
    assert tile.status_code == 200 and tile.data.startswith(b"PST1")
    assert starts[0] == 0 and handed[0] == 0, "the server ingested a file the cluster had built"
    plugin.trace_service().manager.close()

    code, out = run_cli(str(logdir), "--cache-dir", str(cache), "--scheduler", cluster.scheduler.address)
    assert code == 0 and "16 trace files: 0 built, 16 already cached, 0 failed" in out, out


def test_a_worker_killed_mid_task_is_replaced_and_the_file_ingested(cluster, tmp_path):
    logdir = make_session(tmp_path / "logdir", {"victim": DATA / "xplane" / "tpu_v6e_inference.xplane.pb"})
    cache = str(tmp_path / "cache")
    (host,) = sources(logdir).values()
    spec = fanout.job_spec(host.source, cache, {"xplane": "tests.engine.test_dask_ingest:slow_read"})
    future = fanout.submit(cluster, spec)
    calls = pathlib.Path(host.source.url + ".calls")
    first = int(wait_for(lambda: calls.exists() and calls.read_text().split(), what="task start")[0])
    os.kill(first, signal.SIGKILL)
    answer = fanout.result_of(future, host.source.url)
    assert answer["code"] == 0, answer
    pids = [int(p) for p in calls.read_text().split()]
    assert len(pids) == 2 and pids[1] != first, "the task ran again in another worker process"
    assert validate.problems(cache, spec["key"]) == []
    assert store.open(store.entry_dir(cache, spec["key"])).num_events == 28375


def test_a_task_that_raises_is_retried_then_reported_with_its_error(cluster, tmp_path):
    logdir = make_session(tmp_path / "logdir", {"buggy": DATA / "xplane" / "mi300_jax_conv.xplane.pb"})
    (host,) = sources(logdir).values()
    files = [(host.label, host.source)]
    (outcome,) = fanout.ingest_files(
        cluster,
        files,
        str(tmp_path / "cache"),
        readers={"xplane": "tests.engine.test_dask_ingest:failing_read"},
        retries=1,
    )
    assert not outcome.ok
    message = outcome.error["message"]
    assert message.startswith(
        f"ingest of {pathlib.Path(host.source.url).name} failed: RuntimeError: reader bug (on worker tcp://"
    )
    assert len(pathlib.Path(host.source.url + ".calls").read_text().split()) == 2, "run once, retried once"


def test_a_corrupt_source_is_reported_by_name_and_the_others_built(cluster, tmp_path):
    broken = tmp_path / "broken.trace.json.gz"
    good = (DATA / "kineto" / "rank-1.pt.trace.json.gz").read_bytes()
    noise = random.Random(13).randbytes(len(good) - 2000)
    broken.write_bytes(good[:2000] + noise)  # the head sniffs as a Kineto trace, the body is no gzip
    logdir = make_session(
        tmp_path / "logdir",
        {
            "good0": DATA / "xplane" / "mi300_jax_conv.xplane.pb",
            "good1": DATA / "kineto" / "rank-0.pt.trace.json.gz",
            "bad": broken,
        },
    )
    code, out = run_cli(
        str(logdir), "--cache-dir", str(tmp_path / "cache"), "--scheduler", cluster.scheduler.address
    )
    assert code == 1, out
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1, out
    assert failed[0].startswith(
        f"FAILED  run/plugins/profile/{SESSION}/bad.trace.json.gz: cannot read profile "
    )
    assert "bad.trace.json.gz: damaged gzip data" in failed[0]
    assert "3 trace files: 2 built, 0 already cached, 1 failed" in out


def test_the_cli_refuses_an_object_store_cache_and_reports_an_empty_logdir(tmp_path):
    code, out = run_cli(str(tmp_path), "--cache-dir", "s3://bucket/cache", "--workers", "1")
    assert code == 2 and "an object store cannot do" in out
    code, out = run_cli(str(tmp_path), "--cache-dir", str(tmp_path / "cache"), "--workers", "1")
    assert code == 2 and "no trace file to ingest" in out


def test_damaged_or_foreign_worker_entries_are_refused_and_rebuilt_on_the_cluster(
    cluster, tmp_path, plugin_client, monkeypatch
):
    hosts = {
        name: DATA / "kineto" / f"{name}.trace.json.gz"
        for name in ("rank-0.pt", "rank-1.pt", "bert_small.pt")
    }
    logdir = make_session(
        tmp_path / "logdir", {"a": hosts["rank-0.pt"], "b": hosts["rank-1.pt"], "c": hosts["bert_small.pt"]}
    )
    cache = tmp_path / "cache"
    code, out = run_cli(str(logdir), "--cache-dir", str(cache), "--scheduler", cluster.scheduler.address)
    assert code == 0, out
    keys = {name: key_of(s) for name, s in sources(logdir).items()}
    entry = {name: pathlib.Path(store.entry_dir(str(cache), key)) for name, key in keys.items()}
    durations = entry["a"] / "ev_dur_ps.npy"
    data = bytearray(durations.read_bytes())
    data[-1] ^= 0xFF
    durations.write_bytes(bytes(data))  # same size: only the block checksum tells
    shutil.rmtree(entry["b"])
    shutil.copytree(entry["c"], entry["b"])  # a valid entry, but of another source
    assert "block" in validate.problems(str(cache), keys["a"])[0]
    assert "another source" in validate.problems(str(cache), keys["b"])[0]

    starts = count_calls(monkeypatch, ingest.IngestManager, "_start")
    spawned = count_calls(monkeypatch, ingest_children.ChildPool, "spawn")
    plugin, client = plugin_client(
        logdir, profscope_cache_dir=str(cache), profscope_dask_scheduler=cluster.scheduler.address
    )
    stages = set()

    def served():
        """The merged view of both hosts; until then the stages of the 202s and of the hosts a
        partial view (200, one host ready) still waits for."""
        res = client.get(meta_url(["a", "b"]))
        if res.status_code == 202:
            stages.update(f["stage"] for f in res.get_json()["files"])
            return None
        assert res.status_code == 200, res.get_data(as_text=True)
        answer = res.get_json()
        stages.update(p["stage"] for p in answer["pending_hosts"])
        return None if answer["pending_hosts"] else answer

    meta = wait_for(served, what="trace/meta of the rebuilt hosts")
    assert [h["name"] for h in meta["hosts"]] == ["a", "b"]
    assert starts[0] == 2, "both refused entries were rebuilt"
    assert spawned[0] == 0, "no local ingest process with --profscope_dask_scheduler"
    assert stages <= {fanout.QUEUED_STAGE, "reading", "indexing", fanout.VALIDATING_STAGE}
    assert validate.problems(str(cache), keys["a"]) == validate.problems(str(cache), keys["b"]) == []
    plugin.trace_service().manager.runner.close()


def test_the_server_refuses_what_a_worker_wrote_when_it_does_not_check_out_and_asks_again(
    cluster, tmp_path, monkeypatch
):
    logdir = make_session(tmp_path / "logdir", {"h": DATA / "xplane" / "mi300_jax_conv.xplane.pb"})
    (host,) = sources(logdir).values()
    submitted = count_calls(monkeypatch, fanout, "submit")
    real_problems = validate.problems
    verdicts: list[list[str]] = []

    def first_refused(root, key):
        found = (
            ["array ev_start_ps: block 0 is damaged (checksum mismatch)"]
            if not verdicts
            else real_problems(root, key)
        )
        verdicts.append(found)
        return found

    monkeypatch.setattr(validate, "problems", first_refused)
    runner = fanout.DaskRunner(cluster.scheduler.address)
    manager = ingest.IngestManager(str(tmp_path / "cache"), runner=runner)
    try:
        opened = manager.wait(host.source, timeout_s=60)
    finally:
        runner.close()
    assert opened.trace.num_events == 3952
    assert submitted[0] == 2 and len(verdicts) == 2 and verdicts[1] == []


def test_a_merged_timeline_shows_its_hosts_as_they_arrive(cluster, tmp_path):
    files = {
        "k0": DATA / "kineto" / "rank-0.pt.trace.json.gz",
        "k1": DATA / "kineto" / "rank-1.pt.trace.json.gz",
    }
    files.update({f"x{i}": DATA / "xplane" / "mi300_jax_conv.xplane.pb" for i in range(3)})
    logdir = make_session(tmp_path / "logdir", files)
    hosts = sources(logdir)
    gates = [pathlib.Path(hosts[f"x{i}"].source.url + ".gate") for i in range(3)]
    for gate in gates:
        gate.touch()
    runner = fanout.DaskRunner(cluster.scheduler.address)
    readers = {**ingest.READERS, "xplane": "tests.engine.test_dask_ingest:gated_read"}
    manager = ingest.IngestManager(str(tmp_path / "cache"), readers=readers, runner=runner)
    service = trace_service.TraceService(manager=manager)
    every = [hosts[name] for name in ("k0", "x0", "k1", "x1", "x2")]
    try:
        wait_for(
            lambda: not isinstance(service.open("s", [hosts["k0"], hosts["k1"]]), Ingesting), what="k0, k1"
        )

        def partial_with_a_queued_host():
            got = service.open("s", every, partial=True)
            stages = {p.stage for p in getattr(got, "pending", [])}
            return got if {fanout.QUEUED_STAGE, "reading"} <= stages else None

        shown = wait_for(partial_with_a_queued_host, what="two hosts read, one queued")
        assert progressive.is_partial(shown)
        meta = shown.meta()
        assert [h.name for h in meta.hosts] == ["k0", "k1"]
        assert sorted(p.name for p in meta.pending_hosts) == ["x0", "x1", "x2"]
        assert {p.path for p in meta.pending_hosts} == {hosts[f"x{i}"].label for i in range(3)}
        assert isinstance(service.open("s", every), Ingesting), "a caller that needs every host still waits"
        for gate in gates:
            gate.unlink()

        def complete():
            got = service.open("s", every, partial=True)
            return None if progressive.is_partial(got) or isinstance(got, Ingesting) else got

        timeline = wait_for(complete, what="every host")
        assert [h.name for h in timeline.meta().hosts] == ["k0", "x0", "k1", "x1", "x2"]
        assert timeline.meta().pending_hosts == []
        assert service.open("s", every) is timeline
    finally:
        runner.close()


def test_validation_names_what_is_wrong_with_an_entry(tmp_path):
    root = str(tmp_path / "cache")
    builder = TraceBuilder("mem://t", "test")
    track = builder.track(builder.section("host", "cpu"), "main")
    builder.add_events(track, [0, 5], [10, 2], [builder.intern("op")] * 2)
    trace = builder.finalize()
    key = "ab" * 32
    assert "is missing" in validate.problems(root, key)[0]
    path = pathlib.Path(store.write(trace, root, key, extra={"x": np.arange(3)}, extra_meta={}))
    assert validate.problems(root, key) == []
    meta = (path / store.META_FILE).read_bytes()
    version = f'"format_version":{store.FORMAT_VERSION}'.encode()
    (path / store.META_FILE).write_bytes(meta.replace(version, b'"format_version":1', 1))
    assert "is of cache format v1, this profscope reads" in validate.problems(root, key)[0]
    (path / store.META_FILE).write_bytes(meta[:-10])
    assert f"{store.META_FILE} is damaged" in validate.problems(root, key)[0]


def test_ingest_task_refuses_a_job_of_another_cache_format(tmp_path):
    answer = fanout.ingest_task(
        {"url": "x", "cache_root": str(tmp_path), "key": "k" * 64, "format_version": 1}
    )
    assert answer["code"] == 1 and "cache format" in answer["error"]["message"]


def test_an_unreachable_scheduler_fails_each_job_with_one_connection_attempt(monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(fanout, "CONNECT_TIMEOUT_S", 0.5)
    runner = fanout.DaskRunner("tcp://127.0.0.1:1")
    finished: list[tuple[int, dict | None]] = []
    started = time.monotonic()
    for i in range(4):
        runner.submit(
            {"url": f"f{i}", "cache_root": "/nowhere", "key": f"{i}" * 64},
            lambda s: None,
            lambda *a: finished.append(a),
        )
    wait_for(lambda: len(finished) == 4, timeout_s=10, what="every job failed")
    assert time.monotonic() - started < 3, "the jobs did not each wait for their own connection attempt"
    assert {code for code, _ in finished} == {1}
    assert all("cannot ingest f" in e["message"] and "tcp://127.0.0.1:1" in e["message"] for _, e in finished)
