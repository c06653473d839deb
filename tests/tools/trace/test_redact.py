"""Redaction patterns (`profscope.tools.trace.redact`): what each kind takes out, what it leaves
alone (kernel and mangled C++ names, relative paths, URLs, XLA scopes, device names), numbering,
counts, and JSON that stays valid."""

from __future__ import annotations

import json

import msgspec
import pytest

from profscope.tools.trace import redact
from profscope.tools.trace.redact import RedactOptions, Redactor

ON = RedactOptions(enabled=True)


def redacted(value: str, redactor: Redactor | None = None, hosts: tuple[str, ...] = ()) -> str:
    """`value` as a JSON string, redacted, decoded back."""
    r = redactor or Redactor(ON, hosts)
    return json.loads(r.text(msgspec.json.encode(value)))


def kinds(r: Redactor) -> dict[str, tuple[int, int]]:
    return {k.kind: (k.values, k.occurrences) for k in r.summary()}


@pytest.mark.parametrize(
    ("text", "want", "kind"),
    [
        ("mail bob.smith+x@example.co.uk now", "mail <email-1> now", "email"),
        ("ghp_" + "a" * 18 + "B1" * 9 + " x", "<github_token-1> x", "github_token"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "<github_token-1>", "github_token"),
        ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz12", "<huggingface_token-1>", "huggingface_token"),
        ("key sk-proj-abcdefghijklmnop1234567890", "key <api_key-1>", "api_key"),
        ("id AKIAIOSFODNN7EXAMPLE.", "id <aws_access_key-1>.", "aws_access_key"),
        ("ASIAY34FZKBOKMUTVV7A", "<aws_access_key-1>", "aws_access_key"),
        (
            "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key=<aws_secret_key-1>",
            "aws_secret_key",
        ),
        (
            "https://x.org/a?token=abc123&user=1",
            "https://x.org/a?token=<secret_value-1>&user=1",
            "secret_value",
        ),
        ("password: hunter2; next", "password: <secret_value-1>; next", "secret_value"),
        ("API_KEY=abc", "API_KEY=<secret_value-1>", "secret_value"),
        ("Authorization: Bearer eyJhbGciOi.J9.x", "Authorization: Bearer <bearer_token-1>", "bearer_token"),
        ("0123456789abcdef0123456789abcdef", "<long_secret-1>", "long_secret"),
        ("blob Zm9vYmFyQmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRg== end", "blob <long_secret-1> end", "long_secret"),
        ("/home/alice/proj/train.py(42): forward", "<path-1>/train.py(42): forward", "path"),
        ("~/proj/run.sh", "<path-1>/run.sh", "path"),
        ("C:\\Users\\bob\\proj\\a.py", "<path-1>/a.py", "path"),
        ("D:/data/set/x.bin", "<path-1>/x.bin", "path"),
        ("master 10.0.12.7:29500 up", "master <address-1> up", "address"),
        ("http://192.168.1.20/metrics", "http://<address-1>/metrics", "address"),
    ],
)
def test_each_kind_is_replaced_by_a_numbered_placeholder(text, want, kind):
    r = Redactor(ON)
    assert redacted(text, r) == want
    assert kind in kinds(r)


@pytest.mark.parametrize(
    "text",
    [
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16> >(int)",
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIN3c108BFloat16EEESt5arrayIPcLm3EEEEviT0_T1_",
        "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize96x128x32_stage3_warpsize2x2x1_tensor16x8x16_kernel",
        "multiprocessing/spawn.py(122): spawn_main",
        "torch/nn/modules/module.py(1501): _call_impl",
        "https://github.com/pytorch/pytorch/blob/main/README.md",
        "jit_train_step/while/body/dot_general",
        "/device:TPU:0",
        "/host:CPU",
        "num_tokens 512 and token_count",
        "sort_by_key<int> kernel",
        "12345678901234567890123456789012345",
        "fusion.123 = f32[8,128]{1,0} fusion(%p0), kind=kLoop",
        "0a0a080110011880808080140a0a08021001188080808014",
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA1a",
        "autograd::engine::evaluate_function: BinaryCrossEntropyWithLogitsBackward0",
        "nvidia-cublas-cu12==12.4.5.8 libcublas-12-8=12.8.4.1-1 v1.2.3.4",
        "x86_64",
    ],
)
def test_profiler_labels_are_left_alone(text):
    r = Redactor(ON)
    assert redacted(text, r) == text
    assert r.summary() == []


def test_users_of_paths_are_counted_and_a_bare_home_loses_its_user():
    r = Redactor(ON)
    assert redacted("/home/alice/a/x.py and /home/alice/b/y.py and /Users/bob/z", r) == (
        "<path-1>/x.py and <path-2>/y.py and <path-3>/z"
    )
    assert redacted("cd /home/carol", r) == "cd <path-4>/<user-3>"
    assert kinds(r)["user"] == (3, 4) and kinds(r)["path"] == (4, 4)


def test_every_folder_of_a_path_list_is_replaced():
    assert redacted("/app/venv/bin:/usr/local/cuda/bin:/usr/bin") == "<path-1>/bin:<path-2>/bin:<path-3>/bin"


