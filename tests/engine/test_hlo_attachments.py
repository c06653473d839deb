"""The HloProtos of an XPlane travel with its cache entry: the reader attaches them, the store keeps
them as checksummed files read one at a time, and `HostContext.hlo_modules` serves them."""

from __future__ import annotations

import json
import pathlib
import shutil

import fsspec
import pytest

from profscope import logdir as logdir_lib
from profscope.context import HostContext, StillIngesting
from profscope.engine import service, store
from profscope.formats.xplane import reader as xplane
from profscope.formats.xplane.decode import decode_space
from profscope.formats.xplane.hlo import AttachedProtos, attachment_name, hlo_protos, signed_program_id
from profscope.model.columns import TraceBuilder
from tests.support import REPO

DATA = REPO / "tests" / "data"
XPLANES = {
    "mi300": DATA / "xplane" / "mi300_jax_conv.xplane.pb",
    "tpu": DATA / "xplane" / "tpu_v6e_inference.xplane.pb",
    "jax_demo": REPO / "demo/logdir/jax_cpu_training/plugins/profile/2026_11_30_00_33_00/vm.xplane.pb",
}
KINETO = DATA / "kineto" / "worker0.1623143089861.pt.trace.json.gz"
SESSION = "2024_01_01_00_00_00"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """One run per profile: the three XPlanes as `<run>/plugins/profile/<session>/host.xplane.pb`
    and the Kineto trace as a loose PyTorch file."""
    root = tmp_path_factory.mktemp("logdir")
    for run, source in XPLANES.items():
        folder = root / run / "plugins" / "profile" / SESSION
        folder.mkdir(parents=True)
        shutil.copy(source, folder / "host.xplane.pb")
    (root / "kineto").mkdir()
    shutil.copy(KINETO, root / "kineto" / KINETO.name)
    return root


def context(logdir: pathlib.Path, run_name: str, traces: service.TraceService) -> HostContext:
    run = logdir_lib.discover(str(logdir)).run(run_name)
    assert run is not None and len(run.sessions) == 1 and len(run.sessions[0].hosts) == 1
    session = run.sessions[0]
    return HostContext(run, session, session.hosts, fsspec.filesystem("file"), lambda: traces)


def expected_protos(run: str) -> dict[int, bytes]:
    return hlo_protos(decode_space(XPLANES[run].read_bytes()))


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def traces(cache_root: pathlib.Path) -> service.TraceService:
    return service.TraceService(str(cache_root))


def ingested(ctx: HostContext) -> None:
    """Wait for the subject's ingest (the child process) to finish."""
    ctx.timeline(wait_s=120.0)


@pytest.mark.parametrize("run", sorted(XPLANES))
def test_the_entry_holds_exactly_the_protos_of_the_profile(logdir, traces, run) -> None:
    ctx = context(logdir, run, traces)
    ingested(ctx)
    expected = expected_protos(run)
    assert expected, f"{run}: the profile carries HloProtos"
    modules = ctx.hlo_modules()
    assert modules is not None and set(modules) == set(expected)
    for program_id, proto in expected.items():
        assert modules[program_id].data == proto
        assert modules[program_id].name
    assert ctx.hlo_modules() is modules  # cached per cache entry

    opened = traces.manager.ensure(service.host_sources(ctx.hosts, ctx.fs)[0].source)
    entry = pathlib.Path(opened.path)
    meta = store.read_meta(str(entry))
    assert sorted(meta["attachments"]) == sorted(attachment_name(p) for p in expected)
    for program_id, proto in expected.items():
        assert (entry / store.ATTACHMENTS_DIR / "hlo" / f"{program_id}.pb").read_bytes() == proto
    assert store.verify(str(entry)) == []


def test_a_kineto_trace_has_no_hlo_modules(logdir, traces) -> None:
    ctx = context(logdir, "kineto", traces)
    ingested(ctx)
    assert ctx.hlo_modules() is None
    assert dict(ctx.timeline().hosts[0].trace.attachments) == {}


def test_hlo_modules_waits_for_the_ingest(logdir, tmp_path) -> None:
    ctx = context(logdir, "mi300", service.TraceService(str(tmp_path / "fresh-cache")))
    with pytest.raises(StillIngesting):
        ctx.hlo_modules()
    ingested(ctx)
    assert ctx.hlo_modules() is not None


def test_a_reopened_entry_reads_each_proto_from_its_file(logdir, traces, cache_root) -> None:
    ingested(context(logdir, "tpu", traces))
    reopened = service.TraceService(str(cache_root))  # a new server: opens the entry, no ingest
    ctx = context(logdir, "tpu", reopened)
    host = ctx.timeline().hosts[0]
    assert isinstance(host.trace.attachments, store.EntryAttachments)
    protos = AttachedProtos(host.trace.attachments)
    expected = expected_protos("tpu")
    assert dict(protos) == expected
    assert all(p < 0 for p in expected if p != 2433868464432466958)  # fingerprints past 2**63
    # Events name the program unsigned: the signed id finds its module.
    stat_id = 9646411105960254074
    assert signed_program_id(stat_id) == -8800332967749297542 and signed_program_id(5) == 5
    assert ctx.hlo_modules()[signed_program_id(stat_id)].data == expected[-8800332967749297542]


def test_a_damaged_attachment_is_found_by_verify_and_refused_on_read(tmp_path) -> None:
    trace = xplane.read(str(XPLANES["mi300"]), fsspec.filesystem("file"))
    path = pathlib.Path(store.write(trace, str(tmp_path), store.fingerprint("file:///x", 1, "1")))
    back = store.open(str(path))
    assert dict(back.attachments) == dict(trace.attachments)
    file = path / store.ATTACHMENTS_DIR / "hlo" / "5.pb"
    data = bytearray(file.read_bytes())
    data[100] ^= 0xFF
    file.write_bytes(bytes(data))
    with pytest.raises(store.CacheError, match="attachment hlo/5.pb damaged"):
        back.attachments["hlo/5.pb"]
    assert back.attachments["hlo/1.pb"] == trace.attachments["hlo/1.pb"]
    assert [p for p in store.verify(str(path)) if "attachment" in p] == [
        f"{path}: attachment hlo/5.pb damaged (size or checksum mismatch)"
    ]
    assert "hlo/404.pb" not in back.attachments
    assert json.loads((path / store.META_FILE).read_bytes())["attachments"]["hlo/1.pb"]["bytes"] == 374


@pytest.mark.parametrize("name", ["", "/a", "a/", "a//b", "../a", "a/../b", ".hidden", "a b", "a\\b"])
def test_attachment_names_are_safe_file_names(name) -> None:
    with pytest.raises(ValueError, match="bad attachment name"):
        TraceBuilder("x", "chrome_trace").attach(name, b"")
