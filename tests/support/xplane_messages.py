"""XSpace messages for the tests: the message class protobuf builds from the reference schema
(tests/data/xplane/xspace_reference.textproto), which decodes real files independently of the reader
and builds synthetic ones, and hand-written wire bytes for what protobuf will not write (the encoder
of the benchmarks, `benchmarks/proto_bytes.py`, so that there is one)."""

from __future__ import annotations

import sys
from functools import cache

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format

from tests.support import REPO

sys.path.append(str(REPO / "benchmarks"))
from proto_bytes import field, varint  # noqa: E402

__all__ = ["field", "space_class", "varint"]


@cache
def space_class() -> type:
    """The `xspace_reference.XSpace` message class."""
    fdp = text_format.Parse(
        (REPO / "tests" / "data" / "xplane" / "xspace_reference.textproto").read_text(),
        descriptor_pb2.FileDescriptorProto(),
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("xspace_reference.XSpace"))
