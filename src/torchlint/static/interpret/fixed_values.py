"""Values the code alone fixes: computed from literals and deterministic NumPy/torch/math calls (a
coordinate grid, an `arange` of a literal size) in the function itself, so they are the same on every
call. A mask of such values selects the same elements each time: a count of it is no evidence of a 0
that the data could bring (code whose fixed count were 0 would fail on its first run)."""

from __future__ import annotations

import libcst as cst

from torchlint.static.interpret.context import FileContext

_MODULES = ("numpy.", "torch.", "math.")
_RANDOM = ("numpy.random.", "torch.rand", "torch.normal", "torch.bernoulli", "torch.multinomial",
           "torch.poisson", "torch.distributions.")
_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)


def is_fixed(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """Whether ``node`` (in the function being walked) depends on nothing but literals and
    deterministic library calls, through the function's own single-target assignments."""
    if not ctx.enclosing:
        return False
    return _fixed(ctx, node, ctx.assignments(ctx.enclosing[-1]), set())


def _fixed(ctx: FileContext, node, assigned: dict[str, list], seen: set[str]) -> bool:
    if isinstance(node, _LITERALS):
        return True
    if isinstance(node, cst.Name):
        if node.value in ("True", "False", "None"):
            return True
        values = assigned.get(node.value)
        if not values or node.value in seen:
            return False  # a parameter, a loop variable, a global: not known to be fixed
        seen.add(node.value)
        return all(value is not None and _fixed(ctx, value, assigned, seen) for value in values)
    if isinstance(node, cst.Attribute):
        qual = ctx.qualify(node)
        return qual is not None and qual.startswith(_MODULES)  # `np.pi`, `np.float32`
    if isinstance(node, (cst.BinaryOperation, cst.BooleanOperation)):
        return _fixed(ctx, node.left, assigned, seen) and _fixed(ctx, node.right, assigned, seen)
    if isinstance(node, cst.UnaryOperation):
        return _fixed(ctx, node.expression, assigned, seen)
    if isinstance(node, cst.Comparison):
        return _fixed(ctx, node.left, assigned, seen) and all(
            _fixed(ctx, target.comparator, assigned, seen) for target in node.comparisons)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(_fixed(ctx, element.value, assigned, seen) for element in node.elements)
    if isinstance(node, cst.Subscript):
        return _fixed(ctx, node.value, assigned, seen) and all(
            _fixed_slice(ctx, element.slice, assigned, seen) for element in node.slice)
    if isinstance(node, cst.Call):
        return _fixed_callee(ctx, node.func, assigned, seen) and all(
            _fixed(ctx, arg.value, assigned, seen) for arg in node.args)
    return False


def _fixed_slice(ctx: FileContext, part, assigned: dict[str, list], seen: set[str]) -> bool:
    if isinstance(part, cst.Index):
        return _fixed(ctx, part.value, assigned, seen)
    return all(bound is None or _fixed(ctx, bound, assigned, seen) for bound in (part.lower, part.upper, part.step))


def _fixed_callee(ctx: FileContext, func, assigned: dict[str, list], seen: set[str]) -> bool:
    """A deterministic library function (`np.sqrt`, `torch.arange`), or a method of a fixed value."""
    qual = ctx.qualify(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
    if qual is not None:
        return qual.startswith(_MODULES) and not qual.startswith(_RANDOM)
    return isinstance(func, cst.Attribute) and _fixed(ctx, func.value, assigned, seen)
