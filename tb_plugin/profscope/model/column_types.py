"""The dtype of every array column of a `Trace`: what the cache stores and spilled builders write
(its own module so the model, the spill path and the store share it without an import cycle)."""

from __future__ import annotations

import numpy as np

COLUMN_DTYPES: dict[str, type] = {
    "ev_start_ps": np.int64,
    "ev_dur_ps": np.int64,
    "ev_track": np.int32,
    "ev_depth": np.int32,
    "ev_name": np.int32,
    "ev_cat": np.int32,
    "ev_args": np.int64,
    "args_off": np.int64,
    "args_event": np.int64,
    "args_blob": np.uint8,
    "args_frag_off": np.int64,
    "args_frag_blob": np.uint8,
    "flow_src": np.int64,
    "flow_dst": np.int64,
    "flow_name": np.int32,
    "ctr_track": np.int32,
    "ctr_time_ps": np.int64,
    "ctr_value": np.float64,
}
