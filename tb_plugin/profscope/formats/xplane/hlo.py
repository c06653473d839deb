"""Framework op and source line of HLO instructions, from the HLO protos an XSpace carries.

GPU kernels name their HLO op (`hlo_op`) and module (`program_id`), not the framework op that
produced it; like XProf, we look the instruction up in the module's HloProto (stored as the
"Hlo Proto" stat of the /host:metadata plane's event metadata, keyed by program id) and read its
OpMetadata. Only the few fields needed are decoded, with the bulk scanner
(field numbers from xla/service/hlo.proto and xla/xla_data.proto).

Program ids: the metadata plane keys each HloProto by its event metadata id, a signed int64, and
that is the key everywhere here (`hlo_protos`, the trace attachments "hlo/<id>.pb", `HloModules`).
Events carry the id as the unsigned `program_id` stat, so ids from 2**63 up (TPU programs are
keyed by a fingerprint) go through `signed_program_id` before a lookup.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from profscope.formats.common import wire
from profscope.formats.xplane.decode import BYTES, SpaceIndex, text

METADATA_PLANE = "/host:metadata"
HLO_PROTO_STAT = "Hlo Proto"
# The trace attachment holding one program's serialized HloProto: "hlo/<signed program id>.pb".
ATTACHMENT_PREFIX, ATTACHMENT_SUFFIX = "hlo/", ".pb"


def signed_program_id(program_id: int) -> int:
    """A program id as the signed int64 the HloProtos are keyed by (events say it unsigned)."""
    return program_id - (1 << 64) if program_id >= 1 << 63 else program_id


def attachment_name(program_id: int) -> str:
    """The trace attachment that holds the HloProto of `program_id` (signed or unsigned)."""
    return f"{ATTACHMENT_PREFIX}{signed_program_id(program_id)}{ATTACHMENT_SUFFIX}"


class AttachedProtos(Mapping[int, bytes]):
    """The HloProtos among a trace's attachments, by signed program id; each one is read from
    the attachments when looked up, so a lazily read cache entry stays unread until needed."""

    def __init__(self, attachments: Mapping[str, bytes]) -> None:
        self._attachments = attachments
        self._names = {
            int(name[len(ATTACHMENT_PREFIX) : -len(ATTACHMENT_SUFFIX)]): name
            for name in attachments
            if name.startswith(ATTACHMENT_PREFIX) and name.endswith(ATTACHMENT_SUFFIX)
        }

    def __getitem__(self, program_id: int) -> bytes:
        return self._attachments[self._names[program_id]]

    def __iter__(self) -> Iterator[int]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def hlo_protos(space: SpaceIndex) -> dict[int, bytes]:
    """Serialized HloProto per program id (as int64) from the metadata plane."""
    out: dict[int, bytes] = {}
    for plane in space.planes:
        if plane.name != METADATA_PLANE:
            continue
        for mid, stats in plane.event_meta_stats.items():
            for smid, kind, value in stats:
                if kind == BYTES and plane.stat_names.get(smid) == HLO_PROTO_STAT:
                    out[mid] = value
    return out


def _children(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, number: int) -> tuple[np.ndarray, ...]:
    """(owner, start, end) of every occurrence of LEN field `number` in the given messages."""
    owner, start, length = wire.scan(buf, starts, ends, {number: wire.LEN}, repeated=(number,)).blocks[number]
    return owner, start, start + length


class InstructionMetadata:
    """Framework op and source line of HLO instructions by (program id, instruction name).

    The framework op is "op_name:op_type" as XProf builds it ("op_name" alone without a type);
    either part of an answer is "" when the instruction's metadata does not say. The programs'
    instruction names are decoded once, on the first lookup, and an instruction's metadata when it
    is first asked for.
    """

    def __init__(self, protos: Mapping[int, bytes]) -> None:
        self.protos = protos
        self._indexed: set[int] = set()
        self._at: dict[tuple[int, str], int] = {}  # the instruction's row in the arrays below
        self._blob = b""
        self._meta: tuple[np.ndarray, ...] = ()
        self._found: dict[tuple[int, str], tuple[str, str]] = {}

    def resolve(self, wanted: set[tuple[int, str]]) -> dict[tuple[int, str], tuple[str, str]]:
        """{(program id, instruction name): (framework op, "file:line")} for the wanted
        instructions that the programs hold."""
        programs = sorted({p for p, _ in wanted if p in self.protos and p not in self._indexed})
        if programs:
            self._index(programs)
        out: dict[tuple[int, str], tuple[str, str]] = {}
        for key in wanted:
            found = self._found.get(key)
            if found is None and key in self._at:
                found = self._found[key] = _metadata(self._blob, [int(c[self._at[key]]) for c in self._meta])
            if found is not None:
                out[key] = found
        return out

    def _index(self, programs: list[int]) -> None:
        self._indexed.update(programs)
        protos = self.protos
        blob = b"".join(protos[p] for p in programs)
        buf = wire.padded(blob)
        sizes = np.array([len(protos[p]) for p in programs], dtype=np.int64)
        ends = np.cumsum(sizes)
        starts = ends - sizes
        _, mod_s, mod_e = _children(buf, starts, ends, 1)  # HloProto.hlo_module
        mod_program = np.searchsorted(ends, mod_s, side="right")
        comp_owner, comp_s, comp_e = _children(buf, mod_s, mod_e, 3)  # HloModuleProto.computations
        ins_owner, ins_s, ins_e = _children(buf, comp_s, comp_e, 2)  # HloComputationProto.instructions
        program_of = mod_program[comp_owner[ins_owner]]
        ins = wire.scan(buf, ins_s, ins_e, {1: wire.LEN, 7: wire.LEN})  # name, metadata
        name_s, name_l = ins.text_range(1)
        meta_s, meta_l = ins.text_range(7)
        has_meta = meta_l >= 0
        meta = wire.scan(
            buf,
            np.where(has_meta, meta_s, 0),
            np.where(has_meta, meta_s + meta_l, 0),
            {1: wire.LEN, 2: wire.LEN, 3: wire.LEN, 4: wire.VARINT},
        )
        type_s, type_l = meta.text_range(1)
        opn_s, opn_l = meta.text_range(2)
        file_s, file_l = meta.text_range(3)
        line = meta.signed(4)
        base = len(self._blob)
        self._blob += blob
        columns = (opn_s, opn_l, type_s, type_l, file_s, file_l, line)
        shift = (base, 0, base, 0, base, 0, 0)
        new = tuple(c.astype(np.int64) + k for c, k in zip(columns, shift, strict=True))
        first = self._meta[0].shape[0] if self._meta else 0
        self._meta = (
            tuple(np.concatenate([old, c]) for old, c in zip(self._meta, new, strict=True))
            if self._meta
            else new
        )
        at = self._at
        rows = np.flatnonzero((name_l >= 0) & ~ins.broken)
        for i, p, a, n in zip(
            rows.tolist(),
            program_of[rows].tolist(),
            name_s[rows].tolist(),
            name_l[rows].tolist(),
            strict=True,
        ):
            at.setdefault((programs[p], text(blob[a : a + n])), first + i)  # the first of a name is the one


def _metadata(blob: bytes, ranges: list[int]) -> tuple[str, str]:
    """(framework op, "file:line") of one instruction from its metadata's text ranges."""
    opn_s, opn_l, type_s, type_l, file_s, file_l, line = ranges
    op_name = text(blob[opn_s : opn_s + opn_l]) if opn_l > 0 else ""
    op_type = text(blob[type_s : type_s + type_l]) if type_l > 0 else ""
    framework = f"{op_name}:{op_type}" if op_name and op_type else op_name
    source = ""
    if file_l > 0:
        source = text(blob[file_s : file_s + file_l])
        if line > 0:
            source = f"{source}:{line}"
    return framework, source
