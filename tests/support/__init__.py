"""What several test modules share: the repository's paths and helpers (`support.overview`, `same_trace`,
`reading_limits`, `xplane_messages`)."""

import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA_DIR = REPO / "tests" / "data"
DEMO_LOGDIR = REPO / "demo" / "logdir"
