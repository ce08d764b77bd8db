"""Benchmarks: run with `bash scripts/bench.sh` (not part of the test suite)."""
