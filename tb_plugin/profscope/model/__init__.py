"""The columnar trace model readers fill (`TraceBuilder` -> `Trace`) and its spilling to files past an
ingest's memory budget."""
