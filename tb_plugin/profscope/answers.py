"""The base of every JSON answer: response shapes are declared once, as `msgspec.Struct`s.

Routes return an `Answer` (or a plain dict while a shape is still built by older code); the plugin
encodes it with msgspec. The TypeScript types of `frontend/src/api/` are generated from the JSON
Schema of the declared answers (`profscope.answer_schema`), and tests/test_answer_types.py fails while
the committed schema is stale, so the Python and TypeScript sides cannot drift apart.
Fields that are sometimes absent are `UNSET` and left out of the JSON, never sent as null.
"""

from __future__ import annotations

from typing import Any

import msgspec

UNSET = msgspec.UNSET
UnsetType = msgspec.UnsetType


class Answer(msgspec.Struct, forbid_unknown_fields=True):
    """Base of the answers' Structs (unknown fields refused when decoding). msgspec applies
    `kw_only` to the fields of the class that sets it, so a subclass that puts a defaulted field
    before required ones (to keep today's JSON order) sets `kw_only=True` itself."""


_encoder = msgspec.json.Encoder()


def encode(answer: Any) -> bytes:
    """JSON bytes of an answer (a Struct, or builtins containing Structs)."""
    return _encoder.encode(answer)
