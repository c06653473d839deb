"""Every event's args as typed records (`model.typed_args`), for a batch of events at once.

An event's args are its metadata's members (a ready `{"k":v,` prefix) then one member per event
stat. Instead of a JSON text per event the reader writes per event the fragment id of its prefix
and per stat (key fragment, value class, 64-bit value): numbers keep their bits, every other value
becomes a fragment made once per distinct thing (`"key":` per key; `"name",` per ref target; the
JSON string of each distinct string or bytes content; `null,` for a stat without a value). The
model renders the JSON only when it is asked for, byte for byte what one `msgspec` encode of the
event's dict writes.

Keys are the source's stat names ("stat#<id>" when the metadata is missing); a name repeated within
one event gets " (2)", " (3)"… so no value is lost to duplicate keys. The rank r of stat row j
(its label is " (r + 1)" where r > 0), with an event's rows contiguous and at most L of them:
    r[j] = Σ_{d=1}^{L-1} [owner[j-d] = owner[j] ∧ key[j-d] = key[j]]
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import numpy as np

from profscope.formats.xplane.decode import BYTES, DOUBLE, INT64, REF, STR, UINT64, EventBatch, text
from profscope.formats.xplane.stats import StatNames, StatTable, bytes_text
from profscope.model import typed_args

_encode = msgspec.json.Encoder().encode
# `_repeat_rank` compares shifted rows where no event has more stats than this, else it sorts.
SHIFTED_MAX_STATS = 16
_CLASS_OF_KIND = np.zeros(8, dtype=np.uint8)  # stat kind → value class (0: a fragment)
_CLASS_OF_KIND[INT64], _CLASS_OF_KIND[UINT64], _CLASS_OF_KIND[DOUBLE] = (
    typed_args.INT,
    typed_args.UINT,
    typed_args.DOUBLE,
)


class ArgsEncoder:
    """The fragments of one read and the typed records of its batches (`records`)."""

    def __init__(self, vocab: StatNames) -> None:
        self.vocab = vocab
        self.fragments = typed_args.Fragments()
        self._key_frag = np.zeros(0, dtype=np.int64)  # by name id: fragment of `"name":`, -1 none yet
        self._ref_frag = np.zeros(0, dtype=np.int64)  # by name id: fragment of `"name",`, -1 none yet
        self._text_frag: dict[tuple[int, bytes], int] = {}  # (kind, content) → value fragment

    def json_records(self, texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """(lengths, blob) of records that are JSON texts already (derived boxes)."""
        return typed_args.encode_json(texts)

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        return self.fragments.table()

    def records(
        self,
        table: StatTable,
        prefixes: list[bytes],
        ev_prefix: np.ndarray,
        stat_rows: np.ndarray,
        owner: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(bytes per event, blob): the typed records of events 0…n-1 (n = len(ev_prefix)).

        `prefixes[ev_prefix[e]]` is a ready fragment `{"k":v,` (at least one member, trailing
        comma) that opens event e's object, -1 for none; `stat_rows` (rows of `table`) are the
        stats that follow, `owner` (non-decreasing) their event. New fragments join the table in
        the order of the events and stats that first use them, so the table does not depend on
        where batches start.
        """
        raw = table.raw
        rows = stat_rows
        kind = raw.st_kind[rows]
        key = _keys(table, rows, owner)
        value = raw.st_value[rows].copy()
        value_class = _CLASS_OF_KIND[kind]
        pending = _Pending()

        used = np.flatnonzero(ev_prefix >= 0)
        opening = np.full(ev_prefix.shape[0], -1, dtype=np.int64)
        if used.shape[0]:
            uniq, first, inverse = np.unique(ev_prefix[used], return_index=True, return_inverse=True)
            asked = [
                pending.want(self.fragments, prefixes[p], e, 0)
                for p, e in zip(uniq.tolist(), used[first].tolist(), strict=True)
            ]
            opening[used] = np.asarray(asked, dtype=np.int64)[inverse.ravel()]
        key_cache = self._ensure(key, "_key_frag")
        key_want = self._want_names(pending, key, key_cache, owner, np.arange(rows.shape[0]), 1, b":")
        refs = np.flatnonzero(kind == REF)
        ref_frag = None
        if refs.shape[0]:
            target = table.ref_name[rows[refs]].astype(np.int64)
            for i in np.flatnonzero(target < 0).tolist():
                target[i] = table.name_id(f"?ref {int(raw.st_value[rows[refs[i]]])}")
            ref_cache = self._ensure(target, "_ref_frag")
            ref_frag = self._want_names(pending, target, ref_cache, owner, refs, 2, b",")
        blobs = np.flatnonzero((kind == STR) | (kind == BYTES))
        blob_ids = self._want_texts(pending, raw, kind, rows, blobs, owner)
        pending.add_all(self.fragments)

        opening[opening < -1] = pending.resolve(opening[opening < -1])
        key_frag = key_want()
        if ref_frag is not None:
            value[refs] = ref_frag()
        if blobs.shape[0]:
            value[blobs] = pending.resolve(blob_ids)
        without = (value_class == typed_args.FRAGMENT) & (kind != REF) & (kind != STR) & (kind != BYTES)
        value[without] = typed_args.NULL
        return typed_args.encode(ev_prefix.shape[0], opening, owner, key_frag, value_class, value)

    def _want_names(
        self,
        pending: _Pending,
        ids: np.ndarray,
        cache: np.ndarray,
        owner: np.ndarray,
        at: np.ndarray,
        slot: int,
        suffix: bytes,
    ) -> Callable[[], np.ndarray]:
        """Ask for the fragment (a name id's JSON string and `suffix`) of each of `ids` (of the stat
        rows `at`, fragment `slot` of their row) not made yet; returns what gives every id's
        fragment once the pending ones are added."""
        missing = np.flatnonzero(cache[ids] < 0)
        names = self.vocab.names
        asked: list[tuple[int, int]] = []
        for nid, i in zip(*_first_of(ids[missing], missing), strict=True):
            event, place = _place(owner, int(at[i]))
            ticket = pending.want(self.fragments, _encode(names[nid]) + suffix, event, slot + 2 * place)
            asked.append((nid, ticket))

        def resolved() -> np.ndarray:
            for nid, ticket in asked:
                cache[nid] = pending.resolve(np.array([ticket]))[0]
            return cache[ids]

        if not asked:
            return lambda: cache[ids]
        return resolved

    def _want_texts(
        self,
        pending: _Pending,
        raw: EventBatch,
        kind: np.ndarray,
        rows: np.ndarray,
        blobs: np.ndarray,
        owner: np.ndarray,
    ) -> np.ndarray:
        """Per string or bytes stat (`blobs`), its value fragment id or the ticket of one asked for."""
        out = np.empty(blobs.shape[0], dtype=np.int64)
        if not blobs.shape[0]:
            return out
        data = raw.data
        seen = self._text_frag
        new: dict[tuple[int, bytes], int] = {}
        for i, b, kd, start, length in zip(
            range(blobs.shape[0]),
            blobs.tolist(),
            kind[blobs].tolist(),
            raw.st_start[rows[blobs]].tolist(),
            raw.st_len[rows[blobs]].tolist(),
            strict=True,
        ):
            chunk = data[start : start + length]
            fid = seen.get((kd, chunk))
            if fid is None:
                fid = new.get((kd, chunk))
                if fid is None:
                    decoded = text(chunk) if kd == STR else bytes_text(chunk)
                    event, place = _place(owner, b)
                    fid = new[(kd, chunk)] = pending.want(
                        self.fragments, _encode(decoded) + b",", event, 2 + 2 * place
                    )
            out[i] = fid
        pending.after(
            lambda: seen.update({k: int(pending.resolve(np.array([t]))[0]) for k, t in new.items()})
        )
        return out

    def _ensure(self, ids: np.ndarray, attr: str) -> np.ndarray:
        """The cache `attr` (by name id) grown to hold `ids`."""
        cache: np.ndarray = getattr(self, attr)
        need = int(ids.max()) + 1 if ids.shape[0] else 0
        if need > cache.shape[0]:
            grown = np.full(max(need, 2 * cache.shape[0]), -1, dtype=np.int64)
            grown[: cache.shape[0]] = cache
            cache = grown
            setattr(self, attr, cache)
        return cache


