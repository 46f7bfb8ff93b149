"""Plain per-round reference implementations, for verification and benchmarks (not for speed)."""
