"""Getting a file into the cache: single-flight ingest jobs in child processes (`manager`), their memory
budget, template processes, locks, and Dask fan-out."""