class _Pending:
    """Fragments a batch needs that the table lacks, added in the order of (event, slot) of their
    first use: a fragment asked for gets a ticket (a negative number) until `add_all`."""

    def __init__(self) -> None:
        self._asked: list[tuple[int, int, bytes]] = []
        self._ids = np.zeros(0, dtype=np.int64)
        self._after: list[Callable[[], None]] = []

    def want(self, fragments: typed_args.Fragments, fragment: bytes, event: int, slot: int) -> int:
        known = fragments.get(fragment)
        if known is not None:
            return known
        self._asked.append((int(event), int(slot), fragment))
        return -2 - (len(self._asked) - 1)

    def after(self, fn: Callable[[], None]) -> None:
        self._after.append(fn)

    def add_all(self, fragments: typed_args.Fragments) -> None:
        order = sorted(range(len(self._asked)), key=lambda i: self._asked[i][:2])
        self._ids = np.empty(len(self._asked), dtype=np.int64)
        for i in order:
            self._ids[i] = fragments.add(self._asked[i][2])
        for fn in self._after:
            fn()

    def resolve(self, ids: np.ndarray) -> np.ndarray:
        """Fragment ids for ids or tickets."""
        ids = np.asarray(ids, dtype=np.int64)
        tickets = ids <= -2
        if tickets.any():
            ids = ids.copy()
            ids[tickets] = self._ids[-2 - ids[tickets]]
        return ids


