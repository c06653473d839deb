"""An `s3://` logdir end to end, against a real S3 API server on loopback (moto's, see
`conftest.S3Server`): listing, a trace ingested by a child process reading ranges of the object as
it goes, XLA logs, a file that appears while TensorBoard runs, wrong credentials, and not one write
to the logdir's bucket.
"""

from __future__ import annotations

import gzip
import json
import time
import uuid

import fsspec

from profscope import logdir as logdir_lib
from profscope.tools.trace import routes as trace_routes
from tests.support import DATA_DIR

DATA = DATA_DIR
BASE = "/data/plugin/profscope"
READS = {"GET", "HEAD"}


def _upload(server, bucket: str, files: dict[str, bytes]) -> None:
    client = server.client()
    client.create_bucket(Bucket=bucket)
    for key, body in files.items():
        client.put_object(Bucket=bucket, Key=key, Body=body)


def _local_tree(prefix: str) -> dict[str, bytes]:
    files = {}
    for root, into in ((DATA / "trace" / "logdir", ""), (DATA / "layouts" / "logdir" / "xla", "xla/")):
        for path in sorted(root.rglob("*")):
            if path.is_file():
                files[f"{prefix}/{into}{path.relative_to(root).as_posix()}"] = path.read_bytes()
    return files


def _bucket() -> str:
    return f"logs-{uuid.uuid4().hex[:12]}"


def _writes_since(server, mark: int, bucket: str) -> list[dict]:
    return [
        r
        for r in server.requests[mark:]
        if r["method"] not in READS and str(r["path"]).startswith(f"/{bucket}")
    ]


def _ready(client, query: dict, timeout_s: float = 120) -> tuple[dict, list[dict]]:
    """trace/meta once it is 200 with every host on the timeline (a merged timeline answers 200
    with `pending_hosts` while some are still read), and the progress answers before it."""
    deadline = time.monotonic() + timeout_s
    progress = []
    while True:
        res = client.get(f"{BASE}/trace/meta", query_string=query)
        if res.status_code == 200 and not res.get_json()["pending_hosts"]:
            return res.get_json(), progress
        assert res.status_code in (200, 202), res.get_data(as_text=True)
        progress.append(res.get_json())
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _shape(listing: dict) -> list:
    return [
        (run["name"], session["name"], host["name"], [f["format"] for f in host["files"]], host["tools"])
        for run in listing["runs"]
        for session in run["sessions"]
        for host in session["hosts"]
    ]


def test_s3_logdir_lists_and_serves_like_a_local_one(s3_env, plugin_client, tmp_path) -> None:
    bucket = _bucket()
    _upload(s3_env, bucket, _local_tree("ld"))
    mark = len(s3_env.requests)
    plugin, client = plugin_client(f"s3://{bucket}/ld")
    listing = client.get(f"{BASE}/runs").get_json()
    local = tmp_path / "local"
    for key, body in _local_tree("ld").items():
        (local / key).parent.mkdir(parents=True, exist_ok=True)
        (local / key).write_bytes(body)
    _, local_client = plugin_client(local / "ld")
    assert listing["errors"] == []
    assert _shape(listing) == _shape(local_client.get(f"{BASE}/runs").get_json())
    (bert_file,) = listing["runs"][0]["sessions"][0]["hosts"][0]["files"]
    assert bert_file["path"] == "bert/bert_small.pt.trace.json.gz" and "error" not in bert_file

    for query in (
        {"run": "bert", "session": "pytorch", "host": "bert_small"},
        {"run": "jax", "session": "session1", "host": "tw003"},
        {"run": "ranks", "session": "pytorch", "host": "rank-0,rank-1"},
    ):
        meta, _ = _ready(client, query)
        local_meta, _ = _ready(local_client, query)
        assert meta["num_events"] == local_meta["num_events"] > 0
        assert meta["hosts"][0]["source"].startswith(f"{bucket}/ld/")  # read from the bucket
        search = client.get(f"{BASE}/trace/search", query_string={**query, "q": "a", "limit": 20}).get_json()
        local_search = local_client.get(f"{BASE}/trace/search", query_string={**query, "q": "a", "limit": 20})
        assert search["total"] == local_search.get_json()["total"] > 0
    xla = {"run": "xla/pytorch_xla_cpu_recompile", "session": "xla", "host": "xla"}
    report = client.get(f"{BASE}/xla/report", query_string=xla)
    assert report.status_code == 200, report.get_data(as_text=True)
    local_report = local_client.get(f"{BASE}/xla/report", query_string=xla).get_json()
    remote_report = report.get_json()
    assert remote_report["findings"] == local_report["findings"] and remote_report["findings"]
    assert remote_report["metrics"] == local_report["metrics"]
    assert _writes_since(s3_env, mark, bucket) == [], "the remote logdir was written"
    plugin.trace_service().manager.close()


def _big_chrome_trace(events: int) -> bytes:
    """A plain (not gzip) Chrome trace of `events` complete events: tens of MB."""
    body = ",".join(
        f'{{"ph":"X","name":"op{i % 97}","cat":"cpu_op","pid":1,"tid":{i % 4},"ts":{i * 3},"dur":2,'
        f'"args":{{"step":{i}}}}}'
        for i in range(events)
    )
    return f'{{"traceEvents":[{body}],"displayTimeUnit":"ns"}}'.encode()


