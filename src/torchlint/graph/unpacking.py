"""`b, t, d = x.shape` of a 4-dim x: Python raises at that line, but fx turns the unpacking into three
indexings that succeed, and the error would surface layers later. The source line says whether the
sizes are unpacked, and into how many names."""

from __future__ import annotations

import ast
import linecache
import operator

import torch


def unpacked(node: torch.fx.Node) -> bool:
    """A node (`x.shape`, `x.size()`) read only by indexings with constant positions, as unpacking is traced."""
    users = list(node.users)
    return bool(users) and all(u.target is operator.getitem and isinstance(u.args[1], int) for u in users)


def unpacking_error(size: torch.Size, file: str | None, line: int | None) -> ValueError | None:
    """Python's error for the statement at ``file:line`` when it unpacks ``size`` into fewer names."""
    names = _unpacked_names(file, line) if file is not None and line is not None else None
    if names is not None and names < len(size):
        return ValueError(f"too many values to unpack (expected {names}, got {len(size)})")
    return None


def _unpacked_names(file: str, line: int) -> int | None:
    """How many plain names the statement at ``file:line`` unpacks `.shape` / `.size()` into, if it does."""
    text = linecache.getline(file, line).strip()
    try:
        statement = ast.parse(text).body[0] if text else None
    except SyntaxError:
        return None
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return None
    target, value = statement.targets[0], statement.value
    if not isinstance(target, (ast.Tuple, ast.List)) or not all(isinstance(e, ast.Name) for e in target.elts):
        return None
    sizes = (isinstance(value, ast.Attribute) and value.attr == "shape") or (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "size"
        and not value.args and not value.keywords)
    return len(target.elts) if sizes else None