def _place(owner: np.ndarray, row: int) -> tuple[int, int]:
    """(event, index among its event's stats) of stat row `row` (`owner` non-decreasing)."""
    event = int(owner[row])
    return event, row - int(np.searchsorted(owner, event))


def _first_of(values: np.ndarray, where: np.ndarray) -> tuple[list[int], list[int]]:
    """(each distinct value, the `where` entry of its first occurrence)."""
    if not values.shape[0]:
        return [], []
    uniq, first = np.unique(values, return_index=True)
    return uniq.tolist(), where[first].tolist()


def _keys(table: StatTable, rows: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Args key (id into `names`) of each stat row: its stat name, "stat#<id>" when the metadata
    is missing, with " (2)", " (3)"… for repeats of a name inside one event."""
    raw = table.raw
    key = table.row_name[rows].astype(np.int64)
    lost = np.flatnonzero(key < 0)
    if lost.shape[0]:
        mids, inverse = np.unique(raw.st_mid[rows[lost]], return_inverse=True)
        ids = np.array([table.name_id(f"stat#{m}") for m in mids.tolist()], dtype=np.int64)
        key[lost] = ids[inverse.ravel()]
    rank = _repeat_rank(owner, key)
    repeats = np.flatnonzero(rank > 0)
    if not repeats.shape[0]:
        return key
    # Some producers repeat a name on every event (JAX's `_src`): label each (key, rank) once.
    width = int(rank.max()) + 1
    combos, inverse = np.unique(key[repeats] * width + rank[repeats], return_inverse=True)
    labels = [table.name_id(f"{table.names[c // width]} ({c % width + 1})") for c in combos.tolist()]
    key[repeats] = np.asarray(labels, dtype=np.int64)[inverse.ravel()]
    return key


def _repeat_rank(owner: np.ndarray, key: np.ndarray) -> np.ndarray:
    """How many earlier rows of the same event have the same key (`owner` non-decreasing).

    An event's rows are one run, so where no event has more than SHIFTED_MAX_STATS rows, row j's
    rank is the sum over d = 1 … longest - 1 of [owner[j-d] = owner[j] and key[j-d] = key[j]]:
    one vectorized comparison per d (events carry a handful of stats: 4-6, at most 9, in the
    JAX CPU capture, where this takes a quarter of the time of the sort below). Otherwise rows
    sorted stably by key keep their event order within a key, so each (key, event) group is one
    run; a batch names few distinct keys, so they are numbered densely and sorted as 16-bit
    integers (numpy's stable sort of those is a radix sort, linear in the rows).
    """
    n = owner.shape[0]
    rank = np.zeros(n, dtype=np.int64)
    if n < 2:
        return rank
    ends = np.flatnonzero(owner[1:] != owner[:-1])
    longest = int(np.diff(ends, prepend=-1, append=n - 1).max())
    if longest <= SHIFTED_MAX_STATS:
        for d in range(1, longest):
            same = owner[d:] == owner[:-d]
            same &= key[d:] == key[:-d]
            rank[d:] += same
        return rank
    # Only rows of events with two stats or more can repeat a key.
    shared = np.zeros(n, dtype=bool)
    shared[1:] = owner[1:] == owner[:-1]
    shared[:-1] |= shared[1:]
    rows = np.flatnonzero(shared)
    if not rows.shape[0]:
        return rank
    key, owner = key[rows], owner[rows]
    present = np.zeros(int(key.max()) + 1, dtype=np.int64)
    present[key] = 1
    dense = (np.cumsum(present) - 1)[key]
    order = np.argsort(dense.astype(np.uint16 if present.sum() <= 1 << 16 else np.int64), kind="stable")
    sorted_key, sorted_owner = dense[order], owner[order]
    m = rows.shape[0]
    new_group = np.ones(m, dtype=bool)
    new_group[1:] = (sorted_key[1:] != sorted_key[:-1]) | (sorted_owner[1:] != sorted_owner[:-1])
    start = np.maximum.accumulate(np.where(new_group, np.arange(m), 0))
    rank[rows[order]] = np.arange(m) - start
    return rank
