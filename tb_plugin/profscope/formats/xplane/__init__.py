"""XPlane (`.xplane.pb`) reader: `reader.read` walks the planes into columns, derived lines, flows and the
attached HloProtos."""
