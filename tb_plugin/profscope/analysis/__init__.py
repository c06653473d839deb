"""What several tools share about a host's trace, below every tool (no tool imports another): what each
event is (`events`), steps (`steps`), interval sets, the time breakdown, device idle time, launch delays,
op tables, the allocator's `[memory]` events and peak (`memory`), an XPlane's allocator events and
peak (`memory_xplane`), each device's allocator records, their pairs and peaks (`memory_records`,
`memory_xplane_records`, `memory_pairing`, `memory_peaks`), one host's analysis (`host`) and its
records (`results`, `answers`), and the one shape of every tool's findings (`findings`). Tools reach
a host's classified events through `HostContext.host_events`."""
