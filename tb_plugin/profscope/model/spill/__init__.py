"""A `TraceBuilder` over its memory budget, one job a module: the budget and when to spill (`budget`),
the record and column files it spills to (`files`), memory handed back to the system (`page_cache`),
attachments kept in files (`attachments`), then the trace sorted, laid out and finalized from disk
(`sort`, `layout`, `finalize`) and the writer that feeds them (`writer`)."""