def test_a_big_object_is_read_in_ranges_while_the_ingest_goes_on(s3_env, plugin_client, monkeypatch) -> None:
    """No full download before ingest starts: every GET of the object is a range far smaller than
    it, the object is fetched about once, and progress shows part of it read while later ranges
    were not yet asked for."""
    monkeypatch.setattr(trace_routes, "META_WAIT_S", 0.0)
    monkeypatch.setitem(fsspec.config.conf, "s3", {"default_block_size": 1 << 20})
    bucket = _bucket()
    body = _big_chrome_trace(220_000)
    key = "ld/big/w.pt.trace.json"
    _upload(s3_env, bucket, {key: body})
    path = f"/{bucket}/{key}"
    # Each ranged GET waits half a second: the read (a few ranges of megabytes) then lasts longer
    # than several polls of `trace/meta` (about 0.3 s each here), at 0.15 s it sometimes fit in two.
    s3_env.slow_keys[path] = 0.5
    mark = len(s3_env.requests)
    plugin, client = plugin_client(f"s3://{bucket}/ld")
    query = {"run": "big", "session": "pytorch", "host": "w"}
    served_when_asked = []
    deadline = time.monotonic() + 180
    while True:
        served = sum(
            int(r["bytes"]) for r in s3_env.requests[mark:] if r["path"] == path and r["method"] == "GET"
        )
        res = client.get(f"{BASE}/trace/meta", query_string=query)
        if res.status_code == 200:
            break
        assert res.status_code == 202, res.get_data(as_text=True)
        progress = res.get_json()
        served_when_asked.append((progress["bytes_done"], progress["bytes_total"], served))
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert res.get_json()["num_events"] == 220_000
    gets = [r for r in s3_env.requests[mark:] if r["path"] == path and r["method"] == "GET"]
    assert len(gets) > 3 and all(r["range"] for r in gets), gets
    assert max(int(r["bytes"]) for r in gets) < len(body) / 2
    assert sum(int(r["bytes"]) for r in gets) < 1.5 * len(body), "the object was downloaded more than once"
    partial = [(done, served) for done, total, served in served_when_asked if 0 < done < total == len(body)]
    assert any(served < len(body) for _, served in partial), served_when_asked
    assert _writes_since(s3_env, mark, bucket) == []
    plugin.trace_service().manager.close()


def test_a_file_written_while_tensorboard_runs_is_listed(s3_env, plugin_client) -> None:
    bucket = _bucket()
    _upload(
        s3_env,
        bucket,
        {
            "ld/bert/bert_small.pt.trace.json.gz": (
                DATA / "trace" / "logdir" / "bert" / "bert_small.pt.trace.json.gz"
            ).read_bytes()
        },
    )
    plugin, client = plugin_client(f"s3://{bucket}/ld")
    assert [r["name"] for r in client.get(f"{BASE}/runs").get_json()["runs"]] == ["bert"]
    assert plugin.logdir is not None
    plugin.logdir.ttl_s = 0.0
    mark = len(s3_env.requests)
    s3_env.client().put_object(
        Bucket=bucket,
        Key="ld/later/rank-0.pt.trace.json.gz",
        Body=(DATA / "trace" / "logdir" / "ranks" / "rank-0.pt.trace.json.gz").read_bytes(),
    )
    listing = client.get(f"{BASE}/runs").get_json()
    assert [r["name"] for r in listing["runs"]] == ["bert", "later"]
    meta, _ = _ready(client, {"run": "later", "session": "pytorch", "host": "rank-0"})
    assert meta["num_events"] > 0
    assert [r for r in _writes_since(s3_env, mark, bucket) if "later" not in str(r["path"])] == []
    plugin.trace_service().manager.close()


def test_wrong_credentials_are_reported_clearly(s3_env, plugin_client, monkeypatch) -> None:
    bucket = _bucket()
    _upload(s3_env, bucket, {"ld/bert/bert_small.pt.trace.json.gz": gzip.compress(b'{"traceEvents":[]}')})
    iam = s3_env.client("iam")
    iam.create_user(UserName=f"reader-{bucket}")
    iam.put_user_policy(
        UserName=f"reader-{bucket}",
        PolicyName="read",
        PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
        ),
    )
    key = iam.create_access_key(UserName=f"reader-{bucket}")["AccessKey"]
    s3_env.require_auth(True)

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAWRONGWRONGWRONG1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    plugin, client = plugin_client(f"s3://{bucket}/ld")
    listing = client.get(f"{BASE}/runs").get_json()
    assert listing["runs"] == []
    (error,) = listing["errors"]
    assert error.startswith(f"cannot read logdir s3://{bucket}/ld: ")
    assert "The AWS Access Key Id you provided does not exist in our records" in error
    assert "credentials" in error
    assert "wrong" not in error.lower().replace("wrong credentials", "")
    res = client.get(f"{BASE}/trace/meta", query_string={"run": "bert", "session": "pytorch", "host": "x"})
    assert res.status_code == 404
    assert plugin.is_active() is False

    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"])
    assert logdir_lib.discover(f"s3://{bucket}/ld").errors == []
