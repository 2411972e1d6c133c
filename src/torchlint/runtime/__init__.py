"""Depth 3: real steps with cheap checks; the failing step is replayed to name the op."""
