"""Reproducible measurements; each module runs on its own (``python -m benchmarks.<name>``)."""
