"""Analyses over the columnar model and the XLA runtime logs: one analysis per module."""
