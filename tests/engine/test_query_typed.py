"""Search over an XPlane's typed args without writing their JSON finds exactly the events a scan of
the rendered JSON finds, for needles of every kind the shortcut takes (letters, words, doubles'
characters, null) and those it leaves to the JSON (digits, JSON punctuation)."""

from __future__ import annotations

import fsspec
import numpy as np
import pytest

from profscope.engine import query
from profscope.formats.xplane import reader as xplane
from profscope.model import args as model_args
from tests.support import DATA_DIR

FILES = [
    DATA_DIR / "xplane" / "gpu_8x_tf_training.xplane.pb",
    DATA_DIR / "xplane" / "tpu_v6e_inference.xplane.pb",
    DATA_DIR / "memory" / "tf_keras_cpu_bfc.xplane.pb",
]
NEEDLES = ["a", "e", "x", "_", "Z", "fusion", "cc", "null", "nu", "1e", "e-", "0.5", ".", "+", "7", "42",
           '":', "k,", "é", "gpu", "/", "src", "op:", "true", " "]  # fmt: skip


def _json_only(self: query.Searcher, needle: np.ndarray, hit: np.ndarray) -> bool:
    return False


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_typed_search_finds_what_the_json_scan_finds(path, monkeypatch) -> None:
    trace = xplane.read(str(path), fsspec.filesystem("file"))
    assert model_args.typed(trace)
    direct = {q: query.Searcher(trace).matches(q) for q in NEEDLES}
    taken = []
    real = query.Searcher._typed_arg_hits

    def spy(self: query.Searcher, needle: np.ndarray, hit: np.ndarray) -> bool:
        used = real(self, needle, hit)
        taken.append(used)
        return used

    monkeypatch.setattr(query.Searcher, "_typed_arg_hits", spy)
    for q in NEEDLES:
        query.Searcher(trace).matches(q)
    assert any(taken) and not all(taken), "both ways were exercised"
    monkeypatch.setattr(query.Searcher, "_typed_arg_hits", _json_only)
    for q in NEEDLES:
        assert np.array_equal(direct[q], query.Searcher(trace).matches(q)), q
    assert sum(len(v) for v in direct.values()) > 1000
