"""Depth 1: the LibCST static checker."""
