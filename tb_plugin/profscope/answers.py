"""The base of every JSON answer: response shapes are declared once, as `msgspec.Struct`s.

Routes return an `Answer` (or a plain dict while a shape is still built by older code); the plugin
encodes it with msgspec. `frontend/src/api/` types are checked against `msgspec.json.schema` of the
declared answers (tests/test_answer_types.py), so the Python and TypeScript sides cannot drift apart.
Fields that are sometimes absent are `UNSET` and left out of the JSON, never sent as null.
"""

from __future__ import annotations

from typing import Any

import msgspec

UNSET = msgspec.UNSET
UnsetType = msgspec.UnsetType


class Answer(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Base of the answers' Structs (keyword-only fields, unknown fields refused when decoding)."""


_encoder = msgspec.json.Encoder()


def encode(answer: Any) -> bytes:
    """JSON bytes of an answer (a Struct, or builtins containing Structs)."""
    return _encoder.encode(answer)
