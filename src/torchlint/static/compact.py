"""Shrink a syntax tree that is kept after its file's check: one shared object per distinct token.

A project module's summary keeps its LibCST tree alive (its functions' bodies are walked again with
the facts of each call site), and the trees of the summaries held are most of the live memory over
a big project (measured on the torch package's ``_inductor``: 301 of 370 MB traced). Four nodes in
ten are whitespace, and most of the rest is punctuation (commas, dots, brackets, colons, newlines,
operators): the same few values over and over, as are the identifiers' strings. ``share_tokens``
makes every such node that equals an earlier one (same type, same fields) the earlier object, and
each name's string the interned one, in place, before the tree is walked: the code it prints is
unchanged and no node the analysis points at (names, calls, statements) is replaced, so positions
of findings stay exact.
"""

from __future__ import annotations

from sys import intern
from typing import Any

import libcst as cst

from torchlint.static.traverse import field_names

# syntax that carries no meaning of its own: never the node of a value, a finding or a fix
_TOKENS: frozenset[type] = frozenset({
    cst.SimpleWhitespace, cst.Newline, cst.TrailingWhitespace, cst.ParenthesizedWhitespace, cst.EmptyLine,
    cst.Comma, cst.Dot, cst.Colon, cst.Semicolon, cst.AssignEqual, cst.LeftParen, cst.RightParen,
    cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace,
    cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power,
    cst.MatrixMultiply, cst.BitAnd, cst.BitOr, cst.BitXor, cst.LeftShift, cst.RightShift,
    cst.Equal, cst.NotEqual, cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual,
    cst.Is, cst.IsNot, cst.In, cst.NotIn, cst.And, cst.Or, cst.Not, cst.Minus, cst.Plus, cst.BitInvert,
    cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.DivideAssign, cst.ImportStar,
})


def share_tokens(module: cst.Module) -> cst.Module:
    """``module`` with equal token nodes made one object and its names' strings interned (changed in
    place; returned for chaining). A tree too deep to recurse over is left partly shared, which is as
    correct."""
    shared: dict[tuple, Any] = {}
    setattr_ = object.__setattr__
    node_type, name_type = cst.CSTNode, cst.Name

    def visit(node: Any) -> Any:
        kind = type(node)
        names = field_names(kind)
        for name in names:
            value = getattr(node, name)
            if isinstance(value, node_type):
                new = visit(value)
                if new is not value:
                    setattr_(node, name, new)
            elif type(value) is tuple and value and isinstance(value[0], node_type):
                items = [visit(item) for item in value]
                if any(a is not b for a, b in zip(items, value, strict=True)):
                    setattr_(node, name, tuple(items))
        if kind not in _TOKENS:
            if kind is name_type:  # one string object per identifier (`self`, `x`, `torch`, ...)
                setattr_(node, "value", intern(node.value))
            return node
        key = (kind, *[id(v) if isinstance(v, node_type) else v for v in map(node.__getattribute__, names)])
        try:
            return shared.setdefault(key, node)
        except TypeError:  # an unhashable field
            return node

    try:
        visit(module)
    except RecursionError:
        pass
    return module