def test_machine_is_the_architecture_not_a_host():
    r = Redactor(ON)
    [out] = r.records([msgspec.json.encode({"machine": "x86_64", "nodename": "a39ca6b8f513"})])
    assert json.loads(out) == {"machine": "x86_64", "nodename": "<host-1>"}


def test_the_preview_lists_each_value_masked_with_its_replacement():
    r = Redactor(ON, ["a39ca6b8f513"])
    redacted("a39ca6b8f513 alice@example.com bob@example.org /home/carol/x.py on a39ca6b8f513", r)
    assert r.value("host", "vm") == b'"<host-2>"' and r.value("user", "") == b'""'
    assert [(x.kind, x.original, x.replacement) for x in r.replacements()] == [
        ("email", "al…om", "<email-1>"),
        ("email", "bo…rg", "<email-2>"),
        ("user", "c…l", "<user-1>"),
        ("host", "a3…13", "<host-1>"),
        ("host", "…", "<host-2>"),
        ("path", "/h…l/", "<path-1>"),
    ]
    assert [x.replacement for x in r.replacements(per_kind=1)] == [
        "<email-1>",
        "<user-1>",
        "<host-1>",
        "<path-1>",
    ]


def test_numbering_is_stable_per_value_across_texts():
    r = Redactor(ON)
    first = redacted("a@x.com b@y.org a@x.com", r)
    again = redacted("b@y.org", r)
    assert first == "<email-1> <email-2> <email-1>" and again == "<email-2>"
    assert kinds(r)["email"] == (2, 4)


def test_json_members_naming_secrets_hosts_and_users():
    r = Redactor(ON)
    record = msgspec.json.encode(
        {"api_token": "zzz", "hostname": "node-3", "user": "dave", "note": "ok", "num_tokens": "12"}
    )
    [out] = r.records([record])
    assert json.loads(out) == {
        "api_token": "<secret_value-1>",
        "hostname": "<host-1>",
        "user": "<user-1>",
        "note": "ok",
        "num_tokens": "12",
    }


def test_host_names_are_replaced_as_words():
    r = Redactor(ON, ["gpu-node-17", "ab"])
    assert redacted("on gpu-node-17 and gpu-node-170, file gpu-node-17.trace", r) == (
        "on <host-1> and gpu-node-170, file <host-1>.trace"
    )
    assert redacted("/logs/gpu-node-17.pt.trace.json.gz", r) == "<path-1>/<host-1>.pt.trace.json.gz"
    assert redacted("ab cd", r) == "ab cd", "names shorter than MIN_HOST_NAME are left"


def test_records_stay_valid_json_and_one_to_one():
    r = Redactor(ON)
    tricky = {"path": 'C:\\Users\\eve\\"q"\\a.py', "s": "x\u00e9 alice@x.com", "n": 1}
    records = [msgspec.json.encode(tricky), b"", b'{"k": "sk-abcdefghijklmnopqrstuvwxyz"}']
    out = r.records(records)
    assert len(out) == 3 and out[1] == b""
    assert json.loads(out[0])["s"] == "x\u00e9 <email-1>" and "eve" not in out[0].decode()
    assert json.loads(out[2]) == {"k": "<api_key-1>"}


def test_shapes_and_all_values():
    shapes = Redactor(RedactOptions(enabled=True, shapes=True))
    record = msgspec.json.encode(
        {"Input Dims": [[1, 2]], "Input type": ["float"], "Concrete Inputs": ["", "1"], "x": 3}
    )
    other = msgspec.json.encode({"Input Dims": [[1, 2]]})
    out = [json.loads(o) for o in shapes.records([record, other])]
    assert out[0] == {
        "Input Dims": "<shapes-1>",
        "Input type": "<shapes-2>",
        "Concrete Inputs": "<shapes-3>",
        "x": 3,
    }
    assert out[1] == {"Input Dims": "<shapes-1>"}, "equal shapes keep one placeholder"
    assert kinds(shapes)["shapes"] == (3, 4)
    everything = Redactor(RedactOptions(enabled=True, args=True))
    [got] = everything.records([msgspec.json.encode({"a": 1, "b": [2, {"c": "d"}], "e": None})])
    assert json.loads(got) == {"a": "<redacted>", "b": ["<redacted>", {"c": "<redacted>"}], "e": None}
    assert kinds(everything)["args"] == (0, 3)


def test_numbering_stops_at_its_cap(monkeypatch):
    monkeypatch.setattr(redact, "MAX_NUMBERED", 2)
    r = Redactor(ON)
    assert redacted("a@x.com b@x.com c@x.com a@x.com", r) == "<email-1> <email-2> <email> <email-1>"
    [row] = r.summary()
    assert (row.kind, row.values, row.occurrences, row.capped) == ("email", 2, 4, True)


def test_nothing_changes_when_off():
    r = Redactor(RedactOptions())
    text = msgspec.json.encode("alice@example.com /home/alice/x.py")
    assert r.text(text) == text and r.records([text]) == [text] and r.summary() == []
