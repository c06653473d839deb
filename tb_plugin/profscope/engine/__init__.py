"""Columnar trace store, on-disk cache, level-of-detail tiles and whole-trace queries."""
