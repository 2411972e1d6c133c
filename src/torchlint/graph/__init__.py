"""Depth 2: trace a model with torch.fx and propagate symbolic shapes over fake tensors.

Needs the `torch` extra; nothing here is imported by the static checker.
"""
