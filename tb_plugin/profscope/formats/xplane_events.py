"""The decoded events of one XSpace as the reader placed them, for code that builds on them.

`xplane.read` decodes the file, puts every event on the timeline and then hands a `DecodedEvents`
to the code that derives more from the same events (the derived lines of `xplane_derived`), so that
code depends on this documented object, never on the reader's internals. The per-event columns
are indexed by event row: the row order of the decoded columns (`xplane_decode.RawSpace`), which
keeps each line's events together and lines in plane order.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from profscope.formats.xplane_decode import INT64, REF, UINT64, RawPlane
from profscope.formats.xplane_stats import StatTable


@dataclasses.dataclass(frozen=True, slots=True)
class DecodedEvents:
    """Every event of one XSpace with its time, stats and place on the timeline."""

    planes: list[RawPlane]
    """The XSpace's planes, indexed by `RawPlane.index`: names, lines (each line's events are the
    rows `first_event` … `first_event + num_events - 1`), stat metadata names and the stats of
    each event metadata."""
    stats: StatTable
    """Every event stat, one row each, with its name resolved to an id into `stats.names`; text
    values found later are interned there too (`stats.name_id`)."""
    stat_event: np.ndarray
    """int64 per stat row: the event row that carries the stat."""
    start_ps: np.ndarray
    """int64 per event: start in ps from the trace's zero, the clock of the timeline."""
    duration_ps: np.ndarray
    """int64 per event: duration in ps (0 for instants)."""
    metadata_row: np.ndarray
    """int64 per event: its event metadata, as a row of `metadata_keys`; -1 when the plane lacks
    it (so a lookup table over the rows needs one extra last entry for "none")."""
    metadata_keys: list[tuple[int, int]]
    """Per metadata row: (plane index, event metadata id)."""
    track: np.ndarray
    """int32 per event: the builder track id of its box, -1 when it has none (counter samples,
    dropped events)."""
    section: np.ndarray
    """int32 per event: the builder section id of its box, -1 when it has none."""
    on_timeline: np.ndarray
    """bool per event: the event was added to the builder as a box."""
    sections: dict[int, int]
    """Plane index → builder section id, for the planes that have one."""
    streams: dict[int, list[tuple[int, int]]]
    """GPU section id → its streams as (stream number, builder track id)."""
    launches: np.ndarray
    """int64 (n, 2): (host event row, device event row) of each kernel launch linked by the
    CUPTI/ROCm correlation id."""
    hlo_protos: dict[int, bytes]
    """Serialized HloProto per program id, from the metadata plane (empty when the file has none)."""

    @property
    def num_events(self) -> int:
        return int(self.start_ps.shape[0])

    def stat_text(self, name: str) -> np.ndarray:
        """int32 per event: its stat `name` as text, an id into `stats.names`; -1 for none or "".

        The event's own stat wins over the one its metadata carries.
        """
        st = self.stats
        meta = np.full(len(self.metadata_keys) + 1, -1, dtype=np.int32)
        for row, (plane_index, mid) in enumerate(self.metadata_keys):
            plane = self.planes[plane_index]
            for smid, kind, value in plane.event_meta_stats.get(mid, ()):
                if plane.stat_names.get(smid) == name:
                    rendered = plane.stat_names.get(value) if kind == REF else value
                    if isinstance(rendered, bytes):
                        rendered = rendered.decode("utf-8", errors="replace")
                    if rendered is not None and rendered != "":
                        meta[row] = st.name_id(str(rendered))
        column = meta[self.metadata_row]
        rows = st.rows(name)
        ids = st.text_ids(rows)
        has = ids >= 0
        column[self.stat_event[rows[has]]] = ids[has]
        empty = st.name_ids.get("")
        if empty is not None:
            column[column == empty] = -1
        return column

    def stat_int(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(int64 value, valid) per event of integer stat `name`, the event's own over its metadata's."""
        meta_value = np.zeros(len(self.metadata_keys) + 1, dtype=np.int64)
        meta_valid = np.zeros(len(self.metadata_keys) + 1, dtype=bool)
        for row, (plane_index, mid) in enumerate(self.metadata_keys):
            plane = self.planes[plane_index]
            for smid, kind, value in plane.event_meta_stats.get(mid, ()):
                if plane.stat_names.get(smid) == name and kind in (INT64, UINT64):
                    meta_value[row] = value if value < 1 << 63 else value - (1 << 64)
                    meta_valid[row] = True
        values = meta_value[self.metadata_row]
        valid = meta_valid[self.metadata_row]
        rows = self.stats.rows(name)
        ints, ok = self.stats.ints(rows)
        values[self.stat_event[rows[ok]]] = ints[ok]
        valid[self.stat_event[rows[ok]]] = True
        return values, valid

    def has_stat(self, name: str) -> np.ndarray:
        """bool per event: it carries stat `name` itself or through its metadata."""
        meta = np.zeros(len(self.metadata_keys) + 1, dtype=bool)
        for row, (plane_index, mid) in enumerate(self.metadata_keys):
            plane = self.planes[plane_index]
            meta[row] = any(
                plane.stat_names.get(smid) == name for smid, _, _ in plane.event_meta_stats.get(mid, ())
            )
        mask = meta[self.metadata_row]
        mask[self.stat_event[self.stats.rows(name)]] = True
        return mask
