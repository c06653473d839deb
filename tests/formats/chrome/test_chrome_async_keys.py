"""`chrome_async_keys`: async ids numbered in arrays, found by a hash that is never trusted.

Synthetic columns: the edge cases (a collision, ids of other widths, an unseen id) do not occur
in real traces; the reader-level behaviour is tested on traces in `test_chrome_json*.py`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from profscope.formats.chrome import async_keys as ak
from profscope.formats.chrome import columns as cc

pytestmark = pytest.mark.stack_independent


def _chunk(scopes: list[int], ids: list[bytes], phases: list[int], names: list[int]) -> tuple[Any, ...]:
    f = {
        "id": np.array(ids, dtype=bytes),
        "phase": np.array(phases, np.int8),
        "name": np.array(names, np.int32),
    }
    return np.array(scopes, np.int32), f, np.arange(100, dtype=np.int32) + 1000


B, E, N = cc.ASYNC_BEGIN, cc.ASYNC_END, cc.ASYNC_INSTANT
CHUNKS = [
    _chunk([0, 0, 1, 0], [b"7", b"7", b"7", b"0x1f"], [B, E, B, B], [1, 2, 3, 4]),
    _chunk([0, 1, 0, 2], [b"0x1f", b"7", b"request-12", b"9"], [B, E, N, N], [5, 6, 7, 8]),
]


def test_keys_are_numbered_by_first_appearance_with_their_first_name_and_slice_count() -> None:
    keys = ak.AsyncKeys(lambda: iter(CHUNKS), base=10)
    assert len(keys) == 5
    assert keys.scope.tolist() == [0, 1, 0, 0, 2]
    assert [bytes(i) for i in keys.ids] == [b"7", b"7", b"0x1f", b"request-12", b"9"]
    assert keys.first_name.tolist() == [1001, 1003, 1004, 1007, 1008]
    # (0, "7"): b e → one slice; (1, "7"): b e across chunks; (0, "0x1f"): two begins; instants alone.
    assert keys.single.tolist() == [True, True, False, True, True]
    scope, f, _ = CHUNKS[1]
    assert keys.keys_of(scope, f["id"]).tolist() == [12, 11, 13, 14]


def test_a_key_hashes_the_same_whatever_the_width_of_its_array() -> None:
    scope = np.array([3, 3], np.int32)
    narrow = ak.key_hashes(scope, np.array([b"12", b"abcdefghi"], dtype="S9"), 0)
    wide = ak.key_hashes(scope, np.array([b"12", b"abcdefghi"], dtype="S40"), 0)
    assert narrow.tolist() == wide.tolist()
    other = ak.key_hashes(np.array([4, 3], np.int32), np.array([b"12", b"abcdefghI"]), 0)
    assert (other != narrow).all()


def test_a_hash_collision_is_caught_and_the_table_built_with_another_seed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    honest = ak.key_hashes

    def colliding_first_seed(scope: np.ndarray, ids: np.ndarray, seed: int) -> np.ndarray:
        return np.zeros(ids.shape[0], np.int64) if seed == 0 else honest(scope, ids, seed)

    monkeypatch.setattr(ak, "key_hashes", colliding_first_seed)
    keys = ak.AsyncKeys(lambda: iter(CHUNKS), base=0)
    assert keys.seed == 1
    assert [bytes(i) for i in keys.ids] == [b"7", b"7", b"0x1f", b"request-12", b"9"]
    scope, f, _ = CHUNKS[0]
    assert keys.keys_of(scope, f["id"]).tolist() == [0, 0, 1, 2]


def test_a_collision_across_chunks_is_caught_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each chunk holds one id, so only the table of the whole file sees that "0x1f" (second
    chunk) got the hash of "7" (first chunk)."""
    honest = ak.key_hashes
    seven = honest(np.array([0], np.int32), np.array([b"7"]), 0)[0]

    def across(scope: np.ndarray, ids: np.ndarray, seed: int) -> np.ndarray:
        h = honest(scope, ids, seed)
        if seed == 0:
            h[ids == b"0x1f"] = seven
        return h

    chunks = [_chunk([0, 0], [b"7", b"7"], [B, E], [1, 2]), _chunk([0], [b"0x1f"], [B], [3])]
    monkeypatch.setattr(ak, "key_hashes", across)
    keys = ak.AsyncKeys(lambda: iter(chunks), base=0)
    assert keys.seed == 1
    assert [bytes(i) for i in keys.ids] == [b"7", b"0x1f"]
    assert keys.single.tolist() == [True, True]


def test_looking_up_an_id_never_numbered_is_an_error() -> None:
    keys = ak.AsyncKeys(lambda: iter(CHUNKS), base=0)
    with pytest.raises(RuntimeError, match="not seen"):
        keys.keys_of(np.array([5], np.int32), np.array([b"7"]))


def test_no_async_events_give_an_empty_table() -> None:
    keys = ak.AsyncKeys(lambda: iter([]), base=4)
    assert len(keys) == 0
    assert keys.keys_of(np.zeros(0, np.int32), np.zeros(0, "S1")).tolist() == []
