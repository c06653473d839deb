"""`assert_same_trace`: two readings of one file give the very same `Trace`, field by field."""

from __future__ import annotations

import dataclasses

import numpy as np

from profscope.model.columns import Trace


def assert_same_trace(a: Trace, b: Trace) -> None:
    for field in dataclasses.fields(Trace):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), field.name
        elif field.name == "attachments":
            assert dict(x) == dict(y)
        else:
            assert x == y, field.name
