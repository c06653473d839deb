"""Chrome trace / Kineto JSON(.gz) reader: `reader.read` drives scanning, the parallel split, columns,
tracks, flows and pairing."""
