"""Metadata redacted field by field (`profscope.tools.trace.redact_fields`): a field is replaced
by what its key names (host, address, user, machine id, path), whatever its value looks like; the
architecture, versions and device names stay. The metadata is the H100 Kineto trace's own
(tests/data/kineto/bert_small.pt.trace.json.gz), as its reader keeps it."""

from __future__ import annotations

import json

import fsspec
import pytest

from profscope.formats.chrome import reader as chrome_json
from profscope.tools.trace import redact_fields
from profscope.tools.trace.redact import RedactOptions, Redactor
from tests.support import DATA_DIR

BERT = DATA_DIR / "kineto" / "bert_small.pt.trace.json.gz"
ON = RedactOptions(enabled=True)


@pytest.fixture(scope="module")
def bert_metadata() -> dict:
    return chrome_json.read(str(BERT), fsspec.filesystem("file")).metadata


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("HOSTNAME", "host"),
        ("host_name", "host"),
        ("hostnames", "host"),
        ("node", "host"),
        ("tw_cluster", "host"),
        ("MASTER_ADDR", "address"),
        ("POD_IP", "address"),
        ("username", "user"),
        ("tw_user", "user"),
        ("LOGNAME", "user"),
        ("started_by", "user"),
        ("gpu_uuid", "machine_id"),
        ("HOME", "path"),
        ("LD_LIBRARY_PATH", "path"),
        ("traceName", "path"),
        ("MOCA_OUTPUT_DIR", "path"),
        ("HF_TOKEN", "secret_value"),
        ("machine", None),
        ("processor", None),
        ("torch_dtype", None),
        ("name", None),
        ("NODE_RANK", None),
    ],
)
def test_a_field_is_known_by_its_key(key, kind):
    assert redact_fields.field_kind(key) == kind


def test_the_host_name_is_replaced_in_uname_and_env_alike_and_the_architecture_stays(bert_metadata):
    redactor = Redactor(ON, redact_fields.host_names(bert_metadata))
    out = json.loads(redact_fields.redacted_metadata(redactor, bert_metadata))
    uname, env = out["metadata"]["system"]["uname"], out["metadata"]["system"]["env"]
    assert uname["node"] == env["HOSTNAME"] and uname["node"].startswith("<host-")
    assert uname["machine"] == uname["processor"] == env["NVARCH"] == "x86_64"
    assert env["HOME"].startswith("<path-") and "/root" not in json.dumps(out)
    assert env["MOCA_LOG_FILE"].endswith(">/moca_profile_4.log")
    assert all(part.startswith("<path-") for part in env["PATH"].split(":")), env["PATH"]
    assert out["metadata"]["experiment"]["torch_dtype"] == "bfloat16"
    assert out["deviceProperties"] == bert_metadata["deviceProperties"]
    assert env["CUDA_VERSION"] == "12.8.1" and env["NV_LIBCUBLAS_VERSION"] == "12.8.4.1-1"
    assert out["traceName"].endswith(">/file.json")
    kinds = {k.kind: k.values for k in redactor.summary()}
    assert kinds["host"] == 1 and kinds["secret_value"] == 1


def test_short_host_names_are_replaced_where_a_field_names_them():
    redactor = Redactor(ON, ["vm"])
    metadata = {"hostnames": ["vm"], "note": "vm in llvm"}
    out = json.loads(redact_fields.redacted_metadata(redactor, metadata))
    assert out == {"hostnames": ["<host-1>"], "note": "vm in llvm"}


def test_the_source_keeps_its_file_name_only():
    redactor = Redactor(ON, ["gpu-node-17"])
    text = redact_fields.redacted_source(redactor, "gs://bucket/alice/run/gpu-node-17.xplane.pb")
    assert json.loads(text) == "<path-1>/<host-1>.xplane.pb"
    off = Redactor(RedactOptions())
    assert json.loads(redact_fields.redacted_source(off, "/a/b.pb")) == "/a/b.pb"
    assert json.loads(redact_fields.redacted_metadata(off, {"HOSTNAME": "x"})) == {"HOSTNAME": "x"}
