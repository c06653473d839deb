"""PyTorch/XLA text logs: metrics reports, `PT_XLA_DEBUG` output and graph dumps, read into dataclasses."""
